/**
 * The supervisor: every child's life from admission to exactly one end reason.
 *
 * Guarantees: a run is admitted only within depth / per-parent / tree / queue limits; its
 * record moves queued → starting → running → materializing → ended and is persisted
 * atomically at each step; it ends exactly once (INV-8: `#claimEnd` is the only door and is
 * taken synchronously); after its end its container, volume, broker socket and lease are
 * released. Events and ledger entries carry ids, counts, enums and durations only (INV-7).
 * Threat: a child (or a spawn loop of children) trying to outlive, out-spawn or widen its
 * limits; a supervisor crash leaving orphans. Trusts: the JailDriver to apply the hardened
 * profile, the LeasePort to attenuate, the broker to authenticate the caller's run id.
 * Fails closed: any error while starting ends the run `failed` and releases what it got.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Jail } from '../jail/types.js';
import { BrigError, err, ok, toBrigError, type Result } from '../util/errors.js';
import { decideAdmission, nextToStart } from './admission.js';
import { EventBus } from './event-bus.js';
import { healthActions, retentionActions } from './health.js';
import { buildPacket, collectOutputs, jailSpecFor } from './launch.js';
import { systemClock, type BrokerHandle, type Clock, type LeaseGrant, type SupervisorDeps } from './ports.js';
import { ProgressFork, progressLineFor, realTimers } from './progress-fork.js';
import { createRunRecord, newRunId, requestHash } from './record.js';
import { RunStore } from './run-store.js';
import { elapsedMs, end, transition } from './state-machine.js';
import { effectiveMaxSteps, runTimeoutMs } from './timeouts.js';
import {
  DEFAULT_SETTINGS,
  SpawnRequestSchema,
  type EndReason,
  type EventsOptions,
  type KillOptions,
  type PendingEnd,
  type KilledBy,
  type ListFilter,
  type ReconcileReport,
  type RunRecord,
  type SpawnContext,
  type SpawnPacket,
  type SpawnRequest,
  type SpawnRequestInput,
  type SteerOutcome,
  type Supervisor,
  type SupervisorEvent,
  type SupervisorSettings,
  type WaitOptions,
} from './types.js';
import { handleChildCall } from './child-calls.js';
import { resumeRun, steerRun } from './control.js';

interface Live {
  jail?: Jail;
  broker?: BrokerHandle;
  lease?: LeaseGrant;
  /** The lease's capabilities; after a reattach only these are known (from the packet). */
  caps: readonly string[];
  steers: string[];
}

export interface EndOptions {
  killedBy?: KilledBy;
  error?: { code: string; message: string };
  /**
   * Output collection (default true): whatever the run wrote is kept however it ended
   * (INV-8); a kill or timeout stops the container first and marks the result partial.
   */
  collect?: boolean;
  exitCode?: number;
}

export interface ShutdownOptions {
  /** How long running children may go on finishing (default: the drainMs setting). */
  drainMs?: number;
  /** Called about every 2 s while draining, with the runs still live. */
  onWaiting?: (runs: readonly RunRecord[], remainingMs: number) => void;
  /** Aborting it ends the drain at once (a second Ctrl-C). */
  signal?: AbortSignal;
}

export interface ShutdownReport {
  /** Runs that ended on their own while draining. */
  drained: string[];
  /** Runs killed (killedBy system) when the drain bound passed, or queued ones never started. */
  killed: string[];
}

/** End reasons where the supervisor cut the run short: its outputs are what it had so far. */
const CUT_SHORT: ReadonlySet<EndReason> = new Set(['killed', 'watchdog_timeout', 'ghost_sweep', 'swept']);

export class BrigSupervisor implements Supervisor {
  readonly settings: SupervisorSettings;
  readonly store: RunStore;
  readonly deps: SupervisorDeps;
  readonly clock: Clock;
  readonly bus = new EventBus();
  readonly runs = new Map<string, RunRecord>();
  readonly live = new Map<string, Live>();
  readonly #fork: ProgressFork;
  readonly #ending = new Set<string>();
  readonly #preparing = new Set<string>();
  /** Runs a resume is in flight for (control.ts). */
  readonly resuming = new Set<string>();
  readonly #waiters = new Map<string, (() => void)[]>();
  /** Runs blocked on their own children (sync spawn, wait): how many such calls each has in flight. */
  readonly #blocked = new Map<string, number>();
  #draining = false;
  readonly #bg = new Set<Promise<unknown>>();
  #tick: NodeJS.Timeout | undefined;
  #retention: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  #closed = false;

  constructor(deps: SupervisorDeps) {
    this.deps = deps;
    this.settings = { ...DEFAULT_SETTINGS, ...(deps.settings ?? {}) };
    this.store = new RunStore(deps.paths.runs);
    this.clock = deps.clock ?? systemClock;
    this.#fork = new ProgressFork(deps.timers ?? realTimers);
  }

  // ── lifecycle of the supervisor ────────────────────────────────────────────────────────

  async start(): Promise<ReconcileReport> {
    await fs.mkdir(this.deps.paths.runs, { recursive: true, mode: 0o700 });
    await fs.mkdir(this.deps.paths.brokers, { recursive: true, mode: 0o711 });
    const report: ReconcileReport = { reattached: [], ghostSwept: [], swept: { containers: 0, volumes: 0 } };
    // An in-process (no-daemon) supervisor holds only the runs it spawns itself.
    if (this.deps.reconcile !== false) for (const r of await this.store.loadAll()) this.runs.set(r.id, r);
    if (this.deps.reconcile !== false && this.deps.results?.sweepInterrupted) {
      const live = (id: string) => this.runs.get(id)?.status !== undefined && this.runs.get(id)?.status !== 'ended';
      const swept = await this.deps.results.sweepInterrupted(live).catch(() => ({ removed: 0, bytes: 0 }));
      if (swept.removed > 0) this.deps.ledger.append({ type: 'results.interrupted_swept', entries: swept.removed, bytes: swept.bytes });
      report.interrupted = swept;
    }
    for (const r of this.deps.reconcile === false ? [] : [...this.runs.values()]) {
      if (r.status === 'ended' || r.status === 'queued') continue;
      const jail = await this.deps.jail.attach(r.id).catch(() => null);
      // Running (or exited while no supervisor watched): watch it again; an exited one ends
      // at once and is collected like any other. Mid-materialization: redo the collection.
      if (jail && (r.status === 'running' || r.status === 'materializing') && (await this.#reattach(r, jail))) {
        report.reattached.push(r.id);
        continue;
      }
      if (jail) await jail.destroy().catch(() => {});
      await this.endRun(r.id, 'ghost_sweep', { collect: false, error: { code: 'internal', message: `supervisor restarted; the run was ${r.status} and has no container` } });
      report.ghostSwept.push(r.id);
    }

    await this.#verifyResumable(report);
    // `isLive` true means "leave it": unknown runs are kept when told not to sweep them
    // (tests share one engine with other suites).
    if (this.deps.reconcile !== false) report.swept = await this.deps.jail.sweep((id) => {
      const r = this.runs.get(id);
      return r ? r.status !== 'ended' : this.deps.sweepUnknown === false;
    });
    this.#unsubscribe = this.deps.leases.onRevoked((leaseId, by) => this.#onLeaseRevoked(leaseId, by));
    const tickMs = this.deps.tickMs ?? 1000;
    this.#tick = setInterval(() => void this.#healthTick().catch(() => {}), tickMs);
    this.#tick.unref();
    this.#retention = setInterval(() => void this.retentionSweep().catch(() => {}), this.settings.sweepIntervalMs);
    this.#retention.unref();
    this.#pump();
    return report;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#tick);
    clearInterval(this.#retention);
    this.#unsubscribe?.();
    this.#fork.stopAll();
    for (const l of this.live.values()) await l.broker?.close().catch(() => {});
    this.live.clear();
    this.bus.close();
    // Pending waits return the run as it stands; the run itself goes on (a restart reattaches).
    for (const ws of this.#waiters.values()) for (const w of ws) w();
    this.#waiters.clear();
  }

  /**
   * Orderly stop: admit nothing new; end queued runs; let running children finish for up
   * to drainMs; then kill the rest (killedBy system). Every run that ended is collected
   * like any other (its outputs are kept), its container, volume and socket released.
   * Then close(). Nothing is left for a restart to reattach.
   */
  async shutdown(o: ShutdownOptions = {}): Promise<ShutdownReport> {
    this.#draining = true;
    const report: ShutdownReport = { drained: [], killed: [] };
    const stop = { code: 'shutting_down', message: 'the supervisor shut down before the run could start or finish' };
    const queued = [...this.runs.values()].filter((r) => r.status === 'queued');
    await Promise.all(queued.map(async (r) => (await this.endRun(r.id, 'killed', { killedBy: 'system', error: stop })) && report.killed.push(r.id)));
    const live = () => [...this.runs.values()].filter((r) => r.status !== 'ended');
    const before = new Set(live().map((r) => r.id));
    const deadline = Date.now() + (o.drainMs ?? this.settings.drainMs);
    let nextNote = 0;
    while (live().length > 0 && Date.now() < deadline && !o.signal?.aborted) {
      if (Date.now() >= nextNote) {
        o.onWaiting?.(live(), deadline - Date.now());
        nextNote = Date.now() + 2000;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    // All claimed in one tick (endRun claims synchronously), so each reads killedBy system,
    // not `parent` through its parent's cascade.
    const left = live().filter((r) => !this.#ending.has(r.id));
    const ends = left.map((r) => this.endRun(r.id, 'killed', { killedBy: 'system', error: stop }));
    (await Promise.all(ends)).forEach((killed, i) => killed && report.killed.push(left[i]!.id));
    await this.idle();
    for (const id of before) if (!report.killed.includes(id) && this.runs.get(id)?.status === 'ended') report.drained.push(id);
    this.deps.ledger.append({ type: 'supervisor.shutdown', drained: report.drained.length, killed: report.killed.length });
    await this.close();
    return report;
  }

  /** Waits for background work (ends, starts) in flight; for tests and orderly shutdown. */
  async idle(): Promise<void> {
    while (this.#bg.size > 0) await Promise.allSettled([...this.#bg]);
  }

  // ── the public surface ─────────────────────────────────────────────────────────────────

  async spawn(input: SpawnRequestInput, ctx: SpawnContext = {}): Promise<Result<RunRecord, BrigError>> {
    const parsed = SpawnRequestSchema.safeParse(input);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      return err(new BrigError('invalid_input', `spawn request: ${first?.path.join('.') || '(root)'}: ${first?.message ?? 'invalid'}`));
    }
    const req = parsed.data;
    if (this.#draining || this.#closed) {
      return err(new BrigError('shutting_down', 'the supervisor is shutting down and admits no new run'));
    }
    // INV-3: the parent's history crosses only as a bounded summary; over the bound is refused, not cut.
    const maxSummaryChars = this.settings.parentSummaryMaxTokens * 4;
    if (req.parent_summary !== undefined && req.parent_summary.length > maxSummaryChars) {
      return err(new BrigError('invalid_input', `parent_summary is ${req.parent_summary.length} characters; the bound is ${maxSummaryChars} (parentSummaryMaxTokens ${this.settings.parentSummaryMaxTokens} × 4)`, {
        data: { limit: maxSummaryChars, current: req.parent_summary.length },
        hint: 'Summarize the parent history further, or send include_parent_history `none`.',
      }));
    }
    const parent = ctx.parentRunId ? (this.runs.get(ctx.parentRunId) ?? null) : null;
    if (ctx.parentRunId && (!parent || parent.status === 'ended')) {
      return err(new BrigError('not_running', `parent run ${ctx.parentRunId} is not running`, { data: { status: parent?.status ?? 'unknown' } }));
    }
    if (parent && (req.artifact_refs.length > 0 || req.image !== undefined)) {
      return err(new BrigError('capability_denied', 'a child cannot hand host paths or pick an image for a grandchild', { data: { what: 'artifact_refs/image' } }));
    }
    for (const a of req.artifact_refs) {
      const st = await fs.stat(path.resolve(a)).catch(() => null);
      if (!st || !(st.isFile() || st.isDirectory())) {
        return err(new BrigError('artifact_missing', `artifact ${path.basename(a)} is not an existing regular file or directory`, { data: { artifact: a } }));
      }
    }
    const callerId = ctx.callerId ?? ctx.parentRunId ?? 'operator';
    const live = [...this.runs.values()].filter((r) => r.status !== 'ended');
    const decision = decideAdmission(
      live,
      {
        depth: parent ? parent.depth + 1 : 1,
        parentRunId: parent?.id ?? null,
        rootRunId: parent?.rootRunId ?? null,
        callerId,
        agent: req.agent,
        requestHash: requestHash(req),
      },
      this.settings,
      this.#blockedSet(),
    );
    if (decision.kind === 'refuse') {
      this.deps.ledger.append({ type: 'run.refused', code: decision.error.code, parentRunId: parent?.id ?? null, depth: parent ? parent.depth + 1 : 1 });
      return err(decision.error);
    }
    if (decision.kind === 'duplicate') return req.async ? ok(this.runs.get(decision.runId)!) : this.wait(decision.runId);

    const maxSteps = effectiveMaxSteps(this.settings, req.max_steps);
    const now = this.clock.now();
    const rec = createRunRecord({
      id: newRunId(),
      parent,
      callerId,
      agent: req.agent,
      kind: req.kind,
      label: req.label ?? null,
      task: req.task,
      requestHash: requestHash(req),
      now,
      timeoutMs: runTimeoutMs(this.settings, maxSteps, req.timeout),
      maxSteps,
      async: req.async,
      expectedOutputs: req.expected_outputs,
      resumeOf: ctx.resumeOf ?? null,
    });
    // Admission is decided and recorded in the same tick (no await in between), so 100
    // concurrent requests see each other and the caps hold. An admitted run is `starting`
    // at once; `#preparing` keeps the pump and the health tick off it until it is on disk.
    if (decision.kind === 'admit') rec.status = 'starting';
    this.runs.set(rec.id, rec);
    this.#preparing.add(rec.id);
    const prepared = await this.#prepareSpawn(rec, req);
    if (!prepared.ok) {
      this.runs.delete(rec.id);
      this.#preparing.delete(rec.id);
      this.#pump();
      return prepared;
    }
    try {
      await this.store.save(rec);
    } catch (e) {
      this.runs.delete(rec.id);
      this.#preparing.delete(rec.id);
      await prepared.value.rollback().catch(() => {});
      this.#pump();
      return err(toBrigError(e));
    }
    this.#preparing.delete(rec.id);
    this.#emit(rec, { type: 'spawned', parentRunId: rec.parentRunId, agent: rec.agent, kind: rec.kind, queued: decision.kind === 'queue' });
    if (decision.kind === 'admit') this.#bgRun(this.#launch(rec.id));
    this.#pump();
    if (ctx.signal) this.#killOnAbort(rec.id, ctx.signal);
    return req.async ? ok(this.runs.get(rec.id)!) : this.wait(rec.id);
  }

  /** The caller gave up (Ctrl-C, an aborted request): the run is killed by the operator and collected. */
  #killOnAbort(runId: string, signal: AbortSignal): void {
    const kill = () => void this.kill(runId, { confirm: true, by: 'operator' });
    if (signal.aborted) return kill();
    signal.addEventListener('abort', kill, { once: true });
    const list = this.#waiters.get(runId) ?? [];
    list.push(() => signal.removeEventListener('abort', kill));
    this.#waiters.set(runId, list);
  }

  /**
   * Runs fn while `runId` is blocked on its own children: it stops counting against the
   * global cap, so the children it waits for can start (admission.ts).
   */
  async whileBlocked<T>(runId: string, fn: () => Promise<T>): Promise<T> {
    this.#blocked.set(runId, (this.#blocked.get(runId) ?? 0) + 1);
    this.#pump();
    try {
      return await fn();
    } finally {
      const n = (this.#blocked.get(runId) ?? 1) - 1;
      if (n <= 0) this.#blocked.delete(runId);
      else this.#blocked.set(runId, n);
    }
  }

  #blockedSet(): ReadonlySet<string> {
    return new Set(this.#blocked.keys());
  }

  async wait(runId: string, opts: WaitOptions = {}): Promise<Result<RunRecord, BrigError>> {
    const r = await this.#adoptOrErr(runId);
    if (r instanceof BrigError) return this.#pollForeign(runId, opts);
    if (!r) return this.deps.reconcile === false ? this.#pollForeign(runId, opts) : err(new BrigError('run_not_found', `no run ${runId}`));
    if (r.status === 'ended') return ok(r);
    await new Promise<void>((resolve) => {
      const list = this.#waiters.get(runId) ?? [];
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', done);
        resolve();
      };
      list.push(done);
      this.#waiters.set(runId, list);
      if (opts.timeoutMs !== undefined) timer = setTimeout(done, opts.timeoutMs);
      opts.signal?.addEventListener('abort', done, { once: true });
    });
    return ok(this.runs.get(runId)!);
  }

  async list(filter: ListFilter = {}): Promise<RunRecord[]> {
    const all = new Map<string, RunRecord>();
    // In-process mode holds only its own runs; the rest are read from disk, read-only.
    if (this.deps.reconcile === false) for (const r of await this.store.loadAll()) all.set(r.id, r);
    for (const r of this.runs.values()) all.set(r.id, r);
    return [...all.values()]
      .filter((r) => !filter.status || filter.status.includes(r.status))
      .filter((r) => !filter.rootRunId || r.rootRunId === filter.rootRunId)
      .filter((r) => !filter.parentRunId || r.parentRunId === filter.parentRunId)
      .filter((r) => !filter.label || r.label === filter.label)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async get(runId: string): Promise<RunRecord | undefined> {
    return this.runs.get(runId) ?? (this.deps.reconcile === false ? await this.store.load(runId) : undefined);
  }

  /** In-process mode: another process supervises this run; watch its record on disk. */
  async #pollForeign(runId: string, opts: WaitOptions): Promise<Result<RunRecord, BrigError>> {
    const deadline = opts.timeoutMs !== undefined ? Date.now() + opts.timeoutMs : Infinity;
    for (;;) {
      const r = await this.store.load(runId);
      if (!r) return err(new BrigError('run_not_found', `no run ${runId}`));
      if (r.status === 'ended' || Date.now() >= deadline || opts.signal?.aborted) return ok(r);
      await new Promise((res) => setTimeout(res, 250));
    }
  }

  async #adoptOrErr(runId: string): Promise<RunRecord | BrigError | undefined> {
    try {
      return await this.#adopt(runId);
    } catch (e) {
      return toBrigError(e);
    }
  }

  /** In-process mode: take an ended run from disk so it can be resumed or waited on. */
  async #adopt(runId: string): Promise<RunRecord | undefined> {
    const mine = this.runs.get(runId);
    if (mine || this.deps.reconcile !== false) return mine;
    const r = await this.store.load(runId);
    if (!r) return undefined;
    if (r.status !== 'ended') {
      throw new BrigError('daemon_unavailable', `run ${runId} is supervised by another process`, { hint: 'Start `brig serve` and run brig commands against it.' });
    }
    this.runs.set(r.id, r);
    return r;
  }

  async kill(runId: string, opts: KillOptions): Promise<Result<RunRecord, BrigError>> {
    if (opts.confirm !== true) return err(new BrigError('invalid_input', 'kill needs explicit confirmation', { hint: 'Pass --confirm (or confirm: true).' }));
    const r = await this.#adoptOrErr(runId);
    if (r instanceof BrigError) return err(r);
    if (!r) return err(new BrigError('run_not_found', `no run ${runId}`));
    if (r.status === 'ended' || this.#ending.has(runId)) return err(this.#notRunning(r, 'kill'));
    await this.endRun(runId, 'killed', { killedBy: opts.by ?? 'operator' });
    return ok(this.runs.get(runId)!);
  }

  async steer(runId: string, message: string, opts: { by?: KilledBy } = {}): Promise<Result<SteerOutcome, BrigError>> {
    const r = await this.#adoptOrErr(runId);
    if (r instanceof BrigError) return err(r);
    if (!r) return err(new BrigError('run_not_found', `no run ${runId}`));
    if (r.status !== 'running' || this.#ending.has(runId)) return err(this.#notRunning(r, 'steer'));
    return steerRun(this, r, message, opts.by ?? 'operator');
  }

  async resume(runId: string): Promise<Result<RunRecord, BrigError>> {
    const r = await this.#adoptOrErr(runId);
    if (r instanceof BrigError) return err(r);
    if (!r) return err(new BrigError('run_not_found', `no run ${runId}`));
    // Claimed synchronously: two concurrent resumes cannot both re-spawn the pinned bytes.
    if (this.resuming.has(runId)) return err(new BrigError('resume_unavailable', `run ${runId} is being resumed`, { data: { runId, reason: 'already_resumed' } }));
    this.resuming.add(runId);
    try {
      return await resumeRun(this, r);
    } finally {
      this.resuming.delete(runId);
    }
  }

  events(opts: EventsOptions = {}): AsyncIterableIterator<SupervisorEvent> {
    return this.bus.subscribe(opts);
  }

  /** A broker call from a run's child (the broker authenticated `runId` by its token). */
  handleChildCall(runId: string, method: string, params: unknown): Promise<unknown> {
    return handleChildCall(this, runId, method, params);
  }

  // ── internals shared with child-calls / launch ───────────────────────────────────────

  async update(runId: string, fn: (r: RunRecord) => RunRecord): Promise<RunRecord> {
    return this.#update(runId, fn);
  }

  emit(r: RunRecord, ev: Record<string, unknown> & { type: SupervisorEvent['type'] }): void {
    this.#emit(r, ev);
  }

  /**
   * Ends a run with one reason. The claim is synchronous, so two enders (an exit racing a
   * kill, the watchdog racing the health monitor) cannot both pass it.
   */
  async endRun(runId: string, reason: EndReason, o: EndOptions = {}): Promise<boolean> {
    const r = this.runs.get(runId);
    if (!r || r.status === 'ended' || this.#ending.has(runId)) return false;
    this.#ending.add(runId);
    try {
      this.#fork.stop(runId);
      const handle = this.live.get(runId);
      if (handle?.jail && o.collect !== false) {
        await this.#materialize(runId, handle.jail, {
          reason,
          ...(o.killedBy ? { killedBy: o.killedBy } : {}),
          ...(o.error ? { error: o.error } : {}),
          ...(o.exitCode !== undefined ? { exitCode: o.exitCode } : {}),
        });
      }
      const cur = this.runs.get(runId)!;
      if (reason === 'completed' && cur.error) reason = 'failed';
      const resumable = reason === 'watchdog_timeout' && cur.kind === 'script' && cur.hasCheckpoint;
      const ended = end(cur, {
        reason,
        now: this.clock.now(),
        resumable,
        ...(o.killedBy ? { killedBy: o.killedBy } : {}),
        ...(o.error ? { error: o.error } : {}),
      });
      if (!ended.ok) return false;
      const { pendingEnd: _done, ...rest } = ended.value;
      const rec: RunRecord = { ...rest, exitCode: o.exitCode ?? cur.exitCode };
      this.runs.set(runId, rec);
      await this.store.save(rec).catch(() => {});
      // Children go first, attributed to their parent, before the parent's lease revoke
      // cascades to theirs (which would read as a `system` kill).
      const children = [...this.runs.values()].filter((c) => c.parentRunId === runId && c.status !== 'ended');
      await Promise.all(children.map((c) => this.endRun(c.id, 'killed', { killedBy: 'parent' })));
      await this.#release(rec, handle);
      this.live.delete(runId);
      this.#announceEnd(rec);
      const ws = this.#waiters.get(runId) ?? [];
      this.#waiters.delete(runId);
      for (const w of ws) w();
      try {
        await this.deps.hooks?.onEnded?.(rec);
      } catch {
        this.deps.ledger.append({ type: 'run.hook_failed', runId, hook: 'onEnded' });
      }
      return true;
    } finally {
      this.#ending.delete(runId);
      this.#pump();
    }
  }

  /** Removes results of ended runs past retention; ends ancient live runs `swept`. */
  async retentionSweep(): Promise<{ removed: string[]; swept: string[] }> {
    const { removeResults, endSwept } = retentionActions([...this.runs.values()], this.clock.now(), this.settings);
    const removed: string[] = [];
    for (const id of removeResults) {
      const r = this.runs.get(id)!;
      if (r.resultDir === null && !r.resumable) continue;
      await this.store.removeFile(id, 'out');
      if (r.resultDir) await fs.rm(r.resultDir, { recursive: true, force: true }).catch(() => {});
      await this.store.removeFile(id, 'script');
      await this.store.removeFile(id, 'checkpoint');
      await this.deps.results?.remove(r.rootRunId, id).catch(() => {});
      await this.#update(id, (x) => ({ ...x, resultDir: null, resumable: false }));
      this.deps.ledger.append({ type: 'run.results_swept', runId: id, rootRunId: r.rootRunId });
      removed.push(id);
    }
    for (const id of endSwept) if (await this.endRun(id, 'swept', {})) removed.push(id);
    return { removed, swept: endSwept };
  }

  // ── private ──────────────────────────────────────────────────────────────────────────

  /** A resumable run survives a restart only with its pinned bytes and checkpoint on disk. */
  async #verifyResumable(report: ReconcileReport): Promise<void> {
    report.resumable = [];
    report.orphaned = [];
    for (const r of [...this.runs.values()]) {
      if (r.status !== 'ended' || !r.resumable || r.resumedBy) continue;
      const reason = !(await this.store.read(r.id, 'script')) ? 'script_missing' : !(await this.store.read(r.id, 'checkpoint')) ? 'checkpoint_missing' : null;
      if (reason === null) {
        report.resumable.push(r.id);
        continue;
      }
      report.orphaned.push({ runId: r.id, reason });
      await this.#update(r.id, (x) => ({ ...x, resumable: false, error: { code: 'resume_unavailable', message: reason } }));
      this.deps.ledger.append({ type: 'run.resume_orphaned', runId: r.id, rootRunId: r.rootRunId, reason });
    }
  }

  #notRunning(r: RunRecord, what: string): BrigError {
    return new BrigError('not_running', `Run ${r.id} is not running (status: ${r.status}) -- cannot ${what}`, {
      data: { runId: r.id, status: r.status, endReason: r.endReason },
      ...(what === 'steer' ? { hint: 'Use kill + spawn instead; `brig list` shows its status.' } : {}),
    });
  }

  async #prepareSpawn(rec: RunRecord, req: SpawnRequest): Promise<Result<{ rollback(): Promise<void> }, BrigError>> {
    try {
      await this.store.ensureDir(rec.id);
      await fs.writeFile(path.join(this.store.dir(rec.id), 'request.json'), JSON.stringify(req), { mode: 0o600 });
      if (req.kind === 'script' && req.script !== undefined) await this.store.write(rec.id, 'script', req.script);
      const carried = rec.resumeOf ? await this.store.read(rec.resumeOf, 'checkpoint') : null;
      if (carried) {
        await this.store.write(rec.id, 'checkpoint', carried);
        rec.hasCheckpoint = true;
      }
      const hook = await this.deps.hooks?.prepareSpawn?.(rec);
      return ok({
        rollback: async () => {
          await hook?.rollback().catch(() => {});
          await this.store.remove(rec.id);
        },
      });
    } catch (e) {
      await this.store.remove(rec.id).catch(() => {});
      return err(toBrigError(e));
    }
  }

  async loadRequest(runId: string): Promise<SpawnRequest | null> {
    return this.#loadRequest(runId);
  }

  async #loadRequest(runId: string): Promise<SpawnRequest | null> {
    try {
      return JSON.parse(await fs.readFile(path.join(this.store.dir(runId), 'request.json'), 'utf8')) as SpawnRequest;
    } catch {
      return null;
    }
  }

  async #update(runId: string, fn: (r: RunRecord) => RunRecord): Promise<RunRecord> {
    const next = fn(this.runs.get(runId)!);
    this.runs.set(runId, next);
    await this.store.save(next);
    return next;
  }

  #emit(r: RunRecord, ev: Record<string, unknown> & { type: SupervisorEvent['type'] }): void {
    const full = { runId: r.id, rootRunId: r.rootRunId, path: r.path, depth: r.depth, timestamp: this.clock.now().toISOString(), ...ev } as SupervisorEvent;
    this.bus.publish(full);
    const { progress, ...flat } = full as SupervisorEvent & { progress?: { stepsExecuted: number; elapsedMs: number } };
    const ledgerEv: Record<string, string | number | boolean | null | readonly string[]> = {};
    for (const [k, v] of Object.entries(flat)) if (v !== undefined) ledgerEv[k] = v as string;
    if (progress) {
      ledgerEv.stepsExecuted = progress.stepsExecuted;
      ledgerEv.elapsedMs = progress.elapsedMs;
    }
    this.deps.ledger.append({ ...ledgerEv, type: `run.${ev.type}` });
  }

  #announceEnd(r: RunRecord): void {
    const runtimeMs = elapsedMs(r, this.clock.now());
    if (r.endReason === 'completed') this.#emit(r, { type: 'completed', runtimeMs, stepsExecuted: r.stepsExecuted });
    else this.#emit(r, { type: 'failed', terminalStatus: r.terminalStatus, endReason: r.endReason, code: r.error?.code ?? null });
    this.#emit(r, {
      type: 'lifecycle_ended',
      endReason: r.endReason,
      killedBy: r.killedBy,
      runtimeMs,
      stepsExecuted: r.stepsExecuted,
      outputBytes: r.outputBytes,
      resumable: r.resumable,
    });
  }

  #bgRun(p: Promise<unknown>): void {
    const q = p.catch((e) => this.deps.ledger.append({ type: 'run.internal_error', code: toBrigError(e).code }));
    this.#bg.add(q);
    void q.finally(() => this.#bg.delete(q));
  }

  /** Starts whatever queued runs now fit. */
  #pump(): void {
    if (this.#closed) return;
    const live = [...this.runs.values()].filter((r) => r.status !== 'ended' && !this.#ending.has(r.id));
    // Preparing admitted runs count as active (they are `starting`); preparing queued ones
    // are not candidates yet.
    const startable = live.filter((r) => !(this.#preparing.has(r.id) && r.status === 'queued'));
    // The health tick keeps the process alive exactly while some run is alive: a library
    // caller awaiting wait() must not see the event loop drain under a watchdog.
    if (live.length > 0) this.#tick?.ref();
    else this.#tick?.unref();
    for (const id of nextToStart(startable, this.settings, this.#blockedSet())) {
      const t = transition(this.runs.get(id)!, 'starting', this.clock.now());
      if (!t.ok) continue;
      this.runs.set(id, t.value);
      this.#bgRun(this.#launch(id));
    }
  }

  async #launch(runId: string): Promise<void> {
    const handle: Live = { caps: [], steers: [] };
    this.live.set(runId, handle);
    const brokerDir = path.join(this.deps.paths.brokers, runId);
    // A kill can land at any await below: after each, a run that is no longer `starting`
    // gives back whatever this launch acquired so far (endRun releases what it saw).
    const gone = () => this.#ending.has(runId) || this.runs.get(runId)?.status !== 'starting';
    const abandon = async () => {
      await handle.jail?.kill().catch(() => {});
      await handle.jail?.destroy().catch(() => {});
      await handle.broker?.close().catch(() => {});
      await fs.rm(brokerDir, { recursive: true, force: true }).catch(() => {});
      if (handle.lease) await this.deps.leases.revoke(handle.lease.leaseId, 'system', 'run_ended').catch(() => {});
    };
    try {
      await this.store.save(this.runs.get(runId)!);
      const req = await this.#loadRequest(runId);
      if (!req) throw new BrigError('internal', 'stored request missing');
      const rec = this.runs.get(runId)!;
      const parentLease = rec.parentRunId ? this.live.get(rec.parentRunId)?.lease?.leaseId ?? this.runs.get(rec.parentRunId)?.leaseId ?? null : null;
      const lease = await this.deps.leases.issue({
        runId,
        rootRunId: rec.rootRunId,
        depth: rec.depth,
        parentLeaseId: parentLease,
        timeoutMs: rec.timeoutMs,
        graceMs: this.settings.leaseGraceMs,
        ...(req.profile ? { profile: req.profile } : {}),
        ...(req.caps ? { caps: req.caps } : {}),
        ...(req.limits ? { limits: req.limits } : {}),
      });
      if (!lease.ok) throw lease.error;
      handle.lease = lease.value;
      handle.caps = lease.value.caps;
      if (gone()) return await abandon();
      // The watchdog fires a grace before the bearer expires, also when a parent's lease
      // leaves its child less time than it asked for (INV-1: limits only shrink).
      const leaseLeftMs = Date.parse(lease.value.expiresAt) - this.clock.now().getTime() - this.settings.leaseGraceMs;
      const timeoutMs = Math.max(1, Math.min(rec.timeoutMs, lease.value.limits.timeoutMs, leaseLeftMs));
      // Limits only shrink (INV-1): a lease's maxSteps of 0 means no steps, not "unbounded".
      const maxSteps = Math.min(rec.maxSteps, lease.value.limits.maxSteps);
      const resultCapBytes = lease.value.limits.resultBytes;
      const childCap = lease.value.limits.maxChildren;
      await this.#update(runId, (x) => ({ ...x, leaseId: lease.value.leaseId, timeoutMs, maxSteps, resultCapBytes, childCap }));
      const packet = buildPacket(this.runs.get(runId)!, req, lease.value, this.settings);
      await fs.mkdir(brokerDir, { recursive: true, mode: 0o755 });
      await fs.chmod(brokerDir, 0o755);
      await fs.writeFile(path.join(this.store.dir(runId), 'packet.json'), JSON.stringify(packet), { mode: 0o600 });
      handle.broker = await this.deps.broker.openRun({ runId, leaseId: lease.value.leaseId, dir: brokerDir, packet });
      if (gone()) return await abandon();
      const spec = jailSpecFor(this.runs.get(runId)!, req, lease.value, packet, brokerDir, await this.store.read(runId, 'script'));
      handle.jail = await this.deps.jail.create(spec);
      if (gone()) return await abandon();
      await handle.jail.start();
      if (gone()) return await abandon();
      const running = transition(this.runs.get(runId)!, 'running', this.clock.now());
      if (!running.ok) return await abandon();
      await this.#update(runId, () => ({ ...running.value, lastProgressAt: running.value.startedAt }));
      if (this.runs.get(runId)!.status === 'ended') return; // killed while saving: endRun released it
      this.#emit(running.value, { type: 'started' });
      this.#watch(runId, handle.jail);
    } catch (e) {
      const be = toBrigError(e);
      if (!(await this.endRun(runId, 'failed', { collect: false, error: { code: be.code, message: be.message } }))) await abandon();
    }
  }

  /** Starts the progress fork and waits for the container to exit in the background. */
  #watch(runId: string, jail: Jail): void {
    this.#fork.start(runId, this.settings.progressIntervalMs, () => {
      const r = this.runs.get(runId);
      if (!r || r.status === 'ended') return this.#fork.stop(runId);
      const now = this.clock.now();
      const progress = {
        runId,
        agentId: r.agent,
        progressLine: progressLineFor(r.status, r.stepsExecuted),
        elapsedMs: elapsedMs(r, now),
        stepsExecuted: r.stepsExecuted,
        timestamp: now.toISOString(),
      };
      this.#emit(r, { type: 'progress', progress });
    });
    this.#bgRun(
      jail.wait().then(
        (exit) => {
          const error = exit.exitCode === 0 ? undefined : { code: 'child_failed', message: exit.oomKilled ? 'the child ran out of memory' : `the child exited with code ${exit.exitCode}` };
          return this.endRun(runId, exit.exitCode === 0 ? 'completed' : 'failed', { exitCode: exit.exitCode, ...(error ? { error } : {}) });
        },
        (e) => this.endRun(runId, 'failed', { error: { code: toBrigError(e).code, message: 'lost the container' } }),
      ),
    );
  }

  async #reattach(r: RunRecord, jail: Jail): Promise<boolean> {
    try {
      const packet = JSON.parse(await fs.readFile(path.join(this.store.dir(r.id), 'packet.json'), 'utf8')) as SpawnPacket;
      if (!r.leaseId) return false;
      if (r.status === 'materializing') {
        // It had ended and was being collected when the supervisor died: finish that end.
        this.live.set(r.id, { jail, caps: packet.lease.caps, steers: [] });
        const p = r.pendingEnd ?? { reason: 'failed' as const, error: { code: 'internal', message: 'the supervisor restarted while collecting this run' } };
        this.#bgRun(this.endRun(r.id, p.reason, { ...p }));
        return true;
      }
      // The child's capabilities are those its packet was written with (the lease's own).
      const handle: Live = { jail, caps: packet.lease.caps, steers: [] };
      this.live.set(r.id, handle);
      // The child keeps its token; the broker verifies it against the persisted lease.
      handle.broker = await this.deps.broker.openRun({
        runId: r.id,
        leaseId: r.leaseId,
        dir: path.join(this.deps.paths.brokers, r.id),
        packet,
      });
      this.#watch(r.id, jail);
      return true;
    } catch {
      this.live.delete(r.id);
      return false;
    }
  }

  /**
   * Collects what the run wrote, however it ends. A run cut short is stopped first (so its
   * files hold still) and its result marked partial. The pending end is saved before the
   * copy starts: a crash mid-way is redone by the next start, never left half done.
   */
  async #materialize(runId: string, jail: Jail, pending: PendingEnd): Promise<void> {
    const cutShort = CUT_SHORT.has(pending.reason);
    if (cutShort) await jail.kill().catch(() => {});
    const cur = this.runs.get(runId)!;
    const t = transition(cur, 'materializing', this.clock.now());
    await this.#update(runId, (x) => ({ ...(t.ok ? t.value : x), pendingEnd: pending, ...(cutShort ? { partial: true } : {}) })).catch(() => {});
    const patch = await collectOutputs(this, runId, jail);
    await this.#update(runId, (x) => ({ ...x, ...patch }));
  }

  async #release(r: RunRecord, handle: Live | undefined): Promise<void> {
    await handle?.jail?.kill().catch(() => {});
    await handle?.jail?.destroy().catch(() => {});
    if (!handle?.jail && r.startedAt !== null) {
      const j = await this.deps.jail.attach(r.id).catch(() => null);
      await j?.destroy().catch(() => {});
    }
    await handle?.broker?.close().catch(() => {});
    await fs.rm(path.join(this.deps.paths.brokers, r.id), { recursive: true, force: true }).catch(() => {});
    if (!r.resumable) {
      await this.store.removeFile(r.id, 'checkpoint').catch(() => {});
      await this.store.removeFile(r.id, 'script').catch(() => {});
    }
    if (r.leaseId) await this.deps.leases.revoke(r.leaseId, 'system', `run_${r.endReason}`).catch(() => {});
  }

  async #healthTick(): Promise<void> {
    const live = [...this.runs.values()].filter((r) => r.status !== 'ended' && !this.#ending.has(r.id) && !this.#preparing.has(r.id));
    for (const a of healthActions(live, this.clock.now(), this.settings, [...this.runs.values()])) {
      const error = a.code ? { code: a.code, message: 'waited too long for a slot' } : undefined;
      this.#bgRun(this.endRun(a.runId, a.reason, { ...(a.killedBy ? { killedBy: a.killedBy } : {}), ...(error ? { error } : {}) }));
    }
  }

  #onLeaseRevoked(leaseId: string, by: string): void {
    // An operator's revoke reads as an operator kill; anything else (expiry, abuse) as system.
    const killedBy: KilledBy = by === 'operator' ? 'operator' : 'system';
    for (const r of this.runs.values()) {
      if (r.leaseId === leaseId && r.status !== 'ended' && !this.#ending.has(r.id)) {
        this.#bgRun(this.endRun(r.id, 'killed', { killedBy, error: { code: 'lease_expired', message: `the lease was revoked by ${killedBy}` } }));
      }
    }
  }
}
