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
}

export interface Command {
  /** e.g. `spawn`, or `lease list` for a subcommand. */
  name: string;
  summary: string;
  usage: string;
  run(args: string[], io: CliIO): Promise<number>;
}

export interface ParsedArgs {
  flags: Map<string, string[]>;
  bools: Set<string>;
  positionals: string[];
  /** Everything after `--`. */
  rest: string[];
}

/**
 * A strict flag parser: an unknown flag is an error that names it and the nearest known one.
 * `valued` flags take a value (`--x v` or `--x=v`) and may repeat; `booleans` take none.
 */
export function parseArgs(args: string[], spec: { valued?: string[]; booleans?: string[] }): ParsedArgs {
  const valued = new Set(spec.valued ?? []);
  const booleans = new Set(spec.booleans ?? []);
  const out: ParsedArgs = { flags: new Map(), bools: new Set(), positionals: [], rest: [] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      out.rest = args.slice(i + 1);
      break;
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq === -1 ? a.slice(2) : a.slice(2, eq);
      if (booleans.has(name) && eq === -1) {
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
      const known = [...valued, ...booleans];
      const near = nearest(name, known);
      throw new BrigError('invalid_input', `unknown flag --${name}`, {
        hint: near ? `Did you mean --${near}?` : `Known flags: ${known.map((k) => `--${k}`).join(' ') || 'none'}`,
      });
    }
    out.positionals.push(a);
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
