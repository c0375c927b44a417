/**
 * The thin commands: the ones `brig` (dist/cli/brig.cjs, bin.ts) runs from one CommonJS file
 * when a daemon answers — a read of the daemon's answer, printed. Everything else, and these
 * too without a daemon, goes to the full CLI (main.js).
 *
 * Why a second entry: Node's ES module loader costs about a fifth of Node's own start-up before
 * the first line of brig runs, and each module it resolves (a URL, a file handle, a compile)
 * a little more; a thin command's forty modules as one CommonJS file cost neither
 * (docs/performance.md, "The thin CLI"). The bundle is made by `make build`
 * (scripts/bundle-cli.mjs) from the built dist/: these commands' modules and what they import
 * statically are inside it; every other module it could reach stays dist/'s own ES module.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApiClient } from '../light.js';

/** The command (as typed) → its module under dist/cli/commands/ (registry.ts loads the same). */
export const THIN_COMMANDS: Readonly<Record<string, string>> = { list: 'list', wait: 'wait', 'ref read': 'ref-read' };

/** True when argv names a thin command and asks for no help (help is rendered by the full CLI). */
export function isThinCommand(argv: readonly string[]): boolean {
  const dash = argv.indexOf('--');
  const own = dash === -1 ? argv : argv.slice(0, dash);
  if (own.some((a) => a === '--help' || a === '-h')) return false;
  // The longest key first, as the CLI resolves it (`ref read` before `ref`).
  for (let n = Math.min(2, argv.length); n >= 1; n--) {
    const key = argv.slice(0, n).join(' ');
    if (Object.hasOwn(THIN_COMMANDS, key)) return true;
  }
  return false;
}

/**
 * The daemon's client when a daemon answers on its socket (its health probe, ≤ 2 s), else
 * undefined: a missing socket, a stale socket file of a daemon that died (refused), or one that
 * does not answer in time — the command then goes to the full CLI, which reads the home's
 * files. The probe that chooses the path is the only one: the command is handed the client
 * (CliIO.daemon) and does not probe again. Never throws.
 */
export async function daemonAnswering(socketPath: string): Promise<ApiClient | undefined> {
  const api = new ApiClient(socketPath, 'cli');
  return (await api.probe()) ? api : undefined;
}

/** The entry's own directory (dist/cli/ for brig.cjs and bin.js, src/cli/ for bin.ts), through any bin symlink; undefined when it cannot be resolved. */
export function entryDir(entry: string | undefined = process.argv[1]): string | undefined {
  try {
    return entry ? path.dirname(fs.realpathSync(entry)) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `brig --version` without loading the full CLI: package.json's version, two directories above
 * the entry (dist/cli/brig.cjs, dist/cli/bin.js and src/cli/bin.ts alike, through any bin
 * symlink). Undefined when it cannot be read: the full CLI's `version` answers then.
 */
export function thinVersion(entry: string | undefined = process.argv[1]): string | undefined {
  const dir = entryDir(entry);
  if (dir === undefined) return undefined;
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, '..', '..', 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
    return pkg.name === 'brig' && typeof pkg.version === 'string' ? pkg.version : undefined;
  } catch {
    return undefined;
  }
}
