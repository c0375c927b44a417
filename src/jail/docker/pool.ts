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
 * Threat: a jail that differs from the cold path (limits, environment, leftovers, a stale or
 * tampered container) or a slot leaking past the supervisor. Trusts: the engine's inspect,
 * the kernel's FIFO and permission checks (the slot directory is the jail user's, 0700, in
 * brig's private brokers directory). Fails closed: the run's own spec must pass the cold
 * path's render checks (ids, argv without NUL, env names, limits) or it goes cold and is
 * refused there; a slot whose waiter exits while idle is replaced; one that drifted or does
 * not answer when taken fails its run before the child exists (`jail_unverified`,
 * `jail_failed`) and is destroyed.
 */
import crypto from 'node:crypto';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { writeFileAtomic } from '../../util/atomic-file.js';
import { BrigError, toBrigError } from '../../util/errors.js';
import { POOL_KEY_PREFIX, type CollectCaps, type CollectOptions, type CollectReport, type EngineInfo, type Jail, type JailDriver, type JailExit, type JailLimits, type JailSpec, type JailVerified, type LabelledResource, type StreamTails } from '../types.js';
import type { DockerJail } from './docker-jail.js';
import { inputsArchive } from './docker-jail.js';
import type { DockerJailDriver } from './docker-jail-driver.js';
import { JAIL_PATH, JAIL_USER, WORKSPACE_DIR, renderCreateBody, type CreateBody } from './profile.js';
import { verifyInspect, type InspectView } from './verify.js';

const run = promisify(execFile);
/** coreutils' mkfifo, by absolute path (Node has no mkfifo); found once. */
const MKFIFO = ['/usr/bin/mkfifo', '/bin/mkfifo'].find((p) => fs.existsSync(p));

/** The FIFO a slot's waiter blocks on, in its socket directory (/run/brig/go inside). */
const FIFO = 'go';
/** Written by the pool into the workspace with the run's inputs; read, removed, then eval'd. */
const ASSIGN = '.brig/assign.sh';
/** The waiter's line on stderr once it is about to block (cleared from the tails before the run). */
const READY = 'brig-pool: ready';

/**
 * PID 1 of a pooled jail. It says it is ready, blocks opening the FIFO (no CPU while it
 * waits), unpacks the run's inputs from it as the jail user with the cold path's umask, and
 * evals the assignment: unset its own environment, export the run's, exec the run's argv.
 * Any failure is exit 70 (the pool destroys the slot; a run that held it fails).
 */
export const WAITER = [
  `echo '${READY}' >&2`,
  'umask 022',
  `tar -xf - -C ${WORKSPACE_DIR} </run/brig/${FIFO} || exit 70`,
  `s=$(cat ${WORKSPACE_DIR}/${ASSIGN}) || exit 70`,
  `rm -f ${WORKSPACE_DIR}/${ASSIGN}`,
  'eval "$s"',
  'exit 70',
].join('\n');

/** What the engine adds to a container's environment beside the body's (profile.ts Hostname). */
const ENGINE_ENV = { HOSTNAME: 'brig' } as const;
/** The slot's own environment: what the waiter holds before its run's replaces it. */
const SLOT_ENV = { HOME: WORKSPACE_DIR } as const;

/** Single-quoted for POSIX sh: safe for any string without NUL (argv and env never hold one). */
export function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The assignment the waiter evals: exactly the environment the cold path's container gets
 * (the spec's, PATH as render sets it, the engine's HOSTNAME), then exec of the spec's argv.
 */
export function assignScript(spec: Pick<JailSpec, 'argv' | 'env'>): string {
  const env: Record<string, string> = { ...ENGINE_ENV, ...spec.env, PATH: spec.env.PATH ?? JAIL_PATH };
  const unset = ['PWD', 'OLDPWD', 'SHLVL', 'PATH', ...Object.keys(ENGINE_ENV), ...Object.keys(SLOT_ENV)];
  return [
    `unset ${[...new Set(unset)].join(' ')}`,
    `export ${Object.entries(env).map(([k, v]) => `${k}=${shQuote(v)}`).join(' ')}`,
    `exec ${spec.argv.map(shQuote).join(' ')}`,
    '',
  ].join('\n');
}

/** A pool serves one exact limit shape of one image. */
export function shapeKey(image: string, l: JailLimits): string {
  return [image, l.memoryMb, l.cpu, l.pids, l.tmpfsMb, l.diskMb].join('|');
}

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
}

const SHAPE_KEYS = ['memoryMb', 'cpu', 'pids', 'tmpfsMb', 'diskMb'] as const;

/** The shapes a file holds: each a full set of positive finite limits, anything else dropped. */
export function readShapes(file: string): JailLimits[] {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((x) => {
    const o = x as Record<string, unknown>;
    if (typeof o !== 'object' || o === null || !SHAPE_KEYS.every((k) => typeof o[k] === 'number' && Number.isFinite(o[k]) && (o[k] as number) > 0)) return [];
    return [Object.fromEntries(SHAPE_KEYS.map((k) => [k, o[k]])) as unknown as JailLimits];
  });
}

interface Slot {
  key: string;
  dir: string;
  jail: DockerJail;
  body: CreateBody;
  shape: string;
  readyAt: string;
  /** Set once a run took it: from then on its run's ender destroys it. */
  taken: boolean;
}

interface ShapeState {
  image: string;
  limits: JailLimits;
  ready: Slot[];
  filling: number;
  lastWanted: number;
  /**
   * Ready jails this shape is kept at: the pool's size for a primed shape; one for a shape only
   * asked for (learned, or kept from a previous daemon), doubled each time a spawn takes one, up
   * to the size — a one-off shape costs one idle jail, not `size` of them.
   */
  target: number;
}

const JAIL_IDS = JAIL_USER.split(':').map(Number) as [number, number];

export class WarmPool implements JailDriver {
  private readonly shapes = new Map<string, ShapeState>();
  /** Every slot this pool made and has not destroyed: kept by sweep, whatever its state. */
  private readonly owned = new Set<string>();
  private readonly inflight = new Set<Promise<void>>();
  private executables: Promise<Set<string>> | undefined;
  private closed = false;
  private started = false;
  private backoffMs = 0;
  private lastWanted = 0;
  private saving: Promise<void> = Promise.resolve();
  private backoffUntil = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly maxShapes: number;
  private readonly fillConcurrency: number;

  constructor(private readonly o: WarmPoolOptions) {
    this.maxShapes = o.maxShapes ?? 4;
    this.fillConcurrency = o.fillConcurrency ?? 2;
  }

  get size(): number {
    return this.o.size;
  }

  /** Begins filling (after the supervisor's reconcile swept what a dead one left). */
  async start(): Promise<void> {
    this.started = true;
    if (this.o.size <= 0) return;
    const image = await this.o.driver.ensureImage();
    // Oldest first, so the most recently asked shape ends up the most recently wanted.
    const kept = this.o.shapesFile ? readShapes(this.o.shapesFile).slice(0, this.maxShapes).reverse() : [];
    for (const limits of this.o.prime ?? []) this.#want(image, limits, this.o.size);
    for (const limits of kept) this.#want(image, limits);
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
    await this.saving;
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    const idle = [...this.shapes.values()].flatMap((s) => s.ready.splice(0));
    await Promise.all(idle.map((s) => this.#destroy(s)));
  }

  info(): Promise<EngineInfo> {
    return this.o.driver.info();
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
    if (spec.artifacts.length > 0 || spec.brokerDir === undefined) return null;
    const image = await this.o.driver.ensureImage();
    if (spec.image !== undefined && spec.image !== image) return null;
    if (!(await this.#runnable(spec.argv[0] ?? ''))) return null;
    // The checks the cold path's create makes of a spec (the assignment quotes every value,
    // but an argv with NUL or an env name that is not an identifier must be refused, not run).
    if (!renderCreateBody(spec, image, this.o.driver.owner).ok) return null;
    const key = this.#want(image, spec.limits);
    const shape = this.shapes.get(key)!;
    const slot = shape.ready.shift();
    if (!slot) return null;
    slot.taken = true;
    // Asked for again and served: keep more of it ready (the refill below makes them).
    shape.target = Math.min(this.o.size, shape.target * 2);
    // The engine's account is read again while the supervisor saves the record and opens the
    // socket; start() waits for it before the child exists. The refill waits for the start, so
    // making the next slot does not hold up this one.
    const recheck = this.#recheck(slot, spec);
    recheck.catch(() => {});
    const verified: JailVerified = { ...slot.jail.verified!, pooled: { slot: slot.key, readyAt: slot.readyAt, assignedAt: new Date().toISOString() } };
    this.o.onEvent?.({ type: 'jail.pool_assigned', runId: spec.runId, slot: slot.key, containerId: verified.containerId });
    return new PooledJail(slot, spec, verified, recheck, () => this.#pump(), () => this.owned.delete(slot.key));
  }

  /**
   * Only an argv[0] the cold path would find in brig's own image (an absolute path it holds,
   * or a name on its PATH): a missing one must fail as the cold path fails, at start.
   */
  async #runnable(argv0: string): Promise<boolean> {
    this.executables ??= this.o.driver.childPlan().then((plan) => new Set(plan.entries.filter((e) => (e.kind === 'host' && (e.mode & 0o111) !== 0) || (e.kind === 'link' && e.dest.startsWith('bin/'))).map((e) => `/${e.dest}`)));
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

  /**
   * Marks a shape as wanted (least recently wanted shapes past maxShapes are let go); a shape
   * new to the pool is kept at `target` ready jails (default one).
   */
  #want(image: string, limits: JailLimits, target = 1): string {
    const key = shapeKey(image, limits);
    // Strictly increasing: shapes wanted in the same millisecond keep their order.
    const now = Math.max(Date.now(), this.lastWanted + 1);
    this.lastWanted = now;
    const known = this.shapes.get(key);
    const s = known ?? { image, limits: { ...limits }, ready: [], filling: 0, lastWanted: now, target: Math.max(1, Math.min(this.o.size, target)) };
    s.lastWanted = now;
    this.shapes.set(key, s);
    if (!known) this.#saveShapes();
    const byAge = [...this.shapes.entries()].sort((a, b) => b[1].lastWanted - a[1].lastWanted);
    for (const [k, old] of byAge.slice(this.maxShapes)) {
      this.shapes.delete(k);
      for (const slot of old.ready.splice(0)) void this.#destroy(slot);
    }
    this.#pump();
    return key;
  }

  /** The shapes kept, most recently wanted first (best effort: the pool works without the file). */
  #saveShapes(): void {
    const file = this.o.shapesFile;
    if (!file) return;
    const shapes = [...this.shapes.values()].sort((a, b) => b.lastWanted - a.lastWanted).map((s) => Object.fromEntries(SHAPE_KEYS.map((k) => [k, s.limits[k]])));
    this.saving = this.saving.then(() => writeFileAtomic(file, `${JSON.stringify(shapes)}\n`).catch(() => {}));
  }

  /** Starts fills until every shape holds its target (bounded concurrency, backoff after a failure). */
  #pump(): void {
    if (this.closed || this.o.size <= 0) return;
    const wait = this.backoffUntil - Date.now();
    if (wait > 0) {
      this.retryTimer ??= setTimeout(() => ((this.retryTimer = undefined), this.#pump()), wait).unref();
      return;
    }
    for (const [key, s] of this.shapes) {
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
    const key = `${POOL_KEY_PREFIX}${crypto.randomBytes(6).toString('hex')}`;
    const dir = path.join(this.o.brokersDir, key);
    this.owned.add(key);
    let jail: DockerJail | undefined;
    try {
      await this.#slotDir(dir);
      const spec: JailSpec = { runId: key, leaseId: 'pool', rootRunId: key, argv: ['/bin/sh', '-c', WAITER], env: { ...SLOT_ENV }, limits: s.limits, artifacts: [], brokerDir: dir, inputs: [], image: s.image };
      const rendered = renderCreateBody(spec, s.image, this.o.driver.owner);
      if (!rendered.ok) throw rendered.error;
      jail = (await this.o.driver.create(spec)) as DockerJail;
      await jail.start();
      if (!(await waiterReady(jail, 15_000))) throw new BrigError('jail_failed', 'the pooled jail\'s waiter did not start');
      jail.clearTails();
      const slot: Slot = { key, dir, jail, body: rendered.value, shape, readyAt: new Date().toISOString(), taken: false };
      // A waiter that exits before its run (killed, out of memory) takes its slot with it.
      void jail.wait().then(
        () => !slot.taken && this.#discard(slot, 'exited'),
        () => !slot.taken && this.#discard(slot, 'lost'),
      );
      this.backoffMs = 0;
      if (this.closed || this.shapes.get(shape) !== s) return await this.#destroy(slot);
      s.ready.push(slot);
    } catch (e) {
      await jail?.destroy().catch(() => {});
      await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => {});
      this.owned.delete(key);
      if (this.closed) return;
      this.backoffMs = Math.min(30_000, Math.max(250, this.backoffMs * 2));
      this.backoffUntil = Date.now() + this.backoffMs;
      this.o.onEvent?.({ type: 'jail.pool_fill_failed', code: toBrigError(e).code });
    }
  }

  /**
   * The slot's socket directory with its FIFO: as root, both the jail user's (0700, 0600) as a
   * run's socket is; otherwise 0711 and 0666 inside the private brokers directory, as a run's.
   */
  async #slotDir(dir: string): Promise<void> {
    await fs.promises.mkdir(dir, { mode: 0o700 });
    const fifo = path.join(dir, FIFO);
    if (!MKFIFO) throw new BrigError('jail_failed', "the warm pool needs coreutils' mkfifo (/usr/bin/mkfifo); install coreutils or run without --warm");
    await run(MKFIFO, ['-m', '0600', fifo], { env: {} }).catch((e: unknown) => {
      throw new BrigError('jail_failed', `making the pooled jail's FIFO failed: ${(e as Error).message}`);
    });
    if (process.getuid?.() === 0) {
      await fs.promises.chown(fifo, ...JAIL_IDS);
      await fs.promises.chown(dir, ...JAIL_IDS);
    } else {
      // Not root: the jail's uid cannot be given the files; the private brokers parent (0700) keeps others out.
      await fs.promises.chmod(fifo, 0o666);
      await fs.promises.chmod(dir, 0o711);
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
    slot.taken = true; // its waiter's exit is this destroy, not a discard
    await slot.jail.destroy().catch(() => {});
    await fs.promises.rm(slot.dir, { recursive: true, force: true }).catch(() => {});
    this.owned.delete(slot.key);
  }
}

/** The waiter's whole ready line on its stderr (the stream may bring it in pieces), within the bound. */
async function waiterReady(jail: DockerJail, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  let timer: NodeJS.Timeout | undefined;
  const first = await Promise.race([jail.firstOutput.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs)))]);
  clearTimeout(timer);
  while (first && Date.now() < end) {
    if (jail.tails().stderrTail.includes(READY)) return true;
    await new Promise((r) => setTimeout(r, 2));
  }
  return false;
}

/** Tries to open the FIFO's writing end without blocking until the waiter holds its reading end. */
async function openWriter(fifo: string, timeoutMs: number): Promise<number> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    } catch (e) {
      // ENXIO: no reader yet (the waiter is between its ready line and its open).
      if ((e as NodeJS.ErrnoException).code !== 'ENXIO' || Date.now() > end) {
        throw new BrigError('jail_failed', `the pooled jail's waiter is not listening (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      await new Promise((r) => setTimeout(r, 1));
    }
  }
}

/** One run's jail from the pool: the slot's container, assigned at start(). */
class PooledJail implements Jail {
  private assigned = false;

  constructor(
    private readonly slot: Slot,
    private readonly spec: JailSpec,
    readonly verified: JailVerified,
    private readonly recheck: Promise<void>,
    private readonly started: () => void,
    private readonly released: () => void,
  ) {}

  get runId(): string {
    return this.spec.runId;
  }
  get id(): string {
    return this.slot.jail.id;
  }
  get key(): string {
    return this.slot.key;
  }
  get brokerDir(): string {
    return this.slot.dir;
  }

  /** The run's inputs and assignment through the FIFO as one tar; the waiter execs the argv. */
  async start(): Promise<void> {
    if (this.assigned) throw new BrigError('jail_failed', 'a pooled jail is assigned once');
    this.assigned = true;
    try {
      await this.#assign();
    } finally {
      this.started();
    }
  }

  async #assign(): Promise<void> {
    await this.recheck;
    const archive = await inputsArchive([...(this.spec.inputs ?? []), { path: ASSIGN, data: assignScript(this.spec), mode: 0o444 }]);
    const fifo = path.join(this.slot.dir, FIFO);
    const fd = await openWriter(fifo, 1000);
    // Gone before the child runs: the waiter holds its end, and nothing in the jail can open it again.
    await fs.promises.rm(fifo, { force: true }).catch((e: unknown) => {
      fs.closeSync(fd);
      throw e;
    });
    const sock = new net.Socket({ fd, readable: false, writable: true });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new BrigError('jail_failed', 'the pooled jail did not take its assignment')), 10_000);
        sock.once('error', (e) => (clearTimeout(timer), reject(new BrigError('jail_failed', `handing the pooled jail its run failed: ${e.message}`))));
        sock.end(archive, () => (clearTimeout(timer), resolve()));
      });
    } finally {
      sock.destroy();
    }
  }

  wait(): Promise<JailExit> {
    return this.slot.jail.wait();
  }
  kill(): Promise<void> {
    return this.slot.jail.kill();
  }
  stop(graceMs: number): Promise<void> {
    return this.slot.jail.stop(graceMs);
  }
  tails(): StreamTails {
    return this.slot.jail.tails();
  }
  collect(destDir: string, caps: CollectCaps, from?: string, opts?: CollectOptions): Promise<CollectReport> {
    return this.slot.jail.collect(destDir, caps, from, opts);
  }
  async destroy(): Promise<void> {
    await this.slot.jail.destroy();
    await fs.promises.rm(this.slot.dir, { recursive: true, force: true });
    this.released();
  }
}

