import { z } from 'zod';
import { BrigError } from '../util/errors.js';
import { SPAWN_BOUNDS } from '../protocol/index.js';

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
  /** Agents compact when the context reaches this share of the model's window. */
  autoCompactThreshold: number;
  /** The longest tool result an agent puts into its conversation (the rest is spilled to a file). */
  toolResultMaxChars: number;
  /** A killed or timed-out agent gets SIGTERM and this long for its salvage before SIGKILL. */
  agentStopGraceMs: number;
  /** Tier-0 micro-compaction: re-readable tool results kept whole (older ones become placeholders). */
  microCompactKeep: number;
  /** Collection caps for /workspace/out; the per-run cap is also bounded by the lease's resultBytes. */
  resultPerFileBytes: number;
  resultPerRunBytes: number;
  resultMaxEntries: number;
  /**
   * Bytes kept free on the file system of brig's home: below it spawns are refused
   * `storage_full`, and a collection skips the files that would go below it (`no_space`), so
   * the ledger and the live runs' records always have room. 0: no reserve.
   */
  minFreeBytes: number;
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
  // The reference's default; SPAWN_BOUNDS.parentSummaryMaxTokens is the most it may be set to.
  parentSummaryMaxTokens: 1000,
  stdoutTailBytes: 16 * 1024,
  leaseGraceMs: 60_000,
  drainMs: 30_000,
  autoCompactThreshold: 0.8,
  toolResultMaxChars: 16_000,
  agentStopGraceMs: 10_000,
  microCompactKeep: 25,
  // Large enough for GB-scale outputs (collection streams); the lease's resultBytes usually binds first.
  resultPerFileBytes: 4 * 1024 ** 3,
  resultPerRunBytes: 8 * 1024 ** 3,
  resultMaxEntries: 10_000,
  minFreeBytes: 64 * 1024 ** 2,
});

const count = z.number().int().nonnegative();
const positive = z.number().int().positive();
const ms = z.number().int().nonnegative();
const bytes = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

/**
 * Every tunable checked before it is used: a NaN, a negative cap or a fractional count is
 * refused with the field named, never merged unchecked. Unknown keys are refused too.
 */
export const SupervisorSettingsSchema = z.strictObject({
  maxSpawnDepth: positive,
  maxChildrenPerAgent: count,
  maxQueued: count,
  queueTimeoutMs: positive,
  maxRunsPerTree: positive,
  maxConcurrent: positive,
  perStepTimeoutMs: positive,
  maxRunTimeoutMs: positive,
  defaultMaxSteps: positive,
  progressIntervalMs: positive,
  stuckKillThresholdMs: positive,
  ghostGraceMs: ms,
  resultRetentionMs: positive,
  sweepIntervalMs: positive,
  steerInject: z.boolean(),
  parentSummaryMaxTokens: positive.max(SPAWN_BOUNDS.parentSummaryMaxTokens),
  stdoutTailBytes: positive,
  leaseGraceMs: ms,
  drainMs: ms,
  autoCompactThreshold: z.number().gt(0).max(1),
  toolResultMaxChars: positive,
  agentStopGraceMs: ms,
  microCompactKeep: count,
  resultPerFileBytes: bytes,
  resultPerRunBytes: bytes,
  resultMaxEntries: positive,
  minFreeBytes: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
}) satisfies z.ZodType<SupervisorSettings>;

/** The defaults with `partial` over them, validated; throws `invalid_input` naming the bad field. */
export function resolveSettings(partial: Partial<SupervisorSettings> = {}): Readonly<SupervisorSettings> {
  const parsed = SupervisorSettingsSchema.safeParse({ ...DEFAULT_SETTINGS, ...partial });
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new BrigError('invalid_input', `supervisor setting ${i?.path.join('.') || '(root)'}: ${i?.message ?? 'invalid'}`, {
      data: { setting: i?.path.join('.') ?? null },
      hint: 'Settings are non-negative integers (milliseconds, counts, bytes); see docs/supervisor.md.',
    });
  }
  return Object.freeze(parsed.data);
}
