import type { ApiClient } from '../light.js';
import { BrigError } from '../util/errors.js';
import { nearest } from '../util/nearest.js';

export { nearest, editDistance } from '../util/nearest.js';

/** What a command gets: its arguments and where to write. */
export interface CliIO {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  /** True when stdout is a terminal (live progress is drawn only then). */
  isTTY: boolean;
  /** The terminal's width, when stdout is one: a live line is cut to it so `\r` redraws it. */
  columns?: number;
  /**
   * Aborted when stdout's reader has gone (`brig events | head -1`): stop producing output.
   * Writes after it are dropped, never thrown.
   */
  hangup?: AbortSignal;
  /**
   * The daemon, when the entry already had its answer (brig.cjs's thin path, bin.ts: the health
   * probe that chose the path): openBrig uses it as it is, without a second probe.
   */
  daemon?: ApiClient;
}

/**
 * One flag of a command, declared once: the parser, `--help` and the completion scripts
 * all read this list, so what a command accepts and what it documents cannot drift.
 */
export interface FlagSpec {
  /** Without the dashes: `max-steps`. */
  name: string;
  /** The value's placeholder (`FILE`, `N`, `SECONDS`); absent for a boolean flag. */
  value?: string;
  /** One line, no trailing period needed. */
  description: string;
  /** May be given more than once (`--cap A --cap B`). */
  repeatable?: boolean;
  /** The closed set of values, when there is one (completion offers them). */
  choices?: readonly string[];
  /** A one-letter alias (`q` for `-q`); any other single-dash flag is refused. */
  short?: string;
}

export interface Command {
  /** e.g. `spawn`, or `lease list` for a subcommand. */
  name: string;
  summary: string;
  usage: string;
  flags: FlagSpec[];
  /** Complete command lines a user can paste; at least one. */
  examples: string[];
  run(args: string[], io: CliIO): Promise<number>;
}

/** The flag nearly every command has. */
export const JSON_FLAG: FlagSpec = { name: 'json', description: 'print one JSON document instead of text' };

export interface ParsedArgs {
  flags: Map<string, string[]>;
  bools: Set<string>;
  positionals: string[];
  /** Everything after `--`. */
  rest: string[];
}

/** The older spelling of a flag spec: names of valued and of boolean flags. */
export interface FlagNames {
  valued?: string[];
  booleans?: string[];
}

function namesOf(spec: FlagSpec[] | FlagNames): { valued: Set<string>; booleans: Set<string>; shorts: Map<string, string> } {
  if (!Array.isArray(spec)) return { valued: new Set(spec.valued ?? []), booleans: new Set(spec.booleans ?? []), shorts: new Map() };
  return {
    valued: new Set(spec.filter((f) => f.value !== undefined).map((f) => f.name)),
    booleans: new Set(spec.filter((f) => f.value === undefined).map((f) => f.name)),
    shorts: new Map(spec.filter((f) => f.short !== undefined).map((f) => [f.short!, f.name])),
  };
}

/** A single-dash flag or a cluster of them (`-q`, `-qa`); `-5` and `-` stay arguments. */
const SHORT = /^-[A-Za-z]+$/;

/**
 * A strict flag parser: an unknown flag is an error that names it and the nearest known one.
 * Valued flags take a value (`--x v` or `--x=v`) and may repeat (the last one wins where one
 * is read); boolean flags take none. `--` ends the flags: the rest is passed through as is.
 */
export function parseArgs(args: string[], spec: FlagSpec[] | FlagNames): ParsedArgs {
  const { valued, booleans, shorts } = namesOf(spec);
  const out: ParsedArgs = { flags: new Map(), bools: new Set(), positionals: [], rest: [] };
  for (let i = 0; i < args.length; i++) {
    let a = args[i]!;
    if (a === '--') {
      out.rest = args.slice(i + 1);
      break;
    }
    if (SHORT.test(a)) {
      // `-q` is its long flag; an unknown letter is refused, never taken as an argument.
      const letters = [...a.slice(1)];
      const longs = letters.map((l) => shorts.get(l));
      const unknown = letters.find((_, k) => longs[k] === undefined);
      if (unknown !== undefined) {
        const known = [...shorts].map(([l, n]) => `-${l} (--${n})`);
        throw new BrigError('invalid_input', `unknown flag -${unknown}`, {
          hint: `${known.length ? `Short flags here: ${known.join(', ')}. ` : 'This command has no short flags. '}An argument that starts with - goes after --.`,
        });
      }
      if (longs.length > 1 && longs.some((n) => valued.has(n!))) throw new BrigError('invalid_input', `${a}: a flag that takes a value cannot be bundled`, { hint: `Give it alone: -${letters.find((_, k) => valued.has(longs[k]!))} VALUE.` });
      if (longs.length > 1) {
        for (const n of longs) out.bools.add(n!);
        continue;
      }
      a = `--${longs[0]!}`;
    }
    if (!a.startsWith('--')) {
      out.positionals.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq === -1 ? a.slice(2) : a.slice(2, eq);
    if (booleans.has(name)) {
      if (eq !== -1) throw new BrigError('invalid_input', `--${name} takes no value`, { hint: `Write --${name} alone.` });
      out.bools.add(name);
      continue;
    }
    if (valued.has(name)) {
      const v = eq === -1 ? args[++i] : a.slice(eq + 1);
      if (v === undefined) throw new BrigError('invalid_input', `--${name} needs a value`);
      const list = out.flags.get(name) ?? [];
      list.push(v);
      out.flags.set(name, list);
      continue;
    }
    const known = [...valued, ...booleans, 'help'];
    const near = nearest(name, known);
    throw new BrigError('invalid_input', `unknown flag --${name}`, {
      hint: near ? `Did you mean --${near}?` : `Known flags: ${known.map((k) => `--${k}`).join(' ')}`,
    });
  }
  return out;
}

export function flag(p: ParsedArgs, name: string): string | undefined {
  const v = p.flags.get(name);
  return v ? v[v.length - 1] : undefined;
}

export function numberFlag(p: ParsedArgs, name: string): number | undefined {
  const v = flag(p, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new BrigError('invalid_input', `--${name} must be a positive number, got ${JSON.stringify(v)}`);
  return n;
}

/** The flag every list command has: ids only, one a line (for `xargs`). */
export const QUIET_FLAG: FlagSpec = { name: 'quiet', short: 'q', description: 'print only the ids, one a line' };

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86400 } as const;

/**
 * A duration flag in the one syntax every command takes: `90s`, `30m`, `24h`, `7d` (a bare
 * number is in the flag's own unit, as before), returned in `unit`.
 */
export function durationFlag(p: ParsedArgs, name: string, unit: 's' | 'm'): number | undefined {
  const v = flag(p, name);
  if (v === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)([smhd]?)$/.exec(v.trim());
  const seconds = m ? Number(m[1]) * UNIT_SECONDS[(m[2] || unit) as keyof typeof UNIT_SECONDS] : NaN;
  if (!(seconds > 0)) throw new BrigError('invalid_input', `--${name} takes a duration (90s, 30m, 24h, 7d), not ${JSON.stringify(v.slice(0, 40))}`, { hint: `A bare number is ${unit === 's' ? 'seconds' : 'minutes'}: --${name} ${unit === 's' ? '90' : '30'} or --${name} ${unit === 's' ? '90s' : '30m'}.` });
  return seconds / UNIT_SECONDS[unit];
}

export function writeJson(io: CliIO, value: unknown): void {
  io.stdout.write(JSON.stringify(value) + '\n');
}

/** Where a command is listed in `brig --help`. */
export type Section = 'runs' | 'results' | 'host' | 'cli';

export const SECTIONS: { id: Section; title: string }[] = [
  { id: 'runs', title: 'Run children' },
  { id: 'results', title: 'Read results' },
  { id: 'host', title: 'Daemon, host and records' },
  { id: 'cli', title: 'This CLI' },
];

export interface Entry {
  /** The one-line summary `brig --help` shows; the command's own (a test pins them equal). */
  summary: string;
  section: Section;
  load: () => Promise<Command>;
}

/**
 * The command table (cli/registry.ts builds it): what help and completion read. Handed to
 * them as a value, so the commands that list the table do not import the module that lists
 * them.
 */
export interface CommandTable {
  commands: Record<string, Entry>;
  /** Groups: a word that only prefixes subcommands (`brig ref --help` lists them). */
  groups: Record<string, { summary: string; section: Section }>;
}

/** The subcommand keys of a group, sorted (`ref` → `ref grep`, `ref jq`, …). */
export function groupMembers(table: CommandTable, group: string): string[] {
  return Object.keys(table.commands)
    .filter((k) => k.startsWith(`${group} `))
    .sort();
}
