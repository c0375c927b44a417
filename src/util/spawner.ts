/**
 * Short host commands run by a helper process, off the caller's event loop.
 *
 * Why: starting a process is synchronous in Node — `child_process.spawn` forks the caller and
 * waits until the child has exec'd — so every mkfs, debugfs and losetup of a jail's workspace
 * disk held the daemon's main thread for 25 ms on a loaded machine; at 20 jails at once that was
 * 1.8 s of process spawning on the thread that answers the API (issue 29 item 7,
 * bench/api-stall.bench.ts). Here one long-lived helper (`node -e`, ~40 MB, started on the first
 * call) does the forking and answers over its stdin/stdout pipes, one JSON line per command, so
 * the main thread only writes and reads a line. A helper process rather than a worker thread: a
 * fork from a worker still copies the daemon's whole address space (its page tables, under a
 * lock the main thread's page faults wait on), a fork from the small helper copies the helper's.
 *
 * Guarantees: `execFile(file, args, opts)` behaves like `promisify(child_process.execFile)` for
 * what brig asks of it — argv only, no shell; resolves `{ stdout, stderr }` on exit 0; rejects
 * with an Error carrying `code`, `signal`, `stdout` and `stderr` otherwise — and the commands of
 * concurrent calls run concurrently. The helper inherits the caller's environment at its start
 * (a call's `env` replaces it for that command, as execFile's does) and exits when its stdin
 * closes — not on SIGINT, SIGTERM or SIGHUP, which a terminal or a service manager sends the
 * whole group while its parent drains and may still need it — so it lives as long as its
 * parent, never longer than its running commands. It holds no event
 * loop open while no call is pending.
 * Fails: a call in flight when the helper dies rejects (`spawner exited`); the next call starts a
 * new one. A helper that cannot start rejects the call with why.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';

export interface ExecOptions {
  /** The command's whole environment (default: the helper's, i.e. the caller's at its start). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Bytes of stdout/stderr kept at most (default 8 MiB); past it the command is killed. */
  maxBuffer?: number;
  /** Killed (SIGTERM) after this many ms (default none). */
  timeout?: number;
}

export interface ExecError extends Error {
  code?: number | string | null;
  signal?: string | null;
  stdout: string;
  stderr: string;
}

/** The helper: one JSON request per stdin line, one JSON answer per stdout line. Plain JS. */
const HELPER = String.raw`
'use strict';
const { execFile } = require('node:child_process');
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let q;
  try { q = JSON.parse(line); } catch { return; }
  const o = { maxBuffer: q.maxBuffer || 8 * 1024 * 1024, encoding: 'utf8' };
  if (q.env) o.env = q.env;
  if (q.cwd) o.cwd = q.cwd;
  if (q.timeout) o.timeout = q.timeout;
  try {
    execFile(q.file, q.args, o, (err, stdout, stderr) => {
      const a = { id: q.id, stdout: String(stdout || ''), stderr: String(stderr || '') };
      if (err) { a.error = String(err.message); a.code = err.code === undefined ? null : err.code; a.signal = err.signal || null; }
      process.stdout.write(JSON.stringify(a) + '\n');
    });
  } catch (e) {
    process.stdout.write(JSON.stringify({ id: q.id, stdout: '', stderr: '', error: String(e && e.message), code: e && e.code || null, signal: null }) + '\n');
  }
});
rl.on('close', () => process.exit(0));
// It lives as long as its parent's pipe: a Ctrl-C or a SIGTERM to the whole process group (a
// terminal, a service manager) leaves it to the parent, which may still need it to drain.
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => {});
`;

interface Answer {
  id: number;
  stdout: string;
  stderr: string;
  error?: string;
  code?: number | string | null;
  signal?: string | null;
}

interface Pending {
  resolve: (v: { stdout: string; stderr: string }) => void;
  reject: (e: ExecError) => void;
}

function execError(message: string, a: Partial<Answer> = {}): ExecError {
  const e = new Error(message) as ExecError;
  e.code = a.code ?? null;
  e.signal = a.signal ?? null;
  e.stdout = a.stdout ?? '';
  e.stderr = a.stderr ?? '';
  return e;
}

export class Spawner {
  #proc: ChildProcess | undefined;
  readonly #pending = new Map<number, Pending>();
  #next = 1;

  /** Runs `file` with `args` in the helper; see the module comment. */
  execFile(file: string, args: readonly string[], opts: ExecOptions = {}): Promise<{ stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      let proc: ChildProcess;
      try {
        proc = this.#helper();
      } catch (e) {
        reject(execError(`the command helper could not start: ${(e as Error).message}`));
        return;
      }
      const id = this.#next++;
      this.#pending.set(id, { resolve, reject });
      this.#hold(true);
      proc.stdin!.write(`${JSON.stringify({ id, file, args, env: opts.env, cwd: opts.cwd, maxBuffer: opts.maxBuffer, timeout: opts.timeout })}\n`);
    });
  }

  /**
   * Starts the helper now, holding no event loop open, so the first command does not wait for
   * its start (~50 ms of node): a one-shot supervisor asks while it composes itself. A helper
   * that cannot start is left to the first call to report.
   */
  prestart(): void {
    try {
      this.#helper();
      if (this.#pending.size === 0) this.#hold(false);
    } catch {
      // the first execFile says why
    }
  }

  /** Ends the helper (commands it runs finish on their own); the next call starts another. */
  close(): void {
    this.#proc?.stdin?.end();
    this.#proc = undefined;
  }

  #helper(): ChildProcess {
    if (this.#proc) return this.#proc;
    const proc = spawn(process.execPath, ['--max-old-space-size=64', '-e', HELPER], { stdio: ['pipe', 'pipe', 'ignore'] });
    this.#proc = proc;
    const gone = (why: string) => {
      if (this.#proc === proc) this.#proc = undefined;
      for (const [id, p] of this.#pending) {
        this.#pending.delete(id);
        p.reject(execError(`spawner exited (${why}) before the command answered`));
      }
    };
    proc.on('error', (e) => gone(e.message));
    proc.on('exit', (code, signal) => gone(signal ?? `code ${code}`));
    proc.stdin!.on('error', () => {}); // a dead helper: its 'exit' rejects what is pending
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      let a: Answer;
      try {
        a = JSON.parse(line) as Answer;
      } catch {
        return;
      }
      const p = this.#pending.get(a.id);
      if (!p) return;
      this.#pending.delete(a.id);
      if (this.#pending.size === 0) this.#hold(false);
      if (a.error === undefined) p.resolve({ stdout: a.stdout, stderr: a.stderr });
      else p.reject(execError(a.error, a));
    });
    return proc;
  }

  /** Keeps the caller's event loop alive only while a call is pending. */
  #hold(on: boolean): void {
    const p = this.#proc;
    if (!p) return;
    for (const h of [p, p.stdin, p.stdout] as ({ ref(): unknown; unref(): unknown } | null)[]) {
      if (!h) continue;
      if (on) h.ref();
      else h.unref();
    }
  }
}

/** The process's one helper. */
export const spawner = new Spawner();

/** `promisify(execFile)` through the helper. */
export function execInHelper(file: string, args: readonly string[], opts: ExecOptions = {}): Promise<{ stdout: string; stderr: string }> {
  return spawner.execFile(file, args, opts);
}
