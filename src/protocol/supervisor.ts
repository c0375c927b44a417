/**
 * The supervisor's role as every face sees it — the library's Brig, the daemon's API client,
 * the records on disk read-only — with its options, outcomes and the sessions tools' words.
 */
import type { BrigError, Result } from './errors.js';
import type { SupervisorEvent } from './events.js';
import type { OperatorSurface } from './operator.js';
import type { GraphSurface } from './graphs.js';
import type { RefSurface } from './refs.js';
import type { KilledBy, RunKind, RunRecord, RunStatus, SpawnContext, SpawnRequest, SpawnRequestInput } from './runs.js';

/** The sessions tools' vocabulary (sessions.ts serves it). */

export const SEND_MODES = ['fire-and-forget', 'wait', 'ping-pong'] as const;
export type SendMode = (typeof SEND_MODES)[number];
export const MAX_SEND_WAIT_MS = 50_000;
export const MAX_HISTORY_PAGE = 50;

/** The most ping-pong turns one conversation may have (a turn: a message and the child's reply). */
export const MAX_SEND_TURNS = 5;

export interface SendOptions {
  mode?: SendMode;
  /** wait / ping-pong: how long this call waits for the child's reply (≤ MAX_SEND_WAIT_MS). */
  timeoutMs?: number;
  /** ping-pong: how many turns the conversation has (0–5, default 3); outside is refused. */
  maxTurns?: number;
  /**
   * ping-pong: the conversation this message answers (the id a round before returned). The
   * message is the sender's answer to the child's last reply; the call returns its next one.
   */
  conversation?: string;
}

/** One reply of the child's model, as a send returns it (bounded). */
export interface SendReply {
  step: number;
  text: string;
  toolCalls: string[];
}

/** A ping-pong conversation after a round: which turn it is at and whether it takes an answer. */
export interface SendConversation {
  id: string;
  /** Replies the child gave in it so far (1..maxTurns). */
  turn: number;
  maxTurns: number;
  /** Whether it takes an answer: turns are left, the child is running and it replied this round. */
  open: boolean;
}

/**
 * The library's ping-pong (`Brig.send` with `onReply`): called with each reply the sender can
 * still answer; its answer goes to the child as the next message, `null` ends the conversation.
 */
export type ReplyHandler = (reply: SendReply, conversation: SendConversation) => string | null | undefined | Promise<string | null | undefined>;

export interface ConverseOptions extends SendOptions {
  onReply?: ReplyHandler;
}

export interface SendOutcome {
  runId: string;
  mode: SendMode;
  delivered: 'queued';
  replies: SendReply[];
  status: RunRecord['status'];
  endReason: RunRecord['endReason'];
  timedOut: boolean;
  /** ping-pong with at least one turn: the conversation, to answer with `conversation: id`. */
  conversation?: SendConversation;
}

export interface HistoryPage {
  runId: string;
  offset: number;
  entries: unknown[];
  total: number;
  more: number;
}


/** The supervisor's role, as every face sees it (the daemon's API client implements it too). */

export interface ListFilter {
  status?: RunStatus[];
  rootRunId?: string;
  parentRunId?: string;
  label?: string;
  /** Only runs of these kinds (sessions_list's `kind`). */
  kind?: RunKind[];
  /** Only runs created in the last this-many minutes (sessions_list's `since`). */
  sinceMinutes?: number;
  /** Only the newest this-many of the runs that match (a bounded answer; still oldest first). */
  limit?: number;
  /**
   * Paging back: only runs created before this run (by creation time, then id) — with `limit`,
   * the page before the one whose oldest run this is. A run id not on record pages to nothing.
   */
  before?: string;
}

export interface WaitOptions {
  /** Give up waiting (the run keeps going) after this many ms; resolves with the current record. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface KillOptions {
  /** Must be true: killing is never implicit. */
  confirm: boolean;
  by?: KilledBy;
}

/** `brig resume`: the new run's limits, narrowed by its lease and the settings like any request's. */
export interface ResumeOptions {
  /** Its timeout in ms (default: the stored request's). */
  timeoutMs?: number;
  /** Its step budget (default: the stored request's). */
  maxSteps?: number;
}

export interface SteerOutcome {
  mode: 'inject' | 'respawn';
  runId: string;
  /** The replacement run, in `respawn` mode. */
  newRunId: string | null;
}

export interface EventsOptions {
  signal?: AbortSignal;
  /** Only events of runs in this tree. */
  rootRunId?: string;
  runId?: string;
  /**
   * Called once the subscription is in place (the bus holds it; the daemon's stream answered):
   * every event published after it is delivered. The stream starts on its first pull.
   */
  onSubscribed?: () => void;
}

export interface ReconcileReport {
  reattached: string[];
  ghostSwept: string[];
  /** Resumable runs whose pinned script and checkpoint are still on disk. */
  resumable?: string[];
  /** Resumable runs that lost their script or checkpoint: no longer resumable, and why. */
  orphaned?: { runId: string; reason: 'script_missing' | 'checkpoint_missing' }[];
  swept: { containers: number; volumes: number };
  /** Runs whose record is not what brig wrote (state_corrupt): left on disk, not reattached. */
  corrupt?: string[];
  /** What interrupted materializations had left under the results directory, removed. */
  interrupted?: { removed: number; bytes: number };
  /**
   * Runs caught `starting` with no started container (the supervisor died while making their
   * jail): what the half-made launch left was swept and they wait in the queue again.
   */
  requeued?: string[];
  /** Run directories an intake cut short left without a record (untouched for 10 minutes), removed. */
  halfMade?: number;
}

/**
 * The supervisor. Admission refusals (`depth_exceeded`, `queue_full`, `tree_exceeded`,
 * `queue_timeout`), `not_running`, `run_not_found`, `resume_unavailable` are Result values.
 */
export interface Supervisor {
  /** Reconcile persisted runs with the engine; call once before anything else. */
  start(): Promise<ReconcileReport>;
  /**
   * Admit and start a run. Returns once it is queued or started (async) — or, unless
   * `async`, once it has ended. An in-flight duplicate returns the existing run.
   */
  spawn(req: SpawnRequestInput, ctx?: SpawnContext): Promise<Result<RunRecord, BrigError>>;
  /**
   * The spawn's pre-check alone (schema, agent spec and model, profile) — the one intake runs:
   * the request as it would be admitted, or the refusal spawn would answer. Starts nothing.
   */
  check(req: SpawnRequestInput): Promise<Result<SpawnRequest, BrigError>>;
  wait(runId: string, opts?: WaitOptions): Promise<Result<RunRecord, BrigError>>;
  list(filter?: ListFilter): Promise<RunRecord[]>;
  /** list() with how many matching runs older than the page were left out. */
  page(filter?: ListFilter): Promise<RunPage>;
  get(runId: string): Promise<RunRecord | undefined>;
  kill(runId: string, opts: KillOptions): Promise<Result<RunRecord, BrigError>>;
  /** `by` is who a respawn-mode steer's kill is attributed to (default `operator`). */
  steer(runId: string, message: string, opts?: { by?: KilledBy }): Promise<Result<SteerOutcome, BrigError>>;
  /** Sessions: a message to a running agent child; `wait` / `ping-pong` return its next replies (bounded). */
  send(runId: string, text: string, opts?: SendOptions): Promise<Result<SendOutcome, BrigError>>;
  /** Sessions: a bounded page of a run's transcript (what its model was served), on explicit request. */
  history(runId: string, opts?: { offset?: number; limit?: number }): Promise<Result<HistoryPage, BrigError>>;
  /**
   * A new run continuing an ended one: a script from its pinned bytes and checkpoint, an agent
   * (ended watchdog_timeout, killed or budget_exceeded) from the conversation its supervisor held.
   */
  resume(runId: string, opts?: ResumeOptions): Promise<Result<RunRecord, BrigError>>;
  /**
   * A new run re-running an ended agent run's pinned loop (same request, lease derived again)
   * in a fresh jail, its model calls answered from the old run's recorded replies; the new
   * run's `replay` says where its requests first differed from the recorded ones.
   */
  replay(runId: string): Promise<Result<RunRecord, BrigError>>;
  events(opts?: EventsOptions): AsyncIterableIterator<SupervisorEvent>;
  /** Stop timers and the broker; running containers keep running (a restart reattaches). */
  close(): Promise<void>;
}

/**
 * What a face holds (openBrig in the library, the CLI's thin path): the Supervisor surface
 * and the drill-in surface, whichever side serves them — the daemon over its socket, a
 * supervisor in this process, or the records on disk read-only.
 */
export type Brig = Omit<Supervisor, 'start' | 'send'> & {
  /**
   * Sessions' send; in ping-pong, `onReply` makes it a conversation held here: each reply the
   * child gives is handed to it, and its answer is sent back, until it answers null, the turns
   * are spent or the child ends. The outcome carries every reply.
   */
  send(runId: string, text: string, opts?: ConverseOptions): Promise<Result<SendOutcome, BrigError>>;
  readonly mode: 'daemon' | 'local' | 'read';
  /** Drill-in: a run's ResultRefs, the five slice verbs, and its envelope (`result`). */
  readonly refs: RefSurface;
  /** The operator's view of the home: leases, the audit ledger, the doctor, the fleet. */
  readonly operator: OperatorSurface;
  /** Execution graphs (docs/graphs.md): where a supervisor runs in this process, or a daemon serves them. */
  readonly graphs?: GraphSurface;
};

/** Creation order: time, then id (two runs of one millisecond stay in one order on every page). */
/**
 * Code-unit order, for text brig makes itself (ISO-8601 UTC times, hex ids, segment names): the
 * order `<` gives, which for these strings is localeCompare's — without its first call in a
 * process building an ICU collator (~17 ms of a thin command, 6–17 ms of a one-shot spawn).
 */
export function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
const byCreation = (a: Pick<RunRecord, 'createdAt' | 'id'>, b: Pick<RunRecord, 'createdAt' | 'id'>) => byCodeUnits(a.createdAt, b.createdAt) || byCodeUnits(a.id, b.id);

/** One list filter for every view (a daemon's, an in-process one, the read-only records): oldest first. */
/** A page of runs (oldest first) and how many matching runs older than it were left out. */
export interface RunPage {
  runs: RunRecord[];
  more: number;
}

export function filterRuns(runs: Iterable<RunRecord>, f: ListFilter, now: number = Date.now()): RunRecord[] {
  return filterRunsPage(runs, f, now).runs;
}

/** filterRuns with the count of matching runs older than the page (cut by `limit`): what `brig list` says is left. */
export function filterRunsPage(runs: Iterable<RunRecord>, f: ListFilter, now: number = Date.now()): RunPage {
  const all = [...runs]
    .filter((r) => !f.status || f.status.includes(r.status))
    .filter((r) => !f.rootRunId || r.rootRunId === f.rootRunId)
    .filter((r) => !f.parentRunId || r.parentRunId === f.parentRunId)
    .filter((r) => !f.label || r.label === f.label)
    .filter((r) => !f.kind || f.kind.includes(r.kind))
    .filter((r) => f.sinceMinutes === undefined || Date.parse(r.createdAt) >= now - f.sinceMinutes * 60_000)
    .sort(byCreation);
  if (f.before !== undefined) {
    const cursor = all.find((r) => r.id === f.before) ?? [...runs].find((r) => r.id === f.before);
    if (!cursor) return { runs: [], more: 0 };
    const cut = all.findIndex((r) => byCreation(r, cursor) >= 0);
    all.splice(cut < 0 ? all.length : cut);
  }
  const from = f.limit !== undefined ? Math.max(0, all.length - f.limit) : 0;
  return { runs: all.slice(from), more: from };
}

