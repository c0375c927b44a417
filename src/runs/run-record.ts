import { z } from 'zod';
import type { JailVerified } from '../jail/types.js';
import type { ErrorCode } from '../util/errors.js';
import { END_REASONS, KILLED_BY, RUN_KINDS, RUN_STATUSES, TERMINAL_STATUSES } from './vocabulary.js';

export { END_REASONS, KILLED_BY, RUN_KINDS, RUN_STATUSES, TERMINAL_STATUSES } from './vocabulary.js';

/**
 * A run's life as data: its statuses, its one end reason (INV-8) and who killed it, and the
 * record persisted at $BRIG_HOME/runs/<id>/run.json. How a run ended is data here, never an
 * exception.
 */

export const RunStatusSchema = z.enum(RUN_STATUSES);
export type RunStatus = z.infer<typeof RunStatusSchema>;

/** INV-8: every run ends with exactly one of these. */
export const EndReasonSchema = z.enum(END_REASONS);
export type EndReason = z.infer<typeof EndReasonSchema>;

export const KilledBySchema = z.enum(KILLED_BY);
export type KilledBy = z.infer<typeof KilledBySchema>;

/** The `failed` event's classification of a non-completed end. */
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

export type RunKind = (typeof RUN_KINDS)[number];

/** Why a run did not complete: a code of the one catalog (util/error-codes.ts) and a message with no host paths. */
export interface RunError {
  code: ErrorCode;
  message: string;
}

/** How a run being materialized will end; saved first, so a crash mid-way is redone on restart. */
export interface PendingEnd {
  reason: EndReason;
  killedBy?: KilledBy;
  error?: RunError;
  exitCode?: number;
  oomKilled?: boolean;
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
  /** The engine said the kernel's OOM killer ended a process of the jail (State.OOMKilled); absent otherwise. */
  oomKilled?: boolean;
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
  /** Kind `agent`: the spec and model alias it runs. */
  agentSpec?: string;
  model?: string;
  /** Tokens (provider-reported input + output, summed over every model call of this run). */
  tokens?: number;
  /** Cost in USD of those calls; null once any call's price was unknown (cost unknown, never 0). */
  costUsd?: number | null;
  /** The lease's token and cost budgets for this run (0 = none; set at launch). */
  budget?: { tokens: number; costUsd: number };
  /** The tool the child reported last (content-free: a tool name). */
  activeTool?: string | null;
  /** The jail as the engine reported it once verification passed (what an operator audits). */
  jail?: JailVerified;
  /**
   * The name the engine knows this run's jail by when it is not the run id: the warm-pool
   * slot it was handed (set before the child starts, so a restart finds and sweeps by it).
   */
  jailKey?: string;
  /** Attribution: the parent's step count when it spawned this run (reference 001). */
  parentStep?: number | null;
  /** Kind `agent`: its one salvage call was made. */
  salvaged?: boolean;
  /**
   * Set with the end, cleared once its resources are released and its end announced: a
   * supervisor that died in between finishes the job at its next start (exactly one
   * `lifecycle_ended`, nothing left behind).
   */
  unreleased?: boolean;
}

/** The key of a run's jail in the engine (its labels, container, volume, disk, socket directory). */
export const jailKeyOf = (r: Pick<RunRecord, 'id' | 'jailKey'>): string => r.jailKey ?? r.id;
