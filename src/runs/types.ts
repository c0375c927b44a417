import { z } from 'zod';
import { CapabilitySchema, LimitsSchema } from '../lease/types.js';
import type { BrigError, Result } from '../util/errors.js';

/**
 * The supervisor's vocabulary: what every face (library, HTTP API, CLI, broker) speaks.
 * One SpawnRequest schema serves all of them; a run's life is a RunRecord; how it ended is
 * data (exactly one EndReason, INV-8), never an exception.
 */

export const RUN_STATUSES = ['queued', 'starting', 'running', 'materializing', 'ended'] as const;
export const RunStatusSchema = z.enum(RUN_STATUSES);
export type RunStatus = z.infer<typeof RunStatusSchema>;

/** INV-8: every run ends with exactly one of these. */
export const END_REASONS = ['completed', 'failed', 'killed', 'swept', 'watchdog_timeout', 'ghost_sweep'] as const;
export const EndReasonSchema = z.enum(END_REASONS);
export type EndReason = z.infer<typeof EndReasonSchema>;

export const KILLED_BY = ['parent', 'health_monitor', 'operator', 'system'] as const;
export const KilledBySchema = z.enum(KILLED_BY);
export type KilledBy = z.infer<typeof KilledBySchema>;

/** The `failed` event's classification of a non-completed end. */
export const TERMINAL_STATUSES = ['cancelled', 'failed', 'timeout'] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

export const RUN_KINDS = ['script', 'command', 'agent'] as const; // `agent` is reserved
export type RunKind = (typeof RUN_KINDS)[number];

/** Bounds on what a request may carry; over a bound is `invalid_input`, never truncated. */
export const SPAWN_BOUNDS = {
  taskChars: 64 * 1024,
  scriptBytes: 1024 * 1024,
  labelChars: 128,
  parentSummaryMaxTokens: 2000,
  domainKnowledgeChars: 64 * 1024,
  argvItems: 256,
} as const;

/**
 * One spawn request, for every face. snake_case because it is wire-visible (HTTP body,
 * broker params, library call all parse through this schema). Unknown keys are refused.
 */
export const SpawnRequestSchema = z
  .strictObject({
    task: z.string().min(1).max(SPAWN_BOUNDS.taskChars),
    /** The agent (profile) name the child runs as; also the duplicate-detection key. */
    agent: z.string().min(1).max(128).default('default'),
    kind: z.enum(RUN_KINDS).default('script'),
    /** Script source (an ES module exporting `default async function (brig)`); kind `script`. */
    script: z.string().max(SPAWN_BOUNDS.scriptBytes).optional(),
    /** argv run directly in the jail (never a shell string); kind `command`. */
    argv: z.array(z.string()).min(1).max(SPAWN_BOUNDS.argvItems).optional(),
    image: z.string().min(1).optional(),
    caps: z.array(CapabilitySchema).optional(),
    /** Narrowing of the jail's size; the lease clamps it to the parent's (never widens). */
    limits: LimitsSchema.pick({ cpu: true, memoryMb: true, pids: true }).partial().strict().optional(),
    profile: z.string().min(1).optional(),
    objective: z.string().max(4096).optional(),
    /** Host paths (operator spawns) or ResultRef ids handed to the child read-only. */
    artifact_refs: z.array(z.string().min(1)).default([]),
    domain_knowledge: z.string().max(SPAWN_BOUNDS.domainKnowledgeChars).optional(),
    include_parent_history: z.enum(['none', 'summary']).default('none'),
    /** Only with include_parent_history `summary`; bounded by parentSummaryMaxTokens (chars / 4). */
    parent_summary: z.string().max(SPAWN_BOUNDS.parentSummaryMaxTokens * 4).optional(),
    /** Paths under /workspace/out that must exist afterwards (relative, no `..`). */
    expected_outputs: z
      .array(z.string().min(1).max(1024).refine((p) => !p.split('/').includes('..') && !p.includes('\0'), 'an expected output is a path under /workspace/out without `..`'))
      .default([]),
    max_steps: z.number().int().positive().optional(),
    /** Run timeout in ms (clamped by maxRunTimeoutMs and the lease). */
    timeout: z.number().int().positive().optional(),
    label: z.string().max(SPAWN_BOUNDS.labelChars).optional(),
    async: z.boolean().default(false),
  })
  .superRefine((r, ctx) => {
    if (r.kind === 'script' && r.script === undefined)
      ctx.addIssue({ code: 'custom', path: ['script'], message: 'kind `script` needs `script`' });
    if (r.kind === 'command' && r.argv === undefined)
      ctx.addIssue({ code: 'custom', path: ['argv'], message: 'kind `command` needs `argv`' });
    if (r.kind === 'agent') ctx.addIssue({ code: 'custom', path: ['kind'], message: 'kind `agent` is reserved' });
    if (r.parent_summary !== undefined && r.include_parent_history !== 'summary')
      ctx.addIssue({ code: 'custom', path: ['parent_summary'], message: 'needs include_parent_history `summary`' });
  });
export type SpawnRequest = z.infer<typeof SpawnRequestSchema>;
export type SpawnRequestInput = z.input<typeof SpawnRequestSchema>;

/** Who is asking. Faces set it; the broker sets parentRunId from the authenticated token. */
export interface SpawnContext {
  /** The parent run (a grandchild spawn through the broker); absent for operator spawns. */
  parentRunId?: string;
  /** Caller identity for duplicate detection; defaults to parentRunId or `operator`. */
  callerId?: string;
  /** Internal: this spawn re-runs a resumable run's pinned script. */
  resumeOf?: string;
  /** Aborting it kills the run (killedBy operator); its outputs are still collected. */
  signal?: AbortSignal;
}

/** Read-only to the child: written into /workspace/.brig/packet.json, 0444. */
export interface SpawnPacket {
  v: 1;
  runId: string;
  task: string;
  objective: string | null;
  artifactRefs: string[];
  domainKnowledge: string | null;
  toolGroups: string[];
  parentSummary: string | null;
  workspaceDir: string;
  depth: number;
  maxDepth: number;
  expectedOutputs: string[];
  maxSteps: number;
  timeoutMs: number;
  lease: { id: string; caps: string[]; expiresAt: string };
  /** Present on a resumed run: the checkpoint is untrusted input from an earlier child. */
  resumed: boolean;
}

export interface RunError {
  code: string;
  message: string;
}

/** How a run being materialized will end; saved first, so a crash mid-way is redone on restart. */
export interface PendingEnd {
  reason: EndReason;
  killedBy?: KilledBy;
  error?: RunError;
  exitCode?: number;
}

/** One run. Persisted as JSON under $BRIG_HOME/runs/<id>/run.json with atomic writes. */
export interface RunRecord {
  v: 1;
  id: string;
  rootRunId: string;
  parentRunId: string | null;
  /** Run ids from the root to this run (inclusive): the namespace path. */
  path: string[];
  depth: number;
  callerId: string;
  agent: string;
  kind: RunKind;
  label: string | null;
  status: RunStatus;
  /** Set exactly once, when status becomes `ended`. */
  endReason: EndReason | null;
  killedBy: KilledBy | null;
  terminalStatus: TerminalStatus | null;
  leaseId: string | null;
  /** sha256 of the task text. */
  taskHash: string;
  /**
   * sha256 of the whole canonical request (kind, task, argv or script bytes, caps, profile,
   * limits, artifacts, …; not `async`): the duplicate-detection key. Absent on old records.
   */
  requestHash?: string;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
  timeoutMs: number;
  maxSteps: number;
  stepsExecuted: number;
  /** The child's last progress line (bounded); shown by list, never put into the ledger. */
  progressLine: string | null;
  lastProgressAt: string | null;
  exitCode: number | null;
  async: boolean;
  /** True when ended by the watchdog after a checkpoint with a pinned script. */
  resumable: boolean;
  resumeOf: string | null;
  resumedBy: string | null;
  hasCheckpoint: boolean;
  expectedOutputs: string[];
  missingOutputs: string[];
  /** Host directory of the collected /workspace/out, once materialized. */
  resultDir: string | null;
  /** The lease's resultBytes: the ceiling on what this run may materialize (absent on old records). */
  resultCapBytes?: number;
  /** The lease's maxChildren: how many children this run may have active at once. */
  childCap?: number;
  outputBytes: number;
  outputFiles: number;
  /** The collected files (first 1000), relative to out/. */
  outputs: { path: string; bytes: number }[];
  /** Entries of /workspace/out not copied and why (symlink, device…). */
  skipped: { path: string; reason: string }[];
  /** Bounded tails of stdout/stderr (stdout goes into the result). */
  stdoutTail: string;
  stderrTail: string;
  /** The value passed to result(), JSON, when it fits a broker line; else null and resultSpooled. */
  result: unknown;
  /** Bytes of a result too big for a line: the SDK spooled it and it became the `result.json` ref. */
  resultSpooled?: number | null;
  /**
   * The run was killed or timed out: its outputs and stdio are what it had written by then
   * (collected all the same, INV-8), not a finished result.
   */
  partial?: boolean;
  /** Set only while `materializing`: the end it is collecting for. */
  pendingEnd?: PendingEnd;
  error: RunError | null;
  /** Set when the run is steered with steerInject off: the replacement run. */
  steeredTo: string | null;
}

export interface ProgressEvent {
  runId: string;
  agentId: string;
  progressLine: string | null;
  elapsedMs: number;
  stepsExecuted: number;
  timestamp: string;
}

/** Common to every supervisor event: content-free ids, counts, enums, durations. */
interface EventBase {
  runId: string;
  rootRunId: string;
  /** Run ids from the root. */
  path: string[];
  depth: number;
  timestamp: string;
}

export type SupervisorEvent =
  | (EventBase & { type: 'spawned'; parentRunId: string | null; agent: string; kind: RunKind; queued: boolean })
  | (EventBase & { type: 'started' })
  | (EventBase & { type: 'progress'; progress: ProgressEvent })
  | (EventBase & { type: 'completed'; runtimeMs: number; stepsExecuted: number })
  | (EventBase & { type: 'failed'; terminalStatus: TerminalStatus; endReason: EndReason; code: string | null })
  | (EventBase & {
      type: 'lifecycle_ended';
      endReason: EndReason;
      killedBy: KilledBy | null;
      runtimeMs: number;
      stepsExecuted: number;
      outputBytes: number;
      resumable: boolean;
    })
  | (EventBase & { type: 'steered'; mode: 'inject' | 'respawn'; newRunId: string | null });

export type SupervisorEventType = SupervisorEvent['type'];

export interface ListFilter {
  status?: RunStatus[];
  rootRunId?: string;
  parentRunId?: string;
  label?: string;
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
}

export interface ReconcileReport {
  reattached: string[];
  ghostSwept: string[];
  /** Resumable runs whose pinned script and checkpoint are still on disk. */
  resumable?: string[];
  /** Resumable runs that lost their script or checkpoint: no longer resumable, and why. */
  orphaned?: { runId: string; reason: 'script_missing' | 'checkpoint_missing' }[];
  swept: { containers: number; volumes: number };
  /** What interrupted materializations had left under the results directory, removed. */
  interrupted?: { removed: number; bytes: number };
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
  wait(runId: string, opts?: WaitOptions): Promise<Result<RunRecord, BrigError>>;
  list(filter?: ListFilter): Promise<RunRecord[]>;
  get(runId: string): Promise<RunRecord | undefined>;
  kill(runId: string, opts: KillOptions): Promise<Result<RunRecord, BrigError>>;
  /** `by` is who a respawn-mode steer's kill is attributed to (default `operator`). */
  steer(runId: string, message: string, opts?: { by?: KilledBy }): Promise<Result<SteerOutcome, BrigError>>;
  resume(runId: string): Promise<Result<RunRecord, BrigError>>;
  events(opts?: EventsOptions): AsyncIterableIterator<SupervisorEvent>;
  /** Stop timers and the broker; running containers keep running (a restart reattaches). */
  close(): Promise<void>;
}

/** Tunables with the reference figures as defaults. */
export interface SupervisorSettings {
  maxSpawnDepth: number;
  maxChildrenPerAgent: number;
  maxQueued: number;
  queueTimeoutMs: number;
  /** Ceiling on non-ended runs in one tree (keyed on the root run). */
  maxRunsPerTree: number;
  /** Ceiling on concurrently starting/running runs across the supervisor. */
  maxConcurrent: number;
  perStepTimeoutMs: number;
  maxRunTimeoutMs: number;
  defaultMaxSteps: number;
  progressIntervalMs: number;
  stuckKillThresholdMs: number;
  ghostGraceMs: number;
  resultRetentionMs: number;
  sweepIntervalMs: number;
  steerInject: boolean;
  parentSummaryMaxTokens: number;
  stdoutTailBytes: number;
  /** A lease outlives its run's deadline by this much, so the watchdog (not an expired lease) ends a slow run. */
  leaseGraceMs: number;
  /** `shutdown()`: how long running children may go on finishing before they are killed. */
  drainMs: number;
  /** Collection caps for /workspace/out; the per-run cap is also bounded by the lease's resultBytes. */
  resultPerFileBytes: number;
  resultPerRunBytes: number;
  resultMaxEntries: number;
}

export const DEFAULT_SETTINGS: Readonly<SupervisorSettings> = Object.freeze({
  maxSpawnDepth: 3,
  maxChildrenPerAgent: 5,
  maxQueued: 10,
  queueTimeoutMs: 120_000,
  maxRunsPerTree: 50,
  maxConcurrent: 5,
  perStepTimeoutMs: 60_000,
  maxRunTimeoutMs: 600_000,
  defaultMaxSteps: 50,
  progressIntervalMs: 30_000,
  stuckKillThresholdMs: 300_000,
  ghostGraceMs: 120_000,
  resultRetentionMs: 24 * 3600_000,
  sweepIntervalMs: 60_000,
  steerInject: true,
  parentSummaryMaxTokens: SPAWN_BOUNDS.parentSummaryMaxTokens,
  stdoutTailBytes: 16 * 1024,
  leaseGraceMs: 60_000,
  drainMs: 30_000,
  // Large enough for GB-scale outputs (collection streams); the lease's resultBytes usually binds first.
  resultPerFileBytes: 4 * 1024 ** 3,
  resultPerRunBytes: 8 * 1024 ** 3,
  resultMaxEntries: 10_000,
});
