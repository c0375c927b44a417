/**
 * A small warm pool of DuckDB helper processes.
 *
 * Guarantees: every helper is spawned from nothing — argv only, an EMPTY environment, stdio
 * pipes; one request in flight per helper; a request past its time (plus a grace) kills the
 * helper and the next request gets a fresh one; a helper that reports a timeout or dies is
 * recycled too. Threat: a query that hangs or bloats a helper. Trusts: the helper's replies
 * only after schema validation. Fails closed: unparseable reply → the helper is killed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type HelperReply, type HelperRequest, HelperReplySchema } from './helper-protocol.js';

export interface HelperPoolOptions {
  /** Helpers kept warm (default 2). */
  size?: number;
  /** Extra time past a request's own timeout before the helper is killed (default 2000 ms). */
  graceMs?: number;
  /** Time allowed for a helper to start (default 15 s). */
  startMs?: number;
}

/** Where the helper lives: the compiled .js next to us, or the .ts source under tsx. */
export function helperEntry(): string {
  const js = fileURLToPath(new URL('./duckdb-helper.js', import.meta.url));
  if (fs.existsSync(js)) return js;
  return fileURLToPath(new URL('./duckdb-helper.ts', import.meta.url));
}

/** Node flags a helper needs to load us the same way (e.g. `--import tsx`), nothing else. */
export function loaderArgs(execArgv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const a = execArgv[i]!;
    if (['--import', '--require', '--loader', '--experimental-loader', '-r'].includes(a) && execArgv[i + 1] !== undefined) {
      out.push(a, execArgv[++i]!);
    } else if (/^--(import|require|loader|experimental-loader)=/.test(a)) {
      out.push(a);
    }
  }
  return out;
}

type Pending = { resolve: (r: HelperReply) => void; reject: (e: Error) => void; id: number };

class Helper {
  readonly proc: ChildProcess;
  private pending: Pending | undefined;
  readonly ready: Promise<void>;
  dead = false;

  constructor(entry: string, startMs: number) {
    this.proc = spawn(process.execPath, [...loaderArgs(process.execArgv), entry], {
      env: {},
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.proc.stderr!.resume();
    let readyResolve!: () => void;
    let readyReject!: (e: Error) => void;
    this.ready = new Promise((res, rej) => {
      readyResolve = res;
      readyReject = rej;
    });
    const startTimer = setTimeout(() => {
      readyReject(new Error('the DuckDB helper did not start'));
      this.kill();
    }, startMs);
    const rl = readline.createInterface({ input: this.proc.stdout!, crlfDelay: Infinity });
    rl.on('line', (line) => {
      let reply: HelperReply;
      try {
        reply = HelperReplySchema.parse(JSON.parse(line));
      } catch {
        this.fail(new Error('the DuckDB helper sent a malformed reply'));
        return;
      }
      if (reply.id === 0) {
        clearTimeout(startTimer);
        readyResolve();
        return;
      }
      const p = this.pending;
      if (p && p.id === reply.id) {
        this.pending = undefined;
        p.resolve(reply);
      }
    });
    this.proc.on('exit', () => {
      clearTimeout(startTimer);
      this.dead = true;
      readyReject(new Error('the DuckDB helper exited while starting'));
      this.fail(new Error('the DuckDB helper exited'));
    });
    this.proc.on('error', (e) => {
      this.dead = true;
      readyReject(e);
      this.fail(e);
    });
    this.ready.catch(() => undefined);
  }

  get busy(): boolean {
    return this.pending !== undefined;
  }

  send(req: HelperRequest): Promise<HelperReply> {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject, id: req.id };
      this.proc.stdin!.write(`${JSON.stringify(req)}\n`);
    });
  }

  private fail(e: Error): void {
    const p = this.pending;
    this.pending = undefined;
    p?.reject(e);
    this.kill();
  }

  kill(): void {
    this.dead = true;
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
  }
}

export class DuckdbHelperPool {
  private readonly idle: Helper[] = [];
  private readonly all = new Set<Helper>();
  private readonly waiters: ((h: Helper) => void)[] = [];
  private nextId = 1;
  private closed = false;
  private readonly size: number;
  private readonly graceMs: number;
  private readonly startMs: number;
  private readonly entry = helperEntry();

  constructor(opts: HelperPoolOptions = {}) {
    this.size = Math.max(1, opts.size ?? 2);
    this.graceMs = opts.graceMs ?? 2000;
    this.startMs = opts.startMs ?? 15_000;
  }

  /** Pids of live helpers (for RSS measurement and tests). */
  pids(): number[] {
    return [...this.all].filter((h) => !h.dead).map((h) => h.proc.pid!).filter((p) => p !== undefined);
  }

  /** Starts helpers up to the pool size so the first query does not pay for a spawn. */
  async warm(): Promise<void> {
    const starting: Promise<void>[] = [];
    while (this.all.size < this.size) {
      const h = this.spawnHelper();
      this.idle.push(h);
      starting.push(h.ready);
    }
    await Promise.allSettled(starting);
  }

  async run(req: Omit<HelperRequest, 'id'>): Promise<HelperReply> {
    if (this.closed) throw new Error('the DuckDB helper pool is closed');
    const h = await this.acquire();
    const id = this.nextId++;
    let timer: NodeJS.Timeout | undefined;
    try {
      try {
        await h.ready;
      } catch (e) {
        return { id, ok: false, error: { code: 'internal', message: e instanceof Error ? e.message : String(e) } };
      }
      const hard = new Promise<HelperReply>((resolve) => {
        timer = setTimeout(() => {
          h.kill();
          resolve({ id, ok: false, error: { code: 'timeout', message: `the query ran past ${req.timeoutMs} ms; its helper was killed` } });
        }, req.timeoutMs + this.graceMs);
      });
      const sent = h.send({ ...req, id }).catch(
        (e: unknown): HelperReply => ({ id, ok: false, error: { code: 'internal', message: e instanceof Error ? e.message : String(e) } }),
      );
      const reply = await Promise.race([sent, hard]);
      // A helper that hit a timeout may hold memory or a stuck thread: recycle it.
      if (!reply.ok && (reply.error.code === 'timeout' || reply.error.code === 'internal')) h.kill();
      return reply;
    } finally {
      clearTimeout(timer);
      this.release(h);
    }
  }

  private spawnHelper(): Helper {
    const h = new Helper(this.entry, this.startMs);
    this.all.add(h);
    h.proc.on('exit', () => this.all.delete(h));
    return h;
  }

  private acquire(): Promise<Helper> {
    for (;;) {
      const h = this.idle.pop();
      if (!h) break;
      if (!h.dead) return Promise.resolve(h);
    }
    if (this.all.size < this.size) return Promise.resolve(this.spawnHelper());
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private release(h: Helper): void {
    let next: Helper | undefined = h;
    if (h.dead) {
      this.all.delete(h);
      next = this.closed ? undefined : this.waiters.length > 0 ? this.spawnHelper() : undefined;
    }
    if (!next) return;
    const w = this.waiters.shift();
    if (w) w(next);
    else this.idle.push(next);
  }

  /** Kills every helper. Safe to call twice. */
  async close(): Promise<void> {
    this.closed = true;
    const exits = [...this.all].map(
      (h) => new Promise<void>((res) => (h.proc.exitCode !== null || h.proc.signalCode !== null ? res() : h.proc.once('exit', () => res()))),
    );
    for (const h of this.all) {
      h.proc.stdin?.end();
      h.kill();
    }
    this.idle.length = 0;
    await Promise.all(exits);
  }
}
