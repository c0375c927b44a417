/**
 * The warm pool on Kubernetes (issue 33 item 8): pods made, verified and running before a run
 * asks for one, bound to a run only at claim and never reused.
 *
 * A pool pod is rendered from the same JailSpec path as a cold one (pod-spec.ts, `pooled`): the
 * same hardened containers, the limits of the shape it serves (memory × cpu × pids × /tmp ×
 * disk — never changed after the fact), brig's gate lifted only after the read-back verified,
 * and no argv, environment or input of any run: its child container's PID 1 is POOL_WAITER,
 * which runs nothing. The broker relay (pod-relay.js in the relay container) is exec'd while
 * the pod waits, connected to no socket until a run claims the pod.
 *
 * At claim (`create` with a spec that fits a kept shape exactly): the pod is read again and
 * verified against what was made (its containers running, never restarted, nothing drifted),
 * then start() binds the relay to the run's broker socket and execs POOL_ASSIGN into the child
 * container with the run's inputs and its argv and environment as one tar on stdin — never in
 * the pod object or the exec's URL. The exec's exit status (the runtime's) is the program's;
 * when it ends, brig sends SIGUSR1 to PID 1, which exits, and the kernel kills every process left
 * in the container's PID namespace; the end is believed only once an exec into the child's
 * container is refused because it no longer runs (a fact of the runtime, not a report from
 * inside). Then the outputs are read through the relay, as on the cold path, and the pod deleted.
 *
 * Guarantees: a run's data exists in a pod only after that run claimed it; one pod serves one
 * run and is deleted after it; a pod that drifted, restarted, stopped or lost its relay is
 * discarded, never handed out; a spec the pool cannot serve (artifacts, a repository, another
 * image, an environment name that is not a shell identifier, no broker) takes the cold path.
 * Not the cold path's: a pooled run does not survive a supervisor restart — its status lives in
 * the exec stream, so a reattached pooled pod is ended and its run fails (never re-run); an OOM
 * kill is read from the container's memory cgroup (`oom_kill`), not the kubelet's status.
 * Threat: a hostile child (it may signal PID 1, kill the exec'd wrapper, fork, ignore SIGTERM); a
 * pod changed between its making and its claim. Trusts: the API server, the kubelet's exec.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { BrigError, toBrigError } from '../../util/errors.js';
import type { EngineInfo, Jail, JailDriver, JailExit, JailLimits, JailSpec, JailVerified, LabelledResource, StreamTails, CollectCaps, CollectOptions, CollectReport } from '../types.js';
import { POOL_KEY_PREFIX } from '../types.js';
import { PoolShapes, type ShapeState } from '../docker/pool-shapes.js';
import type { PoolEvent } from '../docker/pool.js';
import { inputsArchive } from '../docker/docker-jail.js';
import { execInPod, execText, type ExecEnd, type ExecSession } from './kube-exec.js';
import { hostRelay } from './host-relay.js';
import { podStuck } from './pod-launch.js';
import { CONTAINER, LABEL_ASSIGNED, POOL_ASSIGN, RELAY, SHELL_NAME, labelValue, poolAssignment, verifyPod, type PodManifest } from './pod-spec.js';
import { killPastGrace, putEgressCa, readEgressCa, RELAY_ARGV, relayTargets, verifiedOf, type K8sJail, type K8sJailDriver } from './k8s-jail-driver.js';
import { TailBuffer } from '../docker/tail.js';
import type { LaunchedPod } from './pod-launch.js';

export interface K8sWarmPoolOptions {
  driver: K8sJailDriver;
  /** Ready pods kept per shape (0: off, every run cold). */
  size: number;
  /** Shapes kept warm at once (the least recently asked for goes first). Default 4. */
  maxShapes?: number;
  /** Pods made at once. Default 2. */
  fillConcurrency?: number;
  /** Limit shapes warmed before any run asks (the default profile's). */
  prime?: JailLimits[];
  /** Where the shapes asked for are kept for the next start. */
  shapesFile?: string;
  /** Ledgered by the composition (content-free). */
  onEvent?: (e: PoolEvent) => void;
  /** How long a new pod may take to run both containers (default 120 s). */
  readyTimeoutMs?: number;
}

/** One pool pod: made, verified, running, its relay exec'd and bound to nothing yet. */
export interface PodSlot {
  key: string;
  name: string;
  manifest: PodManifest;
  pod: LaunchedPod;
  readyAt: string;
  relay: { session: ExecSession; toPod: PassThrough };
  taken: boolean;
}

/** How long the end of a pooled pod's namespace may take to be seen before the pod is deleted. */
const END_CONFIRM_MS = 5_000;
/** An exec refused because the container no longer runs (the runtime's words, across versions). */
const NOT_RUNNING = /container not found|not running|CONTAINER_EXITED|cannot exec in a (stopped|deleted) state|no such container|container .* is not created or running|process already finished/i;

export class K8sWarmPool implements JailDriver {
  readonly #shapes: PoolShapes<PodSlot>;
  readonly #owned = new Set<string>();
  readonly #inflight = new Set<Promise<void>>();
  #closed = false;
  #started = false;
  #backoffMs = 0;
  #backoffUntil = 0;
  #retry: NodeJS.Timeout | undefined;

  constructor(private readonly o: K8sWarmPoolOptions) {
    this.#shapes = new PoolShapes<PodSlot>({ size: o.size, maxShapes: o.maxShapes ?? 4, ...(o.shapesFile ? { file: o.shapesFile } : {}) });
  }

  get size(): number {
    return this.o.size;
  }

  /** Begins filling (after the supervisor's reconcile swept what a dead one left). */
  async start(): Promise<void> {
    this.#started = true;
    if (this.o.size <= 0) return;
    const image = this.o.driver.image;
    for (const limits of this.o.prime ?? []) this.#want(image, limits, { learn: true, pinned: true, target: this.o.size });
    for (const k of this.#shapes.kept()) if (!k.agent) this.#want(image, k.limits, { learn: true });
  }

  stats(): { shape: string; ready: number; filling: number }[] {
    return [...this.#shapes.entries()].map(([shape, s]) => ({ shape, ready: s.ready.length, filling: s.filling }));
  }

  /** Resolves once every shape holds its ready pods (or the pool closed). */
  async filled(timeoutMs = 120_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!this.#closed && [...this.#shapes.values()].some((s) => s.ready.length < s.target)) {
      if (Date.now() > end) throw new BrigError('jail_failed', 'the warm pool did not fill in time');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Stops filling and deletes every pod no run took. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    await this.#shapes.saved();
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
    const idle = [...this.#shapes.values()].flatMap((s) => s.ready.splice(0));
    await Promise.all(idle.map((s) => this.#destroy(s)));
  }

  info(): Promise<EngineInfo> {
    return this.o.driver.info();
  }

  engineAnswers(timeoutMs: number): Promise<boolean> {
    return this.o.driver.engineAnswers(timeoutMs);
  }

  ensureImage(): Promise<string> {
    return this.o.driver.ensureImage();
  }

  attach(key: string): Promise<Jail | null> {
    return this.o.driver.attach(key);
  }

  listLabelled(): Promise<LabelledResource[]> {
    return this.o.driver.listLabelled();
  }

  /** The driver's sweep, keeping this pool's own pods (idle, filling or handed to a run). */
  sweep(isLive: (key: string) => boolean): Promise<{ containers: number; volumes: number }> {
    return this.o.driver.sweep((key) => this.#owned.has(key) || isLive(key));
  }

  /** A ready pod when the spec fits one exactly, else the cold path. */
  async create(spec: JailSpec): Promise<Jail> {
    const pooled = this.o.size > 0 && this.#started && !this.#closed ? this.#take(spec) : null;
    return pooled ?? this.o.driver.create(spec);
  }

  #take(spec: JailSpec): Jail | null {
    if (!fits(spec, this.o.driver.image)) return null;
    const key = this.#want(this.o.driver.image, spec.limits, { learn: spec.askedBy !== 'child' });
    const shape = key === null ? undefined : this.#shapes.get(key);
    const slot = shape?.ready.shift();
    if (!slot || !shape) return (this.#pump(), null);
    slot.taken = true;
    shape.target = Math.min(this.o.size, shape.target * 2);
    // Read again while the supervisor saves the record and opens the socket; start() waits for it.
    const recheck = this.#recheck(slot);
    recheck.catch(() => {});
    const verified: JailVerified = { ...verifiedOf(slot.pod), pooled: { slot: slot.key, readyAt: slot.readyAt, assignedAt: new Date().toISOString() } };
    this.o.onEvent?.({ type: 'jail.pool_assigned', runId: spec.runId, slot: slot.key, containerId: verified.containerId });
    setTimeout(() => this.#pump(), 50).unref();
    return new K8sPooledJail(this.o.driver, slot, spec, verified, recheck, () => this.#owned.delete(slot.key));
  }

  /** The pod as the API server holds it now: running both containers, never restarted, nothing drifted since it was made. */
  async #recheck(slot: PodSlot): Promise<void> {
    const pod = await this.o.driver.api.getPod(slot.name);
    if (!pod) throw new BrigError('jail_failed', `the pooled pod ${slot.name} is gone`);
    const drift = verifyPod(slot.manifest, pod, { started: true });
    if (drift.length > 0) throw new BrigError('jail_unverified', `the pooled pod ${slot.name} drifted from what was made (${drift.map((d) => d.field).join(', ')})`, { data: { drift: drift.map((d) => d.field) } });
    const why = notReady(pod);
    if (why) throw new BrigError('jail_failed', `the pooled pod ${slot.name} is not as made: ${why}`);
  }

  #want(image: string, limits: JailLimits, o: { learn: boolean; pinned?: boolean; target?: number }): string | null {
    const wanted = this.#shapes.want(image, limits, o);
    if (!wanted) return null;
    for (const slot of wanted.dropped) void this.#destroy(slot);
    this.#pump();
    return wanted.key;
  }

  #pump(): void {
    if (this.#closed || this.o.size <= 0) return;
    const wait = this.#backoffUntil - Date.now();
    if (wait > 0) {
      this.#retry ??= setTimeout(() => ((this.#retry = undefined), this.#pump()), wait).unref();
      return;
    }
    for (const [key, s] of this.#shapes.entries()) {
      while (s.ready.length + s.filling < s.target && this.#inflight.size < (this.o.fillConcurrency ?? 2)) {
        s.filling++;
        const p = this.#fill(key, s).finally(() => {
          s.filling--;
          this.#inflight.delete(p);
          this.#pump();
        });
        this.#inflight.add(p);
      }
    }
  }

  async #fill(shape: string, s: ShapeState<PodSlot>): Promise<void> {
    const key = `${POOL_KEY_PREFIX}${crypto.randomBytes(6).toString('hex')}`;
    this.#owned.add(key);
    let name: string | undefined;
    try {
      const made = await this.o.driver.makePoolPod(key, s.limits);
      name = made.pod.name;
      await this.#running(name);
      const toPod = new PassThrough();
      const session = await execInPod(this.o.driver.api, name, RELAY, RELAY_ARGV, { stdin: toPod });
      const slot: PodSlot = { key, name, manifest: made.manifest, pod: made.pod, readyAt: new Date().toISOString(), relay: { session, toPod }, taken: false };
      // A relay that ends while the pod waits takes its pod with it.
      void session.done.then(
        (e) => !slot.taken && this.#discard(slot, `relay exited ${e.exitCode}`),
        () => !slot.taken && this.#discard(slot, 'relay lost'),
      );
      this.#backoffMs = 0;
      if (this.#closed || this.#shapes.get(shape) !== s) return await this.#destroy(slot);
      s.ready.push(slot);
    } catch (e) {
      this.#owned.delete(key);
      if (name) await this.o.driver.api.deletePod(name).catch(() => undefined);
      if (this.#closed) return;
      this.#backoffMs = Math.min(30_000, Math.max(250, this.#backoffMs * 2));
      this.#backoffUntil = Date.now() + this.#backoffMs;
      this.o.onEvent?.({ type: 'jail.pool_fill_failed', code: toBrigError(e).code });
    }
  }

  /** Until both containers of a new pool pod run (a pod that cannot run fails the fill). */
  async #running(name: string): Promise<void> {
    const until = Date.now() + (this.o.readyTimeoutMs ?? 120_000);
    for (;;) {
      const pod = await this.o.driver.api.getPod(name);
      if (!pod) throw new BrigError('jail_failed', `the pool pod ${name} is gone`);
      const stuck = podStuck(pod);
      if (stuck) throw new BrigError('jail_failed', `the pool pod ${name} cannot run: ${stuck.reason}`);
      if (notReady(pod) === null) return;
      if (Date.now() > until) throw new BrigError('jail_failed', `the pool pod ${name} did not run within ${Math.round((this.o.readyTimeoutMs ?? 120_000) / 1000)} s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  #discard(slot: PodSlot, reason: string): void {
    for (const s of this.#shapes.values()) {
      const i = s.ready.indexOf(slot);
      if (i >= 0) s.ready.splice(i, 1);
    }
    if (!this.#closed) this.o.onEvent?.({ type: 'jail.pool_discarded', slot: slot.key, reason });
    void this.#destroy(slot);
    this.#pump();
  }

  async #destroy(slot: PodSlot): Promise<void> {
    slot.taken = true;
    slot.relay.session.close();
    await this.o.driver.api.deletePod(slot.name).catch(() => undefined);
    this.#owned.delete(slot.key);
  }
}

/** Whether the pool can serve a spec exactly as the cold path would (else it goes cold, unchanged). */
export function fits(spec: JailSpec, image: string): boolean {
  if (spec.artifacts.length > 0 || spec.repoDir !== undefined || spec.brokerDir === undefined) return false;
  if (spec.image !== undefined && spec.image !== image) return false;
  if (spec.argv.length === 0 || spec.argv.some((a) => a.includes('\0'))) return false;
  return Object.entries(spec.env).every(([k, v]) => SHELL_NAME.test(k) && !v.includes('\0'));
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

/** Null when both containers run and neither ever restarted; else what is not so. */
function notReady(pod: Obj): string | null {
  const statuses = ((obj(pod.status).containerStatuses as Obj[] | undefined) ?? []).map(obj);
  for (const name of [CONTAINER, RELAY]) {
    const cs = statuses.find((c) => c.name === name);
    if (!cs) return `${name}: no status yet`;
    if (!obj(cs.state).running) return `${name}: not running (${Object.keys(obj(cs.state)).join(', ') || 'no state'})`;
    if (Number(cs.restartCount ?? 0) > 0) return `${name}: restarted`;
  }
  return null;
}

/** The Jail a run gets from the pool: its program exec'd into a pod made before it. */
export class K8sPooledJail implements Jail {
  readonly runId: string;
  readonly id: string;
  readonly key: string;
  #session: ExecSession | undefined;
  #end: Promise<JailExit> | undefined;
  /** The program's stdout, its tail kept as the cold path keeps its log's (the exec carries stderr apart). */
  readonly #stdout: TailBuffer;
  #stderr: { tail: string; bytes: number } = { tail: '', bytes: 0 };
  #exited = false;
  #destroyed = false;
  #relay: { close(): void } | undefined;
  readonly #inner: K8sJail;

  constructor(
    private readonly driver: K8sJailDriver,
    private readonly slot: PodSlot,
    private readonly spec: JailSpec,
    readonly verified: JailVerified,
    private readonly recheck: Promise<void>,
    private readonly onDestroyed: () => void,
  ) {
    this.runId = spec.runId;
    this.id = slot.name;
    this.key = slot.key;
    // Reading the outputs and deleting the pod are the cold path's own (the relay's tar).
    this.#inner = driver.jailFor(spec.runId, slot.name, spec.brokerDir);
    this.#stdout = new TailBuffer(driver.tailBytes);
  }

  /** Verified again, the relay bound to the run's socket, the run's assignment exec'd: its program starts. */
  async start(): Promise<void> {
    if (this.#session) return;
    await this.recheck;
    const files = [...(this.spec.inputs ?? []), { path: '.brig-assign', data: poolAssignment(this.spec.argv, this.spec.env), mode: 0o600 }];
    const tar = await inputsArchive(files, { outDir: false });
    // The egress CA (a run whose gate inspects TLS) is in /run/brig before the program starts.
    const ca = await readEgressCa(this.spec.brokerDir);
    if (ca) await putEgressCa(this.driver.api, this.slot.name, ca);
    this.#bindRelay();
    const session = await execInPod(this.driver.api, this.slot.name, CONTAINER, POOL_ASSIGN, { stdin: tar });
    this.#session = session;
    session.stdout.on('data', (c: Buffer) => this.#stdout.push(c));
    // For an operator's `kubectl get pods -l brig.dev/assigned-run=…` (not on the run's path).
    void this.driver.api.patchPod(this.slot.name, { metadata: { labels: { [LABEL_ASSIGNED]: labelValue(this.runId) } } }).catch(() => undefined);
  }

  /** The pre-started relay, bound to the run's broker.sock; if it ends while the run goes on, the cold path's relay loop takes over. */
  #bindRelay(): void {
    const { session, toPod } = this.slot.relay;
    const relay = hostRelay({ input: session.stdout, output: toPod, sockets: relayTargets(this.spec.brokerDir!) });
    this.#relay = { close: () => (relay.close(), session.close()) };
    void Promise.all([relay.done.catch(() => undefined), session.done.catch(() => undefined)]).then(() => {
      if (!this.#exited && !this.#destroyed) this.#inner.startRelay();
    });
  }

  wait(): Promise<JailExit> {
    this.#end ??= this.#watch();
    return this.#end;
  }

  async #watch(): Promise<JailExit> {
    if (!this.#session) throw new BrigError('jail_failed', 'wait() before start()');
    let end: ExecEnd | undefined;
    let cut: unknown;
    try {
      end = await this.#session.done;
    } catch (e) {
      cut = e;
    }
    try {
      await this.#endNamespace();
      this.#exited = true;
      if (!end) throw new BrigError('jail_failed', `the pooled pod's exec was cut before its program's status came: ${toBrigError(cut).message}`);
      // A 137's last stderr line is the wrapper's OOM count (POOL_ASSIGN), not the program's.
      const oom = end.exitCode === 137 ? /(?:^|\n)oom_kill (\d+)\n?$/.exec(end.stderr) : null;
      const stderrTail = oom ? end.stderr.slice(0, oom.index) : end.stderr;
      this.#stderr = { tail: stderrTail, bytes: end.stderrBytes - (end.stderr.length - stderrTail.length) };
      return { exitCode: end.exitCode, oomKilled: oom !== null && Number(oom[1]) > 0 };
    } finally {
      this.#relay?.close();
      this.#inner.stopRelay();
    }
  }

  /**
   * The program ended (its wrapper exited, was killed, or the stream was cut): PID 1 is told to
   * exit (SIGUSR1; the wrapper's helper usually did already), so the kernel kills what is left of
   * the child, and the end is believed once an exec into the child's container is refused because
   * it no longer runs — the runtime's fact, not a report from inside. One still running past
   * END_CONFIRM_MS (a PID 1 held back) is deleted with its pod and the run fails.
   */
  async #endNamespace(): Promise<void> {
    const until = Date.now() + END_CONFIRM_MS;
    for (let tries = 0; ; tries++) {
      const running = await execText(this.driver.api, this.slot.name, CONTAINER, ['kill', '-USR1', '1']).then(
        () => true,
        (e: unknown) => (NOT_RUNNING.test((e as Error).message) ? false : undefined),
      );
      if (running === false) return;
      if (Date.now() > until) {
        await this.destroy();
        throw new BrigError('jail_failed', `the pooled pod ${this.slot.name} did not end after its program: deleted, its outputs with it`);
      }
      // An exec that ran sent SIGUSR1 itself (the wrapper's helper may not have yet): look again at once, then every 50 ms.
      if (tries > 0) await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** SIGKILL to every process of the child (all but PID 1, which then ends the namespace). */
  async kill(): Promise<void> {
    if (this.#exited || this.#destroyed) return;
    if (!this.#session) return this.destroy();
    await execText(this.driver.api, this.slot.name, CONTAINER, ['kill', '-KILL', '-1']).catch(() => undefined);
  }

  async stop(graceMs: number): Promise<void> {
    if (this.#exited || this.#destroyed) return;
    if (!this.#session) return this.destroy();
    await execText(this.driver.api, this.slot.name, CONTAINER, ['kill', '-TERM', '-1']).catch(() => undefined);
    await killPastGrace(this, graceMs);
  }

  tails(): StreamTails {
    return { stdoutTail: this.#stdout.text(), stderrTail: this.#stderr.tail, stdoutBytes: this.#stdout.total, stderrBytes: this.#stderr.bytes };
  }

  collect(destDir: string, caps: CollectCaps, from?: string, opts?: CollectOptions): Promise<CollectReport> {
    return this.#inner.collect(destDir, caps, from, opts);
  }

  async destroy(): Promise<void> {
    if (this.#destroyed) return;
    this.#destroyed = true;
    this.#relay?.close();
    this.#session?.close();
    await this.#inner.destroy();
    this.onDestroyed();
  }
}
