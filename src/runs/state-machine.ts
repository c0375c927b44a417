import { BrigError, err, ok, type Result } from '../util/errors.js';
import type { EndReason, KilledBy, RunError, RunRecord, RunStatus, TerminalStatus } from './types.js';

/**
 * The run state machine: queued → starting → running → materializing → ended, with `ended`
 * reachable from every live state. Guarantees INV-8 at the data level: `end` refuses a run
 * that already ended, so no code path can give a run a second end reason.
 */

const NEXT: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  queued: ['starting', 'ended'],
  starting: ['running', 'ended'],
  running: ['materializing', 'ended'],
  materializing: ['ended'],
  ended: [],
};

export function canTransition(from: RunStatus, to: RunStatus): boolean {
  return NEXT[from].includes(to);
}

/** Moves a live run forward. `ended` goes through `end` only. */
export function transition(rec: RunRecord, to: Exclude<RunStatus, 'ended'>, now: Date): Result<RunRecord> {
  if (!canTransition(rec.status, to)) {
    return err(
      new BrigError('not_running', `run ${rec.id} cannot go from ${rec.status} to ${to}`, {
        data: { runId: rec.id, status: rec.status, to },
      }),
    );
  }
  const next: RunRecord = { ...rec, status: to };
  if (to === 'running' && rec.startedAt === null) next.startedAt = now.toISOString();
  return ok(next);
}

/**
 * Back to the queue, from `starting` only: a run the supervisor died launching (no container
 * of it started), taken over by the next start. What the dead launch acquired is not the
 * run's any more: its lease and jail key are dropped with it; the queue clock starts again.
 */
export function requeue(rec: RunRecord, now: Date): Result<RunRecord> {
  if (rec.status !== 'starting') {
    return err(new BrigError('not_running', `run ${rec.id} cannot go from ${rec.status} back to queued`, { data: { runId: rec.id, status: rec.status, to: 'queued' } }));
  }
  const { jailKey: _k, jail: _j, ...rest } = rec;
  return ok({ ...rest, status: 'queued', leaseId: null, queuedAt: now.toISOString() });
}

export function terminalStatusFor(reason: EndReason): TerminalStatus | null {
  switch (reason) {
    case 'completed': return null;
    case 'killed': return 'cancelled';
    case 'watchdog_timeout': return 'timeout';
    case 'failed':
    case 'ghost_sweep':
    case 'swept':
      return 'failed';
  }
}

export interface EndInput {
  reason: EndReason;
  now: Date;
  killedBy?: KilledBy;
  error?: RunError;
  resumable?: boolean;
}

/** Gives a run its one end reason. A second call is refused with `not_running`. */
export function end(rec: RunRecord, input: EndInput): Result<RunRecord> {
  if (rec.status === 'ended') {
    return err(
      new BrigError('not_running', `run ${rec.id} already ended (${rec.endReason ?? 'unknown'})`, {
        data: { runId: rec.id, status: rec.status, endReason: rec.endReason },
      }),
    );
  }
  if ((input.reason === 'killed') !== (input.killedBy !== undefined)) {
    return err(new BrigError('internal', 'killedBy is set exactly when the end reason is `killed`'));
  }
  return ok({
    ...rec,
    status: 'ended',
    endReason: input.reason,
    killedBy: input.killedBy ?? null,
    terminalStatus: terminalStatusFor(input.reason),
    endedAt: input.now.toISOString(),
    error: input.error ?? rec.error,
    resumable: input.resumable ?? false,
  });
}

/** Milliseconds the run has been alive (from start, or creation while queued). */
export function elapsedMs(rec: RunRecord, now: Date): number {
  const from = Date.parse(rec.startedAt ?? rec.createdAt);
  const to = rec.endedAt ? Date.parse(rec.endedAt) : now.getTime();
  return Math.max(0, to - from);
}

export function isActive(status: RunStatus): boolean {
  return status === 'starting' || status === 'running' || status === 'materializing';
}
