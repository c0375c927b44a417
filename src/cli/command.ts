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

function namesOf(spec: FlagSpec[] | FlagNames): { valued: Set<string>; booleans: Set<string> } {
  if (!Array.isArray(spec)) return { valued: new Set(spec.valued ?? []), booleans: new Set(spec.booleans ?? []) };
  return {
    valued: new Set(spec.filter((f) => f.value !== undefined).map((f) => f.name)),
    booleans: new Set(spec.filter((f) => f.value === undefined).map((f) => f.name)),
  };
}

/**
 * A strict flag parser: an unknown flag is an error that names it and the nearest known one.
 * Valued flags take a value (`--x v` or `--x=v`) and may repeat (the last one wins where one
 * is read); boolean flags take none. `--` ends the flags: the rest is passed through as is.
 */
export function parseArgs(args: string[], spec: FlagSpec[] | FlagNames): ParsedArgs {
  const { valued, booleans } = namesOf(spec);
  const out: ParsedArgs = { flags: new Map(), bools: new Set(), positionals: [], rest: [] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      out.rest = args.slice(i + 1);
      break;
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
