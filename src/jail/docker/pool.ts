/**
 * The warm pool: single-use jails made, verified and started before a run asks for one.
 *
 * Guarantees: a pooled jail is made by the same create() as a cold one (the hardened profile,
 * verify-after-create, its own fresh capped workspace and broker socket directory) and holds
 * exactly the limits of the shape it serves (image × memory × cpu × pids × /tmp × disk), so
 * no limit is ever changed after the fact. Its PID 1 is a waiter (busybox sh) blocked on a FIFO
 * in its socket directory; nothing else runs. A run takes a slot only when its spec fits it
 * exactly (the default image, no artifacts, an executable the image holds): the engine's
 * account is read again and verified against the slot's body and the run's own limits, then
 * the run's inputs arrive through the FIFO as one tar, and the waiter execs the run's argv
 * with the run's environment and nothing else — the child is PID 1, as on the cold path. A
 * jail serves one run and is destroyed after it, exactly as a cold one: nothing a child
 * touched is reused. Slots never assigned are destroyed on close, and a supervisor that
 * died leaves them to the next start's sweep (their keys start `pool-`; no run holds them).
 * Anything the pool cannot serve takes the cold path, unchanged.
 * Agent-ready slots (issue 26; brig's own image, brig as root): an operator's agent spawn whose
 * spec is the cold agent argv (pool-waiter.ts `prestartable`) teaches the pool the agent-ready
 * flavour of its shape, whose slots hold a pre-started agent runtime (node and the runtime's
 * modules loaded, waiting for its go) beside the waiter; an agent run takes one of those, else
 * a plain slot of its shape (its argv exec'd), else the cold path. A slot's runtime must still be
 * alive and alone with its waiter when it is taken (pool-slot.ts `intact()`), or the slot is
 * discarded like any other that is not as made.
 * Threat: a jail that differs from the cold path (limits, environment, leftovers, a stale or
 * tampered container) or a slot leaking past the supervisor. Trusts: the engine's inspect,
 * the kernel's FIFO and permission checks (the slot directory is the jail user's, 0700, in
 * brig's private brokers directory). Fails closed: the run's own spec must pass the cold
 * path's render checks (ids, argv without NUL, env names, limits) or it goes cold and is
 * refused there; a slot whose waiter exits while idle is replaced; one that drifted or does
 * not answer when taken fails its run before the child exists (`jail_unverified`,
 * `jail_failed`) and is destroyed.
 * Parts: pool-waiter.ts (the waiter and its assignment), pool-slot.ts (making and destroying a
 * slot), pooled-jail.ts (the Jail a run gets), pool-shapes.ts (which shapes are kept warm).
 */
import path from 'node:path';
import { BrigError, toBrigError } from '../../util/errors.js';
import type { EngineInfo, Jail, JailDriver, JailLimits, JailSpec, JailVerified, LabelledResource } from '../types.js';
import type { DockerJailDriver } from './docker-jail-driver.js';
import { PoolShapes, type ShapeState, type WantOptions } from './pool-shapes.js';
import { destroySlot, intact, makeSlot, newSlotKey, type Slot } from './pool-slot.js';
import { PooledJail } from './pooled-jail.js';
import { prestartable } from './pool-waiter.js';
import { JAIL_PATH, renderCreateBody } from './profile.js';
import { verifyInspect, type InspectView } from './verify.js';

/** How long after a taken slot's child started its refill begins (issue 26: off the short run's path). */
export const REFILL_AFTER_MS = 50;

export interface PoolEvent {
  type: 'jail.pool_assigned' | 'jail.pool_discarded' | 'jail.pool_fill_failed';
  runId?: string;
  slot?: string;
  containerId?: string;
  reason?: string;
  code?: string;
}

export interface WarmPoolOptions {
  driver: DockerJailDriver;
  /** Ready jails kept per shape (0: the pool is off and every run is cold). */
  size: number;
  /** Where slot directories go: the supervisor's brokers directory (each slot's is its socket's). */
  brokersDir: string;
  /** Shapes kept warm at once (the least recently asked for goes first). Default 4. */
  maxShapes?: number;
  /** Jails made at once (they compete with live runs for the engine). Default 2. */
  fillConcurrency?: number;
  /** Jail limit shapes to warm before any run asks (the default profile's). */
  prime?: JailLimits[];
  /** Ledgered by the composition (content-free). */
  onEvent?: (e: PoolEvent) => void;
  /**
   * Where the shapes asked for are kept (most recent first, at most maxShapes), so the next
   * start warms them again before any run asks. Absent: only `prime`.
   */
  shapesFile?: string;
  /**
   * Agent-ready shapes (a pre-started agent runtime per slot) for the agent runs that fit one.
   * Default: on when brig runs as root (they are reaped, pool-waiter.ts); false: agent runs
   * take plain slots, as before.
   */
  agentReady?: boolean;
  /** Prime the agent-ready flavour of each `prime` shape too (the composition root: when models are configured). */
  primeAgent?: boolean;
}

export class WarmPool implements JailDriver {
  private readonly shapes: PoolShapes;
  /** Every slot this pool made and has not destroyed: kept by sweep, whatever its state. */
  private readonly owned = new Set<string>();
  private readonly inflight = new Set<Promise<void>>();
  private executables: Promise<Set<string>> | undefined;
  private closed = false;
  private started = false;
  private backoffMs = 0;
  private backoffUntil = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly fillConcurrency: number;
  /** Whether agent-ready shapes are made (the reaper reaps a pre-started runtime: brig as root). */
  private readonly agentReady: boolean;

  constructor(private readonly o: WarmPoolOptions) {
    this.shapes = new PoolShapes({ size: o.size, maxShapes: o.maxShapes ?? 4, ...(o.shapesFile ? { file: o.shapesFile } : {}) });
    this.fillConcurrency = o.fillConcurrency ?? 2;
    this.agentReady = (o.agentReady ?? true) && process.getuid?.() === 0;
  }

  get size(): number {
    return this.o.size;
  }

  /** Begins filling (after the supervisor's reconcile swept what a dead one left). */
  async start(): Promise<void> {
    this.started = true;
    if (this.o.size <= 0) return;
    const image = await this.o.driver.ensureImage();
    const kept = this.shapes.kept();
    for (const limits of this.o.prime ?? []) this.#want(image, limits, { learn: true, pinned: true, target: this.o.size });
    // Its agent-ready flavour too when agents are served: the first agent spawn finds its runtime started.
    if (this.o.primeAgent && this.agentReady) for (const limits of this.o.prime ?? []) this.#want(image, limits, { learn: true, agent: true });
    for (const k of kept) this.#want(image, k.limits, { learn: true, agent: k.agent && this.agentReady });
  }

  /** Ready and filling slots per shape (the metrics gauges). */
  stats(): { shape: string; ready: number; filling: number }[] {
    return [...this.shapes.entries()].map(([shape, s]) => ({ shape, ready: s.ready.length, filling: s.filling }));
  }

  /** Resolves once every shape holds the ready slots it is kept at (or the pool closed). */
  async filled(timeoutMs = 60_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!this.closed && [...this.shapes.values()].some((s) => s.ready.length < s.target)) {
      if (Date.now() > end) throw new BrigError('jail_failed', 'the warm pool did not fill in time');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Stops filling and destroys every slot no run took. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    await this.shapes.saved();
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    const idle = [...this.shapes.values()].flatMap((s) => s.ready.splice(0));
    await Promise.all(idle.map((s) => this.#destroy(s)));
  }

  info(): Promise<EngineInfo> {
    return this.o.driver.info();
  }

  engineAnswers(timeoutMs: number): Promise<boolean> {
    return this.o.driver.engineAnswers(timeoutMs);
  }

  ensureImage(onProgress?: (line: string) => void): Promise<string> {
    return this.o.driver.ensureImage(onProgress);
  }

  attach(key: string): Promise<Jail | null> {
    return this.o.driver.attach(key);
  }

  listLabelled(): Promise<LabelledResource[]> {
    return this.o.driver.listLabelled();
  }

  /** The driver's sweep, keeping this pool's own slots (idle, filling or handed to a run). */
  sweep(isLive: (key: string) => boolean): Promise<{ containers: number; volumes: number; disks?: number }> {
    return this.o.driver.sweep((key) => this.owned.has(key) || isLive(key));
  }

  /** A ready slot when the spec fits one exactly, else the cold path. */
  async create(spec: JailSpec): Promise<Jail> {
    const pooled = this.o.size > 0 && this.started && !this.closed ? await this.#take(spec) : null;
    return pooled ?? this.o.driver.create(spec);
  }

  async #take(spec: JailSpec): Promise<Jail | null> {
    if (spec.artifacts.length > 0 || spec.repoDir !== undefined || spec.brokerDir === undefined) return null;
    // Any local image the cold path would run (its toolbox tag resolved); a fallback or a refusal is the cold path's to say.
    const image = await this.o.driver.imageTagFor(spec);
    if (image === null) return null;
    const foreign = await this.o.driver.imageTermsFor(image, spec).catch(() => null);
    if (foreign === null) return null;
    // brig's image: only an argv[0] it holds (a foreign image's is found by the assignment along its PATH).
    if (!foreign && !(await this.#runnable(spec.argv[0] ?? ''))) return null;
    // The checks the cold path's create makes of a spec (the assignment quotes every value,
    // but an argv with NUL or an env name that is not an identifier must be refused, not run).
    if (!renderCreateBody(spec, image, this.o.driver.owner, foreign).ok) return null;
    // A shape is learned from an operator's spawn only: a child's is served if kept, else cold.
    const learn = spec.askedBy !== 'child';
    // An agent run that fits: a slot with its runtime pre-started, else a plain one of its shape (the argv exec'd), else cold.
    const agent = !foreign && this.agentReady && prestartable(spec);
    const keys = agent ? [this.#want(image, spec.limits, { learn, agent: true }), this.#want(image, spec.limits, { learn: false })] : [this.#want(image, spec.limits, { learn })];
    let slot: Slot | undefined;
    let shape: ShapeState | undefined;
    for (const key of keys) {
      shape = key === null ? undefined : this.shapes.get(key);
      if (shape && (slot = await this.#intactSlot(shape))) break;
    }
    if (!slot || !shape) return (this.#pump(), null);
    slot.taken = true;
    // Asked for again and served: keep more of it ready (the refill below makes them).
    shape.target = Math.min(this.o.size, shape.target * 2);
    // The engine's account is read again while the supervisor saves the record and opens the
    // socket; start() waits for it before the child exists. The refill waits for the start, so
    // making the next slot does not hold up this one.
    const recheck = this.#recheck(slot, spec);
    recheck.catch(() => {});
    const verified: JailVerified = {
      ...slot.jail.verified!,
      // A foreign image's terms as they hold for this run (its env decides what was overridden).
      ...(foreign ? { foreignImage: { overridden: [...foreign.terms.overridden], envKept: Object.keys(foreign.terms.env).sort(), runtime: foreign.runtimeHash } } : {}),
      pooled: { slot: slot.key, readyAt: slot.readyAt, assignedAt: new Date().toISOString(), ...(slot.agent ? { prestarted: true as const } : {}) },
    };
    this.o.onEvent?.({ type: 'jail.pool_assigned', runId: spec.runId, slot: slot.key, containerId: verified.containerId });
    const assign = foreign ? { env: foreign.terms.env, path: foreign.terms.path, slotEnvKeys: slot.imageEnvKeys ?? [] } : undefined;
    return new PooledJail(slot, spec, verified, recheck, () => this.#refillSoon(), () => this.owned.delete(slot.key), assign);
  }

  /**
   * The first ready slot of a shape still exactly as made: its waiter as PID 1, its FIFO
   * untouched, an agent-ready one's runtime alive and alone beside it. Any other (taken over
   * through its FIFO, its waiter or runtime gone) is discarded, never handed to a run.
   */
  async #intactSlot(shape: ShapeState): Promise<Slot | undefined> {
    let slot: Slot | undefined;
    while ((slot = shape.ready.shift())) {
      const check = await intact(slot);
      if (check.ok) return slot;
      slot.taken = true; // its waiter's end is this discard's, not a second one
      this.o.onEvent?.({ type: 'jail.pool_discarded', slot: slot.key, reason: check.why });
      void this.#destroy(slot);
    }
    return undefined;
  }

  /**
   * Only an argv[0] the cold path would find in brig's own image (an absolute path it holds,
   * or a name on its PATH): a missing one must fail as the cold path fails, at start.
   */
  async #runnable(argv0: string): Promise<boolean> {
    this.executables ??= this.o.driver.childPlan().then((plan) => new Set(plan.entries.filter((e) => (e.kind === 'host' && (e.mode & 0o111) !== 0) || (e.kind === 'link' && (e.dest.startsWith('bin/') || e.dest.startsWith('opt/brig/bin/')))).map((e) => `/${e.dest}`)));
    const exe = await this.executables;
    if (argv0.includes('/')) return exe.has(path.posix.normalize(argv0));
    return JAIL_PATH.split(':').some((d) => exe.has(`${d}/${argv0}`));
  }

  /** The slot read again from the engine: running, its body unchanged, the run's own limits. */
  async #recheck(slot: Slot, spec: JailSpec): Promise<void> {
    const inspect = (await slot.jail.inspect()) as unknown as InspectView & { State?: { Running?: boolean } };
    if (inspect.State?.Running !== true) throw new BrigError('jail_failed', 'the pooled jail is not running');
    const drift = verifyInspect(inspect, slot.body, spec.limits);
    if (drift.length > 0) {
      throw new BrigError('jail_unverified', `the pooled jail drifted from its profile (${drift.map((d) => d.field).join(', ')})`, { data: { drift: drift.map((d) => d.field) } });
    }
  }

  /** Marks a shape as wanted (PoolShapes.want), destroys the ready slots of shapes let go, fills; null: not kept, not learned. */
  #want(image: string, limits: JailLimits, o: WantOptions): string | null {
    const wanted = this.shapes.want(image, limits, o);
    if (!wanted) return null;
    for (const slot of wanted.dropped) void this.#destroy(slot);
    this.#pump();
    return wanted.key;
  }

  /**
   * The refill after a slot was taken, REFILL_AFTER_MS after its child started: a short run
   * reaches its envelope before a new container's making competes with it for the engine and
   * the cores; a burst that empties the pool is refilled all the same (the next take, or the
   * timer, pumps).
   */
  #refillSoon(): void {
    if (this.closed) return;
    setTimeout(() => this.#pump(), REFILL_AFTER_MS).unref();
  }

  /** Starts fills until every shape holds its target (bounded concurrency, backoff after a failure). */
  #pump(): void {
    if (this.closed || this.o.size <= 0) return;
    const wait = this.backoffUntil - Date.now();
    if (wait > 0) {
      this.retryTimer ??= setTimeout(() => ((this.retryTimer = undefined), this.#pump()), wait).unref();
      return;
    }
    for (const [key, s] of this.shapes.entries()) {
      while (s.ready.length + s.filling < s.target && this.inflight.size < this.fillConcurrency) {
        s.filling++;
        const p = this.#fill(key, s).finally(() => {
          s.filling--;
          this.inflight.delete(p);
          this.#pump();
        });
        this.inflight.add(p);
      }
    }
  }

  async #fill(shape: string, s: ShapeState): Promise<void> {
    const key = newSlotKey();
    this.owned.add(key);
    try {
      const slot = await makeSlot({ driver: this.o.driver, brokersDir: this.o.brokersDir, key, shape, image: s.image, limits: s.limits, agent: s.agent });
      // A waiter that exits before its run (killed, out of memory) takes its slot with it.
      void slot.jail.wait().then(
        (end) => !slot.taken && this.#discard(slot, `exited ${end.exitCode}`),
        () => !slot.taken && this.#discard(slot, 'lost'),
      );
      this.backoffMs = 0;
      if (this.closed || this.shapes.get(shape) !== s) return await this.#destroy(slot);
      s.ready.push(slot);
    } catch (e) {
      this.owned.delete(key);
      if (this.closed) return;
      this.backoffMs = Math.min(30_000, Math.max(250, this.backoffMs * 2));
      this.backoffUntil = Date.now() + this.backoffMs;
      this.o.onEvent?.({ type: 'jail.pool_fill_failed', code: toBrigError(e).code });
    }
  }

  #discard(slot: Slot, reason: string): void {
    if (this.closed) return void this.#destroy(slot);
    for (const s of this.shapes.values()) {
      const i = s.ready.indexOf(slot);
      if (i >= 0) s.ready.splice(i, 1);
    }
    this.o.onEvent?.({ type: 'jail.pool_discarded', slot: slot.key, reason });
    void this.#destroy(slot);
    this.#pump();
  }

  async #destroy(slot: Slot): Promise<void> {
    await destroySlot(slot);
    this.owned.delete(slot.key);
  }
}

