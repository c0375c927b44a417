/**
 * The supervisor: every child's life from admission to exactly one end reason.
 *
 * Guarantees: a run is admitted only within depth / per-parent / tree / queue limits
 * (intake.ts); its record moves queued → starting → running → materializing → ended and is
 * persisted atomically at each step; it ends exactly once through one door (ender.ts, INV-8)
 * and its container, volume, broker socket and lease are released; what it wrote is kept
 * however it ended. Events and ledger entries carry ids, counts, enums and durations only
 * (INV-7). Threat: a child (or a spawn loop of children) trying to outlive, out-spawn or widen
 * its limits; a supervisor crash leaving orphans. Trusts: the JailDriver to apply the hardened
 * profile, the LeasePort to attenuate, the broker to authenticate the caller's run id.
 * Fails closed: any error while starting ends the run `failed` and releases what it got.
 *
 * An engine outage bounds what waits on it: a kill is answered once it is recorded and the
 * engine is found silent (its end follows when the engine is back), and a drain ends within
 * its bound plus a window for the kills, cut short when the engine is silent — what is left
 * then is saved as pending for the next start (engine-silence.ts, ender.ts).
 *
 * This file is the facade: it wires the parts (run table, intake, starter, ender, reconcile,
 * upkeep, views) and speaks the Supervisor role. The parts get the table and a RunActions
 * port, never this class.
 */
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { childCallHandlers, type ChildCallHandlers } from './child-calls.js';
import { resumeRun, steerRun } from './control.js';
import { replayAgent } from './agent-replay.js';
import { RunEnder } from './ender.js';
import { untilDoneOrSilent } from './engine-silence.js';
import { checkSpawn, intake, loadRequest, storageState } from './intake.js';
import { checkRefArtifact } from './ref-artifact.js';
import { childLimit, parentKey, slotKey, type StorageState } from './admission.js';
import { AdmissionSwitch } from './admission-pause.js';
import { isActive } from './state-machine.js';
import type { AdmissionChange, AdmissionState, RunPage } from '../protocol/index.js';
import { systemClock, type SupervisorDeps } from './ports.js';
import { ProgressFork, realTimers } from './progress-fork.js';
import { ensureDirs, reconcile, retentionSweep } from './reconcile.js';
import { RunStore } from './run-store.js';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { llmService } from './llm-calls.js';
import { historyOf, PingPongs, ReplyBus, sendToRun, type HistoryPage, type SendOptions, type SendOutcome } from './sessions.js';
import { RunTable, type RunActions, type RunPorts } from './run-table.js';
import { resolveSettings } from './settings.js';
import { RunStarter } from './starter.js';
import { endRevoked, healthTick } from './upkeep.js';
import { LocalViews, OwnedViews, type RunViews } from './views.js';
import type {
  EventsOptions,
  KillOptions,
  KilledBy,
  ListFilter,
  ReconcileReport,
  ResumeOptions,
  RunRecord,
  SpawnContext,
  SpawnPacket,
  SpawnRequest,
  SpawnRequestInput,
  SteerOutcome,
  Supervisor,
  SupervisorEvent,
  SupervisorSettings,
  WaitOptions,
} from './types.js';
import { mark } from '../util/timing.js';
import { RunStopwatch } from './run-timing.js';

export interface ShutdownOptions {
  /** How long running children may go on finishing (default: the drainMs setting). */
  drainMs?: number;
  /** Called about every 2 s while draining, with the runs still live. */
  onWaiting?: (runs: readonly RunRecord[], remainingMs: number) => void;
  /** Aborting it ends the drain at once (a second Ctrl-C). */
  signal?: AbortSignal;
  /**
   * The operator's queued runs: `keep` (default) leaves them queued on disk for the next
   * start, as a crash would; `kill` ends them `killed` (killedBy system) now.
   */
  queue?: 'keep' | 'kill';
}

export interface ShutdownReport {
  /** Runs that ended on their own while draining. */
  drained: string[];
  /** Runs killed (killedBy system) when the drain bound passed, or queued ones (`queue: 'kill'`). */
  killed: string[];
  /** Queued runs left queued on disk for the next start (`queue: 'keep'`). */
  kept: string[];
  /**
   * Runs killed whose end the engine kept waiting past the kill window (it did not answer):
   * recorded as pending (`materializing`), collected and released by the next start.
   */
  unfinished: string[];
}

/**
 * After the drain, how long the kills may take on top of an agent's salvage grace before the
 * supervisor stops anyway (sooner when the engine does not answer): a stop is bounded
 * whatever the engine does, and what is left is finished by the next start.
 */
export const KILL_WINDOW_MS = 10_000;

/** The supervisor as the composition root holds it: the role plus its operations. */
export interface SupervisorCore extends Supervisor {
  readonly settings: Readonly<SupervisorSettings>;
  /**
   * Start in two steps, a daemon serving between them: resolves once the runs on disk are
   * loaded and every live child's broker is open again (what serving needs); `reconciled`
   * resolves once the slow rest is done (a dead supervisor's releases, ghost sweeps, the
   * engine sweep, the requeue of runs caught starting). `start()` is both, awaited.
   */
  begin(): Promise<{ reconciled: Promise<ReconcileReport> }>;
  /** Drain, then close: nothing is left for a restart to reattach but the kept queue. */
  shutdown(o?: ShutdownOptions): Promise<ShutdownReport>;
  /** Waits for background work (ends, starts) in flight. */
  idle(): Promise<void>;
  retentionSweep(): Promise<{ removed: string[]; swept: string[] }>;
  /** The broker's handlers for a running child's calls, one per method (child-calls.ts). */
  readonly childCalls: ChildCallHandlers;
  /** Runs fn while `runId` waits on work done for it (a graph it started): it frees its global slot meanwhile. */
  whileBlocked<T>(runId: string, fn: () => Promise<T>): Promise<T>;
  /**
   * A graph takes one child slot of its caller run for as long as it runs (its nodes count in
   * the graph's own group: admission.ts slotKey). Refused `children_exceeded` when the caller
   * has no free slot; answers the release (idempotent), which lets queued children start.
   */
  holdChildSlot(callerRunId: string, holder: string): Result<() => void, BrigError>;
  /**
   * May this spawner (a running run; null: the operator) hand `ref` to a child? The one rule
   * `artifact_refs` obey (ref-artifact.ts): a run its own descendants' refs, under refs.read
   * and artifacts.read; anything else `ref_not_found` or `capability_denied`.
   */
  mayHandRef(ref: string, spawnerRunId: string | null): Promise<Result<void, BrigError>>;
  /** The in-memory record now (records are replaced on change, never mutated in place). */
  peek(runId: string): RunRecord | undefined;
  peekAll(): RunRecord[];
  /** The home's storage as admission sees it: free space, and the writes held for want of it (metrics). */
  storage(): StorageState;
  /**
   * The operator's admission switch (admission-pause.ts): paused, running children go on and
   * new spawns wait in the queue; resumed, the queue starts in order. Kept across a restart.
   */
  readonly admission: {
    status(): AdmissionState;
    pause(c?: AdmissionChange): AdmissionState;
    resume(c?: AdmissionChange): AdmissionState;
  };
}

export function createSupervisor(deps: SupervisorDeps): SupervisorCore {
  return new BrigSupervisor(deps);
}

class BrigSupervisor implements SupervisorCore {
  readonly settings: Readonly<SupervisorSettings>;
  readonly #deps: SupervisorDeps;
  readonly #table: RunTable;
  readonly #fork: ProgressFork;
  readonly #views: RunViews;
  readonly #ender: RunEnder;
  readonly #starter: RunStarter;
  readonly #actions: RunActions;
  readonly #llm: RunPorts['llm'];
  readonly childCalls: ChildCallHandlers;
  readonly #replies = new ReplyBus();
  readonly #pingPongs = new PingPongs();
  readonly #admission: AdmissionSwitch;
  /** Each agent run's offered tools, read once from its packet. */
  readonly #surfaces = new Map<string, readonly string[] | undefined>();
  #tick: NodeJS.Timeout | undefined;
  #retention: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  #closed = false;
  #draining = false;
  /** Start-up's phase two while it runs (close waits for it, bounded). */
  #tidying: Promise<unknown> | undefined;
  /** Run directories without a record found too young to remove at start: the retention sweep looks again. */
  #halfMade = new Set<string>();
  /** Aborted when the supervisor stops: ends waiting on the engine are left to the next start. */
  readonly #stopping = new AbortController();

  constructor(deps: SupervisorDeps) {
    this.#deps = deps;
    this.settings = resolveSettings(deps.settings);
    this.#table = new RunTable(new RunStore(deps.paths.runs, undefined, deps.writer), deps.ledger, deps.clock ?? systemClock);
    this.#fork = new ProgressFork(deps.timers ?? realTimers);
    this.#admission = new AdmissionSwitch(deps.paths.admission, this.#table.ledger, this.#table.clock);
    this.#views = deps.reconcile === false ? new LocalViews(this.#table) : new OwnedViews(this.#table);
    this.#actions = {
      spawn: (req, ctx) => this.spawn(req, ctx),
      wait: (id, o) => this.wait(id, o),
      kill: (id, o) => this.kill(id, o),
      steer: (id, m, o) => this.steer(id, m, o),
      send: (id, t, o) => this.send(id, t, o),
      history: (id, o) => this.history(id, o),
      endRun: (id, reason, o) => this.#ender.endRun(id, reason, o),
      whileBlocked: (id, fn) => this.#whileBlocked(id, fn),
      loadRequest: (id) => loadRequest(this.#table, id),
    };
    this.#llm = llmService(this.#table, { models: deps.models, lastTools: new Map(), microCompactKeep: this.settings.microCompactKeep, surfaceOf: (id) => this.#surfaceOf(id), onReply: (id, r) => this.#replies.publish(id, r) });
    this.childCalls = childCallHandlers(this.#ports());
    const parts = { table: this.#table, deps, settings: this.settings, fork: this.#fork };
    this.#ender = new RunEnder({ ...parts, pump: () => this.#starter.pump(), stopping: this.#stopping.signal });
    this.#starter = new RunStarter({
      ...parts,
      actions: this.#actions,
      accepting: () => !this.#closed,
      // A drain starts none of the operator's queued runs (they are kept for the next start);
      // a draining parent's queued children may still start, so the parent can finish.
      holdRootQueue: () => this.#draining,
      paused: () => this.#admission.paused,
      // The health tick keeps the process alive exactly while some run is alive: a library
      // caller awaiting wait() must not see the event loop drain under a watchdog.
      onLive: (n) => (n > 0 ? this.#tick?.ref() : this.#tick?.unref()),
    });
  }

  // ── lifecycle of the supervisor ────────────────────────────────────────────────────────

  async start(): Promise<ReconcileReport> {
    return (await this.begin()).reconciled;
  }

  async begin(): Promise<{ reconciled: Promise<ReconcileReport> }> {
    await ensureDirs(this.#deps);
    // An in-process (no-daemon) supervisor holds only the runs it spawns itself.
    const rec = this.#deps.reconcile === false ? null : await reconcile({ ...this.#parts(), starter: this.#starter, finishEnd: (id) => this.#ender.finishEnd(id), stopped: () => this.#closed });
    mark('supervisor: reconciled (first phase)');
    this.#unsubscribe = this.#deps.leases.onRevoked((leaseId, by) => endRevoked(this.#table, this.#actions, leaseId, by));
    this.#tick = setInterval(() => healthTick(this.#table, this.settings, this.#actions, this.#admission.paused), this.#deps.tickMs ?? 1000);
    this.#tick.unref();
    this.#retention = setInterval(() => void this.retentionSweep().catch(() => {}), this.settings.sweepIntervalMs);
    this.#retention.unref();
    this.#starter.pump();
    if (!rec) return { reconciled: Promise.resolve({ reattached: [], ghostSwept: [], swept: { containers: 0, volumes: 0 } }) };
    this.#halfMade = rec.halfMade;
    const reconciled = rec.tidy().catch(() => rec.report);
    this.#tidying = reconciled;
    return { reconciled };
  }

  async close(): Promise<void> {
    this.#closed = true;
    // Start-up's phase two stops between its steps once closed; bounded, so a stuck engine call cannot hold the close.
    if (this.#tidying) await Promise.race([this.#tidying, new Promise((r) => setTimeout(r, 10_000).unref())]);
    // Ends already through the door's claim finish (announce, release) before the ledger
    // can close under them; bounded, and cut short when the engine does not answer: an end
    // waiting on it is left as saved (pending) for the next start.
    const through = () => this.#table.ending.size + this.#table.releasing.size;
    if (through() > 0) {
      // Deferred releases start now (idle() hurries them: nothing is left for them to yield to)
      // and the close goes on as soon as they are done — not at the next 50 ms look, which a
      // one-shot `brig spawn` paid after every run (~30 ms deferral and up to 50 ms of polling).
      const ended = (async () => {
        for (let i = 0; i < 200 && through() > 0; i++) {
          let look: NodeJS.Timeout | undefined;
          await Promise.race([this.#table.idle(), new Promise((r) => (look = setTimeout(r, 50)))]);
          // Cleared, not left to fire: a pending look would hold a one-shot's exit ~50 ms.
          clearTimeout(look);
        }
      })();
      await untilDoneOrSilent(ended, this.#answers());
    }
    this.#stopping.abort();
    clearInterval(this.#tick);
    clearInterval(this.#retention);
    this.#unsubscribe?.();
    this.#fork.stopAll();
    for (const l of this.#table.live.values()) {
      await l.broker?.close().catch(() => {});
      await l.egress?.close().catch(() => {});
    }
    this.#table.live.clear();
    this.#table.bus.close();
    this.#table.refusals.flush();
    // Pending waits return the run as it stands; the run itself goes on (a restart reattaches).
    this.#table.releaseWaiters();
  }

  /**
   * Orderly stop: admit nothing new; keep the operator's queued runs queued on disk for the
   * next start (`queue: 'kill'`: end them); let running children finish for up to drainMs;
   * then kill the rest (killedBy system). Every run that ended is collected
   * like any other (its outputs are kept), its container, volume and socket released.
   */
  async shutdown(o: ShutdownOptions = {}): Promise<ShutdownReport> {
    this.#draining = true;
    const stop = { code: 'shutting_down' as const, message: 'the supervisor shut down before the run could start or finish' };
    /** Each run this shutdown killed: whether its end went through (undefined: still under way). */
    const kills = new Map<string, boolean | undefined>();
    const killAll = (runs: RunRecord[]) => {
      // All claimed in one tick (the end door claims synchronously), so each reads killedBy
      // system, not `parent` through its parent's cascade.
      for (const r of runs) kills.set(r.id, undefined);
      return Promise.all(runs.map(async (r) => kills.set(r.id, await this.#ender.endRun(r.id, 'killed', { killedBy: 'system', error: stop }))));
    };
    // The operator's queued runs are on disk (their admission was durable): kept, they wait
    // for the next start as they would after a crash; a run's queued children go with their
    // parent (they may start while it drains, or end with it).
    const keep = o.queue !== 'kill';
    const kept = (r: RunRecord) => keep && r.status === 'queued' && r.parentRunId === null;
    if (!keep) await killAll(this.#table.all().filter((r) => r.status === 'queued'));
    const live = () => this.#table.all().filter((r) => r.status !== 'ended' && !kept(r));
    const before = new Set(live().map((r) => r.id));
    const deadline = Date.now() + (o.drainMs ?? this.settings.drainMs);
    for (let nextNote = 0; live().length > 0 && Date.now() < deadline && !o.signal?.aborted; ) {
      if (Date.now() >= nextNote) {
        o.onWaiting?.(live(), deadline - Date.now());
        nextNote = Date.now() + 2000;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    // The kills (and ends already under way) get a window, cut short when the engine does not
    // answer; then ends still waiting on it give up, saved as pending for the next start.
    const ends = Promise.all([killAll(live().filter((r) => !this.#table.ending.has(r.id))), this.idle()]);
    await untilDoneOrSilent(ends, this.#answers(), this.settings.agentStopGraceMs + KILL_WINDOW_MS);
    this.#stopping.abort();
    // Steps racing the stop let go at once; a call hung on a frozen engine is not waited for.
    await Promise.race([ends, new Promise((r) => setTimeout(r, 250))]);
    const report: ShutdownReport = { drained: [], killed: [], unfinished: [], kept: [] };
    for (const [id, killed] of kills) {
      if (killed) report.killed.push(id);
      else if (this.#table.get(id)?.status !== 'ended') report.unfinished.push(id);
    }
    for (const id of before) if (!kills.get(id) && this.#table.get(id)?.status === 'ended') report.drained.push(id);
    report.kept = this.#table.all().filter(kept).map((r) => r.id);
    this.#table.ledger.append({ type: 'supervisor.shutdown', drained: report.drained.length, killed: report.killed.length, unfinished: report.unfinished.length, kept: report.kept.length });
    await this.close();
    return report;
  }

  idle(): Promise<void> {
    return this.#table.idle();
  }

  storage(): StorageState {
    return storageState(this.#parts());
  }

  retentionSweep(): Promise<{ removed: string[]; swept: string[] }> {
    return retentionSweep(this.#parts(), this.#halfMade);
  }

  readonly admission: SupervisorCore['admission'] = {
    status: () => this.#admissionState(),
    pause: (c = {}) => {
      this.#admission.set(true, c, this.#queued().length);
      return this.#admissionState();
    },
    resume: (c = {}) => {
      if (this.#admission.set(false, c, this.#queued().length)) {
        // The wait while paused was the operator's: each queued run's queue clock starts now.
        const now = this.#table.clock.now().toISOString();
        for (const r of this.#queued()) this.#table.patch(r.id, (x) => ({ ...x, queuedAt: now }));
      }
      this.#starter.pump();
      return this.#admissionState();
    },
  };

  #queued(): RunRecord[] {
    return this.#table.all().filter((r) => r.status === 'queued');
  }

  #admissionState(): AdmissionState {
    return { ...this.#admission.state, queued: this.#queued().length };
  }

  // ── the public surface ─────────────────────────────────────────────────────────────────

  async check(input: SpawnRequestInput): Promise<Result<SpawnRequest, BrigError>> {
    const c = checkSpawn(this.#parts(), input);
    return c.ok ? ok(c.value.req) : c;
  }

  async spawn(input: SpawnRequestInput, ctx: SpawnContext = {}): Promise<Result<RunRecord, BrigError>> {
    if (this.#draining || this.#closed) return err(new BrigError('shutting_down', 'the supervisor is shutting down and admits no new run'));
    // A supervisor that does not own the home (a one-shot CLI, reconcile false) keeps no queue past itself.
    if (this.#admission.paused && this.#deps.reconcile === false) return err(this.#pausedHere());
    const t0 = this.#table.mono();
    const got = await intake(this.#parts(), input, ctx);
    if (!got.ok) {
      this.#starter.pump();
      return got;
    }
    const i = got.value;
    if (i.kind === 'duplicate') return i.async ? ok(this.#table.get(i.runId)!) : this.wait(i.runId);
    this.#table.timing.set(i.run.id, new RunStopwatch(this.#table.mono, t0));
    this.#table.mark(i.run.id, 'admitted');
    if (i.started) this.#table.background(this.#starter.launch(i.run.id));
    this.#starter.pump();
    if (ctx.signal) this.#killOnAbort(i.run.id, ctx.signal);
    return i.async ? ok(this.#table.get(i.run.id)!) : this.wait(i.run.id);
  }

  async wait(runId: string, opts: WaitOptions = {}): Promise<Result<RunRecord, BrigError>> {
    const r = await this.#views.adopt(runId);
    const elsewhere = r instanceof BrigError || !r ? this.#views.waitElsewhere(runId, opts) : null;
    if (elsewhere) return elsewhere;
    if (!r || r instanceof BrigError) return err(new BrigError('run_not_found', `no run ${runId}`));
    // `ended` is on the record before the end door has released and announced: a waiter
    // is told only once the door is through (its container gone, its end in the ledger).
    if (r.status === 'ended' && !this.#table.ending.has(runId)) return ok(r);
    await new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let off = () => {};
      const done = () => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', done);
        // A wait that timed out leaves nothing behind on a run that goes on.
        off();
        resolve();
      };
      off = this.#table.onEnded(runId, done);
      if (opts.timeoutMs !== undefined) timer = setTimeout(done, opts.timeoutMs);
      opts.signal?.addEventListener('abort', done, { once: true });
    });
    return ok(this.#table.get(runId)!);
  }

  async list(filter: ListFilter = {}): Promise<RunRecord[]> {
    return (await this.#views.list(filter)).runs;
  }

  page(filter: ListFilter = {}): Promise<RunPage> {
    return this.#views.list(filter);
  }

  get(runId: string): Promise<RunRecord | undefined> {
    return this.#views.get(runId);
  }

  peek(runId: string): RunRecord | undefined {
    return this.#table.get(runId);
  }

  peekAll(): RunRecord[] {
    return this.#table.all();
  }

  async kill(runId: string, opts: KillOptions): Promise<Result<RunRecord, BrigError>> {
    if (opts.confirm !== true) return err(new BrigError('invalid_input', 'kill needs explicit confirmation', { hint: 'Pass --confirm (or confirm: true).' }));
    const r = await this.#acting(runId);
    if (!r.ok) return r;
    if (r.value.status === 'ended' || this.#table.ending.has(runId)) return err(this.#notRunning(r.value, 'kill'));
    // Answered once the end is through — or, when the engine does not answer, as soon as the
    // kill is recorded (saved pending: `materializing` with pendingEnd killed); the end then
    // finishes in the background once the engine is back.
    let recorded!: () => void;
    const saved = new Promise<void>((resolve) => (recorded = resolve));
    const ending = this.#ender.endRun(runId, 'killed', { killedBy: opts.by ?? 'operator', onRecorded: () => recorded() });
    this.#table.background(ending);
    await Promise.race([ending, saved.then(() => untilDoneOrSilent(ending, this.#answers()))]);
    return ok(this.#table.get(runId)!);
  }

  async steer(runId: string, message: string, opts: { by?: KilledBy } = {}): Promise<Result<SteerOutcome, BrigError>> {
    const r = await this.#acting(runId);
    if (!r.ok) return r;
    if (r.value.status !== 'running' || this.#table.ending.has(runId)) return err(this.#notRunning(r.value, 'steer'));
    return steerRun(this.#ports(), r.value, message, opts.by ?? 'operator');
  }

  async replay(runId: string): Promise<Result<RunRecord, BrigError>> {
    const r = await this.#acting(runId);
    if (!r.ok) return r;
    return replayAgent(this.#ports(), r.value);
  }

  async resume(runId: string, opts: ResumeOptions = {}): Promise<Result<RunRecord, BrigError>> {
    const r = await this.#acting(runId);
    if (!r.ok) return r;
    // Claimed synchronously: two concurrent resumes cannot both re-spawn the pinned bytes.
    if (this.#table.resuming.has(runId)) return err(new BrigError('resume_unavailable', `run ${runId} is being resumed`, { data: { runId, reason: 'already_resumed' } }));
    this.#table.resuming.add(runId);
    try {
      return await resumeRun(this.#ports(), r.value, opts);
    } finally {
      this.#table.resuming.delete(runId);
    }
  }

  async send(runId: string, text: string, opts: SendOptions = {}): Promise<Result<SendOutcome, BrigError>> {
    const r = await this.#acting(runId);
    if (!r.ok) return r;
    return sendToRun(this.#ports(), this.#replies, this.#pingPongs, r.value, text, opts);
  }

  async history(runId: string, opts: { offset?: number; limit?: number } = {}): Promise<Result<HistoryPage, BrigError>> {
    const r = await this.#acting(runId);
    if (!r.ok) return r;
    return historyOf(this.#ports(), r.value, opts);
  }

  events(opts: EventsOptions = {}): AsyncIterableIterator<SupervisorEvent> {
    return this.#table.bus.subscribe(opts);
  }


  // ── private ──────────────────────────────────────────────────────────────────────────

  /** The driver's ping, when it has an engine to lose. */
  #answers(): ((timeoutMs: number) => Promise<boolean>) | undefined {
    const jail = this.#deps.jail;
    return jail.engineAnswers ? (ms) => jail.engineAnswers!(ms) : undefined;
  }

  #parts() {
    const paused = () => (this.#admission.paused ? { since: this.#admission.state.since } : null);
    return { table: this.#table, deps: this.#deps, settings: this.settings, actions: this.#actions, paused };
  }

  #pausedHere(): BrigError {
    const since = this.#admission.state.since;
    return new BrigError('admission_paused', `admission is paused${since ? ` since ${since}` : ''}, and this supervisor (no daemon) keeps no queue past itself`, {
      data: { limit: 0, current: 0, pausedSince: since },
      hint: 'Spawn through the daemon (`brig serve`): it queues the spawn until `brig admission resume`.',
    });
  }

  #ports(): RunPorts {
    return {
      table: this.#table,
      actions: this.#actions,
      settings: this.settings,
      llm: this.#llm,
      ...(this.#deps.handlesOf ? { handlesOf: this.#deps.handlesOf } : {}),
      ...(this.#deps.envelopeOf ? { envelopeOf: this.#deps.envelopeOf } : {}),
    };
  }

  async #surfaceOf(runId: string): Promise<readonly string[] | undefined> {
    if (this.#surfaces.has(runId)) return this.#surfaces.get(runId);
    const packet = await this.#table.store.readPacket(runId).catch(() => null);
    const tools = packet?.agent?.tools;
    this.#surfaces.set(runId, tools);
    this.#table.onEnded(runId, () => this.#surfaces.delete(runId));
    return tools;
  }

  /** A run a verb may act on: own, or adopted from disk; run_not_found when unknown. */
  async #acting(runId: string): Promise<Result<RunRecord, BrigError>> {
    const r = await this.#views.adopt(runId);
    if (r instanceof BrigError) return err(r);
    return r ? ok(r) : err(new BrigError('run_not_found', `no run ${runId}`));
  }

  #notRunning(r: RunRecord, what: string): BrigError {
    return new BrigError('not_running', `Run ${r.id} is not running (status: ${r.status}) -- cannot ${what}`, {
      data: { runId: r.id, status: r.status, endReason: r.endReason },
      ...(what === 'steer' ? { hint: 'Use kill + spawn instead; `brig list` shows its status.' } : {}),
    });
  }

  /** The caller gave up (Ctrl-C, an aborted request): the run is killed by the operator and collected. */
  #killOnAbort(runId: string, signal: AbortSignal): void {
    const kill = () => void this.kill(runId, { confirm: true, by: 'operator' });
    if (signal.aborted) return kill();
    signal.addEventListener('abort', kill, { once: true });
    this.#table.onEnded(runId, () => signal.removeEventListener('abort', kill));
  }

  whileBlocked<T>(runId: string, fn: () => Promise<T>): Promise<T> {
    return this.#whileBlocked(runId, fn);
  }

  async mayHandRef(ref: string, spawnerRunId: string | null): Promise<Result<void, BrigError>> {
    const parent = spawnerRunId ? (this.#table.get(spawnerRunId) ?? null) : null;
    if (spawnerRunId && (!parent || parent.status === 'ended')) return err(new BrigError('not_running', `run ${spawnerRunId} is not running`, { data: { status: parent?.status ?? 'unknown' } }));
    const checked = await checkRefArtifact({ table: this.#table, results: this.#deps.results }, ref, parent);
    return checked.ok ? ok(undefined) : checked;
  }

  holdChildSlot(callerRunId: string, holder: string): Result<() => void, BrigError> {
    const t = this.#table;
    const live = t.all().filter((r) => r.status !== 'ended');
    const limit = childLimit(live, callerRunId, this.settings);
    const key = parentKey(callerRunId);
    const used = live.filter((r) => isActive(r.status) && slotKey(r) === key).length + (t.heldSlots().get(key) ?? 0);
    if (used >= limit) {
      return err(new BrigError('children_exceeded', `run ${callerRunId} has ${used} of its ${limit} children running (a graph counts as one)`, { data: { limit, current: used }, hint: 'Wait for a child or a graph of yours to end (wait_children, graph_wait), then run the graph.' }));
    }
    const mine = t.graphSlots.get(callerRunId) ?? new Set<string>();
    mine.add(holder);
    t.graphSlots.set(callerRunId, mine);
    return ok(() => {
      const m = t.graphSlots.get(callerRunId);
      if (!m?.delete(holder)) return;
      if (m.size === 0) t.graphSlots.delete(callerRunId);
      this.#starter.pump();
    });
  }

  /** Runs fn while `runId` is blocked on its own children: it frees its global slot (admission.ts). */
  async #whileBlocked<T>(runId: string, fn: () => Promise<T>): Promise<T> {
    const b = this.#table.blocked;
    b.set(runId, (b.get(runId) ?? 0) + 1);
    this.#starter.pump();
    try {
      return await fn();
    } finally {
      const n = (b.get(runId) ?? 1) - 1;
      if (n <= 0) b.delete(runId);
      else b.set(runId, n);
    }
  }
}
