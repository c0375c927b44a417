/**
 * A small warm pool of DuckDB helper processes (helper-process.ts).
 *
 * Guarantees: one request in flight per helper; every helper runs under the kernel's caps
 * (address space, CPU time) and, isolated, as uid 65534 without capabilities, seeing only the
 * files of the request it serves (bind-mounted for it; helper-mounts.ts detaches them before a
 * request that does not name them, and within a second after the reply anyway); a
 * request past its time (plus a grace) kills the helper and the next request gets a fresh one;
 * a helper that reports a timeout or dies is recycled too, and one whose CPU time could run out
 * during a request is retired before it. Threat: a query that hangs, bloats or takes over a
 * helper. Trusts: the helper's replies only after schema validation. Fails closed:
 * unparseable reply → the helper is killed.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { HelperReply, HelperRequest, HelperSelf } from './helper-protocol.js';
import { type HelperCaps, isolationAvailable } from './helper-isolation.js';
import { ExposeError } from './helper-mounts.js';
import { HelperGone, HelperProcess } from './helper-process.js';

export { loaderArgs } from './helper-process.js';

export interface HelperPoolOptions {
  /** Helpers kept warm (default 2). */
  size?: number;
  /** Extra time past a request's own timeout before the helper is killed (default 2000 ms). */
  graceMs?: number;
  /** Time allowed for a helper to start (default 15 s). */
  startMs?: number;
  /**
   * Run helpers in their own network, mount, PID and IPC namespaces with a read-only `/`, as
   * uid 65534 without capabilities (helper-isolation.ts). `auto` (default): when the host
   * allows it, else unisolated; `require`: never run a helper unisolated; `off`: never isolate.
   */
  isolate?: 'auto' | 'require' | 'off';
  /** Address space each helper may add once loaded, enforced as RLIMIT_AS (default HELPER_CAPS.memoryBytes). */
  memoryBytes?: number;
  /** RLIMIT_CPU of each helper process over its life (default HELPER_CAPS.cpuSeconds). */
  cpuSeconds?: number;
  /** Niceness of every helper (default 0): the children's lane runs its helpers below the operator's. */
  nice?: number;
}

/**
 * The kernel's caps on each helper. 3 GiB of address space past its size once loaded (node +
 * DuckDB ≈ 1.3 GiB of mostly untouched reservations, ≈ 2.6 GiB under tsx): a query's own
 * memory_limit is 1 GB by default, a spilling 4 GB sort peaks ≈ 1.9 GiB above that size, and
 * DuckDB allocates outside its buffer manager too (a 4 GB `repeat()` string must fail). 900 s
 * of CPU time: above any one query's worst case at the slicer's limits (30 s × 4 threads + grace).
 */
export const HELPER_CAPS: Readonly<HelperCaps> = Object.freeze({ memoryBytes: 3 * 1024 ** 3, cpuSeconds: 900 });

/** Where the helper lives: the compiled .js next to us, or the .ts source under tsx. */
export function helperEntry(): string {
  const js = fileURLToPath(new URL('./duckdb-helper.js', import.meta.url));
  if (fs.existsSync(js)) return js;
  return fileURLToPath(new URL('./duckdb-helper.ts', import.meta.url));
}

type Request = Omit<HelperRequest, 'id'>;

export class DuckdbHelperPool {
  private readonly idle: HelperProcess[] = [];
  private readonly all = new Set<HelperProcess>();
  private readonly waiters: ((h: HelperProcess) => void)[] = [];
  private nextId = 1;
  private closed = false;
  /** Helpers it keeps (and requests it serves at once). */
  readonly size: number;
  private readonly graceMs: number;
  private readonly startMs: number;
  private readonly caps: HelperCaps;
  private readonly entry = helperEntry();
  private readonly isolateMode: 'auto' | 'require' | 'off';
  private readonly nice: number;
  /** Whether new helpers are started isolated; `auto` turns it off after an isolated start fails. */
  private isolateNext: boolean;

  constructor(opts: HelperPoolOptions = {}) {
    this.size = Math.max(1, opts.size ?? 2);
    this.graceMs = opts.graceMs ?? 2000;
    this.startMs = opts.startMs ?? 15_000;
    this.caps = { memoryBytes: opts.memoryBytes ?? HELPER_CAPS.memoryBytes, cpuSeconds: opts.cpuSeconds ?? HELPER_CAPS.cpuSeconds };
    this.isolateMode = opts.isolate ?? 'auto';
    this.nice = opts.nice ?? 0;
    this.isolateNext = this.isolateMode !== 'off' && isolationAvailable();
  }

  /** True when helpers run in their own network-less, read-only namespaces as uid 65534. */
  get isolated(): boolean {
    return this.isolateNext;
  }

  /** Helper processes started so far (more than the pool size: restarts after a crash, a cap or a retirement). */
  get started(): number {
    return this.nextId - 1;
  }

  /** Pids of the live helpers' launchers (`unshare` when isolated, else node itself). */
  pids(): number[] {
    return [...this.all].filter((h) => !h.dead).map((h) => h.proc.pid!).filter((p) => p !== undefined);
  }

  /** Pids of the helpers' node processes (the child of `unshare` when isolated), for RSS. */
  nodePids(): number[] {
    return [...this.all].filter((h) => !h.dead && h.nodePid !== undefined).map((h) => h.nodePid!);
  }

  /** Each started helper: its pid, what it read from its own /proc/self/status, its RLIMIT_AS. */
  helpers(): { pid: number; isolated: boolean; self: HelperSelf; memoryLimit: number }[] {
    return [...this.all]
      .filter((h) => !h.dead && h.self && h.nodePid !== undefined && h.memoryLimit !== undefined)
      .map((h) => ({ pid: h.nodePid!, isolated: h.isolated, self: h.self!, memoryLimit: h.memoryLimit! }));
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

  async run(req: Request, retried = false): Promise<HelperReply> {
    if (this.closed) throw new Error('the DuckDB helper pool is closed');
    let retry = false;
    const reply = await this.runOnce(req, retried, () => (retry = true));
    return retry ? this.run(req, true) : reply;
  }

  private async runOnce(req: Request, retried: boolean, markRetry: () => void): Promise<HelperReply> {
    const h = this.fresh(await this.acquire(), req);
    const id = this.nextId++;
    let timer: NodeJS.Timeout | undefined;
    try {
      try {
        await h.ready;
      } catch (e) {
        // An isolated start that failed (no mount rights here, …) already switched `auto`
        // pools to unisolated helpers: retry once on one of those.
        if (h.isolating && this.isolateMode === 'auto' && !retried) {
          markRetry();
          return { id, ok: false, error: { code: 'internal', message: 'retry' } };
        }
        return { id, ok: false, error: { code: 'internal', message: e instanceof Error ? e.message : String(e) } };
      }
      let seen = req;
      try {
        if (h.mounts) seen = await h.mounts.expose(req);
      } catch (e) {
        const code = e instanceof ExposeError ? e.code : 'internal';
        if (code === 'internal') h.kill();
        return { id, ok: false, error: { code, message: e instanceof Error ? e.message : String(e) } };
      }
      const hard = new Promise<HelperReply>((resolve) => {
        timer = setTimeout(() => {
          h.kill();
          resolve({ id, ok: false, error: { code: 'timeout', message: `the query ran past ${req.timeoutMs} ms; its helper was killed` } });
        }, req.timeoutMs + this.graceMs);
      });
      const sent = h.send({ ...seen, id }).catch(
        (e: unknown): HelperReply => ({ id, ok: false, error: { code: e instanceof HelperGone ? e.code : 'internal', message: e instanceof Error ? e.message : String(e) } }),
      );
      const reply = await Promise.race([sent, hard]);
      // A helper that hit a timeout may hold memory or a stuck thread: recycle it.
      if (!reply.ok && (reply.error.code === 'timeout' || reply.error.code === 'internal')) h.kill();
      return reply;
    } finally {
      clearTimeout(timer);
      if (!h.dead) h.mounts?.done();
      this.release(h);
    }
  }

  /**
   * The helper to use for `req`: `h`, unless its CPU time could run out during this request
   * (then a fresh one, so the kernel's cap stops runaways, not ordinary queries).
   */
  private fresh(h: HelperProcess, req: Request): HelperProcess {
    const worst = Math.ceil((req.timeoutMs + this.graceMs) / 1000) * (req.threads + 1);
    const used = h.cpuSeconds();
    // A helper that has hardly run is as good as a new one (a request too big for the cap is
    // then bounded by the kernel: its helper dies with SIGXCPU and the reply is a timeout).
    if (used + worst <= this.caps.cpuSeconds || used < 5) return h;
    h.kill();
    this.all.delete(h);
    return this.spawnHelper();
  }

  /** Why the last helper that failed to start did (warm() itself never throws; tests print it). */
  lastStartError: string | undefined;

  private spawnHelper(): HelperProcess {
    if (this.isolateMode === 'require' && !this.isolateNext) throw new Error('isolated DuckDB helpers are required but this host cannot start them');
    const h = new HelperProcess(this.entry, this.startMs, this.isolateNext, this.caps, this.nice);
    h.ready.catch((e: unknown) => {
      this.lastStartError = e instanceof Error ? e.message : String(e);
      if (h.isolating && this.isolateMode === 'auto') this.isolateNext = false;
    });
    this.all.add(h);
    h.proc.on('exit', () => this.all.delete(h));
    return h;
  }

  private acquire(): Promise<HelperProcess> {
    for (;;) {
      const h = this.idle.pop();
      if (!h) break;
      if (!h.dead) return Promise.resolve(h);
    }
    if (this.all.size < this.size) return Promise.resolve(this.spawnHelper());
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private release(h: HelperProcess): void {
    let next: HelperProcess | undefined = h;
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
