import type { Jail, JailArtifact } from '../jail/index.js';
import { RefusalLog, type Ledger } from '../ledger/index.js';
import { toBrigError, type BrigError, type Result } from '../util/errors.js';
import { performance } from 'node:perf_hooks';
import { EventBus, passesRunFilter } from './event-bus.js';
import { RunStopwatch } from './run-timing.js';
import type { BrokerHandle, Clock, EnvelopeOf, HandlesOf, LeaseGrant } from './ports.js';
import type { RunStore, SaveOptions } from './run-store.js';
import type { SupervisorEvent } from './types.js';
import type { EndReason, KilledBy, RunError, RunRecord, TimingMark } from './types.js';
import type { SpawnContext, SpawnRequest, SpawnRequestInput } from './types.js';
import type { KillOptions, SteerOutcome, WaitOptions } from './types.js';
import type { Capability, HistoryPage, LlmMessage, LlmReply, ParamsOf, SendOptions, SendOutcome } from './types.js';
import type { SupervisorSettings } from './settings.js';

/**
 * The run table: the one place that holds the supervisor's state — the records, each live
 * run's resources, who is ending, preparing, resuming or blocked — and the two ways out of it
 * (the run store on disk, the event bus + ledger). Every part of runs/ gets this table and a
 * RunActions port instead of the supervisor itself, so no part reaches into another's fields.
 * Internal to runs/: the faces see the Supervisor role only.
 */

/** What a run holds while it is live. */
export interface Live {
  jail?: Jail;
  broker?: BrokerHandle;
  /** The run's egress socket, when its lease holds egress. */
  egress?: { close(reason?: 'ended' | 'lease_revoked'): Promise<void> };
  lease?: LeaseGrant;
  /** The lease's capabilities; after a reattach only these are known (from the packet). */
  caps: readonly Capability[];
  steers: string[];
  /** Steers and messages the child has taken so far (a send waits for its own to be taken). */
  taken?: number;
  /** Told each time the child takes steers (sessions' send). */
  onTaken?: Set<() => void>;
}

/** Repeated spawn refusals of one caller and code are one counted ledger line per this window. */
export const REFUSAL_WINDOW_MS = 10_000;

export type EmitInput = Record<string, unknown> & { type: SupervisorEvent['type'] };

export class RunTable {
  readonly runs = new Map<string, RunRecord>();
  readonly live = new Map<string, Live>();
  /** Claimed synchronously by the one end door (INV-8). */
  readonly ending = new Set<string>();
  /** Admitted, not yet on disk: the pump and the health tick keep off them. */
  readonly preparing = new Set<string>();
  /** The parsed request of each run this supervisor admitted, handed from intake to the starter in memory (until it ends). */
  readonly requests = new Map<string, SpawnRequest>();
  /** prepareSpawn hooks' rollbacks of runs admitted but not yet started: run when the launch fails. */
  readonly rollbacks = new Map<string, () => Promise<void>>();
  /** The artifacts intake checked for each run it admitted (their identities), until it ends. */
  readonly artifacts = new Map<string, JailArtifact[]>();
  /**
   * Runs queued on disk when this supervisor started: a SIGKILL may have cut a launch of theirs
   * (the move to `starting` is not saved), leaving a lease, a volume or a container; their
   * first launch here clears what that dead launch made before it makes its own.
   */
  readonly queuedAtStart = new Set<string>();
  /** Runs a resume is in flight for. */
  readonly resuming = new Set<string>();
  /** Runs blocked on their own children (sync spawn, wait): calls in flight per run. */
  readonly blocked = new Map<string, number>();
  /**
   * Ended runs whose jail is still being released (ender.ts), by their slot key: each keeps its
   * slot — in its parent's group and globally — until the release is done.
   */
  readonly releasing = new Map<string, string>();
  /** Graphs holding one child slot of their caller run while they run (admission.ts slotKey): holders per caller. */
  readonly graphSlots = new Map<string, Set<string>>();
  readonly bus = new EventBus(passesRunFilter);
  /**
   * Spawn refusals (`run.refused`) into the ledger: the first of a caller and code at once,
   * repeats counted per window (a client retrying a 429 costs a line per window, not per retry).
   */
  readonly refusals: RefusalLog;
  /** The marks of each run this supervisor admitted (run-timing.ts), until its timing is saved. */
  readonly timing = new Map<string, RunStopwatch>();
  /** The monotonic clock the marks are taken on. */
  readonly mono: () => number = () => performance.now();
  readonly #waiters = new Map<string, (() => void)[]>();
  readonly #bg = new Set<Promise<unknown>>();

  constructor(
    readonly store: RunStore,
    readonly ledger: Ledger,
    readonly clock: Clock,
  ) {
    this.refusals = new RefusalLog({ type: 'run.refused', write: (ev) => this.ledger.append(ev), windowMs: REFUSAL_WINDOW_MS, now: () => this.clock.now().getTime() });
  }

  get(runId: string): RunRecord | undefined {
    return this.runs.get(runId);
  }

  all(): RunRecord[] {
    return [...this.runs.values()];
  }

  /**
   * Replaces a record in memory and on disk (atomically); `durable: false` for a change a
   * machine crash may lose (run-store.ts says which may, and why).
   */
  async update(runId: string, fn: (r: RunRecord) => RunRecord, o: SaveOptions = {}): Promise<RunRecord> {
    const next = fn(this.runs.get(runId)!);
    this.runs.set(runId, next);
    await this.store.save(next, o);
    return next;
  }

  /** Replaces a record in memory only: the next save carries it. */
  patch(runId: string, fn: (r: RunRecord) => RunRecord): RunRecord {
    const next = fn(this.runs.get(runId)!);
    this.runs.set(runId, next);
    return next;
  }

  /** Stamps a step of a run's life (run-timing.ts); nothing for a run this supervisor did not admit. */
  mark(runId: string, m: TimingMark): void {
    this.timing.get(runId)?.mark(m);
  }

  blockedSet(): ReadonlySet<string> {
    return new Set(this.blocked.keys());
  }

  /** How many slots graphs and releasing runs hold, per slot key (admission's `held`). */
  heldSlots(): ReadonlyMap<string, number> {
    const held = new Map([...this.graphSlots].map(([k, v]) => [k, v.size]));
    for (const k of this.releasing.values()) held.set(k, (held.get(k) ?? 0) + 1);
    return held;
  }

  /** Slots held across the supervisor (admission's `heldGlobally`): the runs still releasing. */
  heldGlobally(): number {
    return this.releasing.size;
  }

  /** Calls fn once the run ended (or the table closed); the returned function takes it back. */
  onEnded(runId: string, fn: () => void): () => void {
    const list = this.#waiters.get(runId) ?? [];
    list.push(fn);
    this.#waiters.set(runId, list);
    return () => {
      const now = this.#waiters.get(runId);
      const i = now?.indexOf(fn) ?? -1;
      if (i >= 0) now!.splice(i, 1);
      if (now?.length === 0) this.#waiters.delete(runId);
    };
  }

  /** Listeners waiting for this run's end (a bounded number whatever callers time out). */
  waiterCount(runId: string): number {
    return this.#waiters.get(runId)?.length ?? 0;
  }

  notifyEnded(runId: string): void {
    this.requests.delete(runId);
    this.artifacts.delete(runId);
    const ws = this.#waiters.get(runId) ?? [];
    this.#waiters.delete(runId);
    for (const w of ws) w();
  }

  /** Pending waits return the run as it stands (close: the run itself goes on). */
  releaseWaiters(): void {
    for (const ws of this.#waiters.values()) for (const w of ws) w();
    this.#waiters.clear();
  }

  /** Content-free event onto the bus and into the ledger (INV-7). */
  emit(r: RunRecord, ev: EmitInput): void {
    const full = { runId: r.id, rootRunId: r.rootRunId, path: r.path, depth: r.depth, timestamp: this.clock.now().toISOString(), ...ev } as SupervisorEvent;
    this.bus.publish(full);
    const { progress, ...flat } = full as SupervisorEvent & { progress?: { stepsExecuted: number; elapsedMs: number; activeTool?: string | null } };
    const ledgerEv: Record<string, string | number | boolean | null | readonly string[]> = {};
    for (const [k, v] of Object.entries(flat)) if (v !== undefined) ledgerEv[k] = v as string;
    if (progress) {
      ledgerEv.stepsExecuted = progress.stepsExecuted;
      ledgerEv.elapsedMs = progress.elapsedMs;
      if (progress.activeTool) ledgerEv.activeTool = progress.activeTool;
    }
    this.ledger.append({ ...ledgerEv, type: `run.${ev.type}` });
  }

  /** Background work (starts, ends) that must not be lost: failures land in the ledger. */
  background(p: Promise<unknown>): void {
    const q = p.catch((e) => this.ledger.append({ type: 'run.internal_error', code: toBrigError(e).code }));
    this.#bg.add(q);
    void q.finally(() => this.#bg.delete(q));
  }

  async idle(): Promise<void> {
    // Whoever waits for the background work (a close, a shutdown, a test) gets it now.
    for (const go of [...this.#deferred]) go();
    while (this.#bg.size > 0) await Promise.allSettled([...this.#bg]);
  }

  readonly #deferred = new Set<() => void>();

  /** Resolves after `ms`, or at once when idle() is asked for (background work deferred off a run's path). */
  after(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const go = () => {
        clearTimeout(timer);
        this.#deferred.delete(go);
        resolve();
      };
      const timer = setTimeout(go, ms);
      this.#deferred.add(go);
    });
  }
}

/**
 * What the parts of runs/ may ask of the supervisor (child calls, steer/resume, launch):
 * the public verbs plus the single end door. Passing this instead of the supervisor keeps
 * the import graph a tree.
 */
export interface RunActions {
  spawn(req: SpawnRequestInput, ctx?: SpawnContext): Promise<Result<RunRecord, BrigError>>;
  wait(runId: string, opts?: WaitOptions): Promise<Result<RunRecord, BrigError>>;
  kill(runId: string, opts: KillOptions): Promise<Result<RunRecord, BrigError>>;
  steer(runId: string, message: string, opts?: { by?: KilledBy }): Promise<Result<SteerOutcome, BrigError>>;
  send(runId: string, text: string, opts?: SendOptions): Promise<Result<SendOutcome, BrigError>>;
  history(runId: string, opts?: { offset?: number; limit?: number }): Promise<Result<HistoryPage, BrigError>>;
  endRun(runId: string, reason: EndReason, o?: EndOptions): Promise<boolean>;
  /** Runs fn while runId is blocked on its own children (it frees its global slot). */
  whileBlocked<T>(runId: string, fn: () => Promise<T>): Promise<T>;
  loadRequest(runId: string): Promise<SpawnRequest | null>;
}

export interface EndOptions {
  killedBy?: KilledBy;
  error?: RunError;
  /**
   * Output collection (default true): whatever the run wrote is kept however it ended
   * (INV-8); a kill or timeout stops the container first and marks the result partial.
   */
  collect?: boolean;
  exitCode?: number;
  /** The engine's word that the child was OOM-killed (JailExit.oomKilled): kept on the record. */
  oomKilled?: boolean;
  /** Called once the end is saved durably (its pending end, or the end itself): a kill is recorded. */
  onRecorded?: () => void;
}

/** What child calls and steer/resume get: the table, the actions, the settings. */
export interface RunPorts {
  table: RunTable;
  actions: RunActions;
  settings: SupervisorSettings;
  /** Model calls (llm.*): the conversation a run appends to, and the next turn. */
  llm?: LlmService;
  /** A run's ResultRef handles (bounded), for the summary a spawn or a wait returns to its parent. */
  handlesOf?: HandlesOf;
  /** An ended run's envelope, for the summary a spawn or a wait returns to its parent. */
  envelopeOf?: EnvelopeOf;
}

/** The supervisor's model-call service (llm-calls.ts), as child calls reach it. */
export interface LlmService {
  append(runId: string, messages: LlmMessage[]): Promise<number>;
  reset(runId: string, messages: LlmMessage[]): Promise<number>;
  complete(run: RunRecord, params: ParamsOf<'llm.complete'>): Promise<LlmReply>;
  /** The run's conversation condensed for a child's packet (parent-summary.ts), at most maxTokens × 4 chars. */
  summarize(run: RunRecord, maxTokens: number): Promise<string>;
}
