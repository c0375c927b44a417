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
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type HelperReply, type HelperRequest, HelperReadySchema, HelperReplySchema } from './helper-protocol.js';
import { isolatedArgv, isolationAvailable } from './helper-isolation.js';

export interface HelperPoolOptions {
  /** Helpers kept warm (default 2). */
  size?: number;
  /** Extra time past a request's own timeout before the helper is killed (default 2000 ms). */
  graceMs?: number;
  /** Time allowed for a helper to start (default 15 s). */
  startMs?: number;
  /**
   * Run helpers in their own network and mount namespaces with a read-only `/`
   * (helper-isolation.ts). `auto` (default): when the host allows it, else unisolated;
   * `require`: never run a helper unisolated; `off`: never isolate.
   */
  isolate?: 'auto' | 'require' | 'off';
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
  isolated = false;
  /** Started through unshare (whether or not it got there). */
  get isolating(): boolean {
    return this.spillDir !== undefined;
  }
  private readonly spillDir: string | undefined;

  constructor(entry: string, startMs: number, isolate: boolean) {
    const nodeArgs = [...loaderArgs(process.execArgv), entry];
    this.spillDir = isolate ? fs.mkdtempSync(path.join(os.tmpdir(), 'brig-spill-')) : undefined;
    const [cmd, args] = this.spillDir ? isolatedArgv(nodeArgs, this.spillDir) : [process.execPath, nodeArgs];
    this.proc = spawn(cmd, args, { env: {}, stdio: ['pipe', 'pipe', 'pipe'] });
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
        const msg: unknown = JSON.parse(line);
        const ready = HelperReadySchema.safeParse(msg);
        if (ready.success) {
          this.isolated = ready.data.isolated;
          clearTimeout(startTimer);
          readyResolve();
          return;
        }
        reply = HelperReplySchema.parse(msg);
      } catch {
        this.fail(new Error('the DuckDB helper sent a malformed reply'));
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
      if (this.spillDir) fs.rm(this.spillDir, { recursive: true, force: true }, () => undefined);
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
  private readonly isolateMode: 'auto' | 'require' | 'off';
  /** Whether new helpers are started isolated; `auto` turns it off after an isolated start fails. */
  private isolateNext: boolean;

  constructor(opts: HelperPoolOptions = {}) {
    this.size = Math.max(1, opts.size ?? 2);
    this.graceMs = opts.graceMs ?? 2000;
    this.startMs = opts.startMs ?? 15_000;
    this.isolateMode = opts.isolate ?? 'auto';
    this.isolateNext = this.isolateMode !== 'off' && isolationAvailable();
  }

  /** True when helpers run in their own network-less, read-only namespaces. */
  get isolated(): boolean {
    return this.isolateNext;
  }

  /** Pids of the live helpers' launchers (`unshare` when isolated, else node itself). */
  pids(): number[] {
    return [...this.all].filter((h) => !h.dead).map((h) => h.proc.pid!).filter((p) => p !== undefined);
  }

  /** Pids of the helpers' node processes (the child of `unshare` when isolated), for RSS. */
  nodePids(): number[] {
    return [...this.all]
      .filter((h) => !h.dead && h.proc.pid !== undefined)
      .map((h) => {
        if (!h.isolating) return h.proc.pid!;
        const kids = fs.readFileSync(`/proc/${h.proc.pid}/task/${h.proc.pid}/children`, 'utf8').trim().split(/\s+/);
        return Number(kids[0]);
      })
      .filter((p) => Number.isInteger(p) && p > 0);
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

  async run(req: Omit<HelperRequest, 'id'>, retried = false): Promise<HelperReply> {
    if (this.closed) throw new Error('the DuckDB helper pool is closed');
    let retry = false;
    const reply = await this.runOnce(req, retried, () => (retry = true));
    return retry ? this.run(req, true) : reply;
  }

  private async runOnce(req: Omit<HelperRequest, 'id'>, retried: boolean, markRetry: () => void): Promise<HelperReply> {
    const h = await this.acquire();
    const id = this.nextId++;
    let timer: NodeJS.Timeout | undefined;
    let retry = false;
    try {
      try {
        await h.ready;
      } catch (e) {
        // An isolated start that failed (no mount rights here, …) already switched `auto`
        // pools to unisolated helpers: retry once on one of those.
        if (h.isolating && this.isolateMode === 'auto' && !retried) retry = true;
        else return { id, ok: false, error: { code: 'internal', message: e instanceof Error ? e.message : String(e) } };
      }
      if (retry) {
        markRetry();
        return { id, ok: false, error: { code: 'internal', message: 'retry' } };
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
    if (this.isolateMode === 'require' && !this.isolateNext) throw new Error('isolated DuckDB helpers are required but this host cannot start them');
    const h = new Helper(this.entry, this.startMs, this.isolateNext);
    h.ready.catch(() => {
      if (h.isolating && this.isolateMode === 'auto') this.isolateNext = false;
    });
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
