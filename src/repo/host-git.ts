/**
 * The host's git, run for brig with nothing of the host's or the repository's configuration
 * that could run a command.
 *
 * Guarantees: every call is argv (no shell) with an environment built from nothing — no
 * system or global config (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null, HOME nowhere),
 * no prompt, no pager, no editor — and command-line settings that switch off what a
 * repository's own config or a child's tree could otherwise start: hooks (core.hooksPath
 * /dev/null), fsmonitor, attribute files, external diff and textconv drivers; submodules are
 * never recursed into. A child's tree is only ever data to these calls.
 * Threat: a hostile child's tree (a .gitattributes naming a filter or a diff driver, a hook, a
 * symlink, a submodule) making brig run something on the host while it computes the change.
 * Trusts: /usr/bin/git, the operator's own repository at spawn and at apply.
 * Fails: a non-zero exit rejects with git's stderr (bounded) for the caller to turn into a code.
 */
import { execInHelper } from '../util/spawner.js';

export const GIT = '/usr/bin/git';

/** Settings on every call: command-line config is protected config, so safe.directory holds too. */
const SAFE = [
  '-c', 'core.hooksPath=/dev/null',
  '-c', 'core.fsmonitor=false',
  '-c', 'core.attributesFile=/dev/null',
  '-c', 'core.symlinks=true',
  '-c', 'diff.external=',
  '-c', 'submodule.recurse=false',
  '-c', 'protocol.file.allow=always',
  '-c', 'safe.directory=*',
  '-c', 'gc.auto=0',
  '-c', 'maintenance.auto=false',
  '-c', 'advice.detachedHead=false',
  '-c', 'init.defaultBranch=main',
];

export interface GitOptions {
  cwd?: string;
  /** Extra GIT_* variables (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, identities). */
  env?: Record<string, string>;
  maxBuffer?: number;
  timeoutMs?: number;
}

export function gitEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: '/usr/bin:/bin',
    HOME: '/nonexistent',
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_PAGER: 'cat',
    GIT_EDITOR: 'true',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_AUTHOR_NAME: 'brig',
    GIT_AUTHOR_EMAIL: 'brig@localhost',
    GIT_COMMITTER_NAME: 'brig',
    GIT_COMMITTER_EMAIL: 'brig@localhost',
    ...extra,
  };
}

/** Runs git; resolves stdout, rejects with an Error whose message ends with git's last stderr line. */
export async function git(args: readonly string[], o: GitOptions = {}): Promise<string> {
  try {
    const { stdout } = await execInHelper(GIT, [...SAFE, ...args], {
      env: gitEnv(o.env),
      ...(o.cwd ? { cwd: o.cwd } : {}),
      maxBuffer: o.maxBuffer ?? 16 * 1024 * 1024,
      timeout: o.timeoutMs ?? 120_000,
    });
    return stdout;
  } catch (e) {
    const stderr = String((e as { stderr?: string }).stderr ?? '').trim();
    const last = stderr.split('\n').filter(Boolean).pop() ?? (e as Error).message;
    throw Object.assign(new Error(`git ${args[0]}: ${last.slice(0, 300)}`), { stderr });
  }
}
