import type { EndReason, KilledBy, RunRecord, SupervisorSettings } from './types.js';

/**
 * The periodic health decision, pure: which live runs must end now and why. The watchdog
 * (timeout), the stuck-kill (no progress), the ghost sweep (running past timeout + grace,
 * i.e. the watchdog itself failed or the supervisor was down) and the queue timeout.
 * Effects (killing containers) happen in the supervisor from this list.
 */

export interface HealthAction {
  runId: string;
  reason: EndReason;
  killedBy?: KilledBy;
  /** For `failed`: the error code. */
  code?: 'queue_timeout';
}

type Settings = Pick<SupervisorSettings, 'stuckKillThresholdMs' | 'ghostGraceMs' | 'queueTimeoutMs'>;

/**
 * Per parent: whether it has a live child, and the latest sign of life among its children
 * (started, progressed, ended). A parent blocked in `spawn()` on a child makes no progress
 * calls of its own; it is waiting, not stuck, and the child is judged on its own.
 */
function childActivity(runs: readonly RunRecord[]): Map<string, { live: boolean; last: number }> {
  const m = new Map<string, { live: boolean; last: number }>();
  for (const c of runs) {
    if (c.parentRunId === null) continue;
    const seen = [c.createdAt, c.startedAt, c.lastProgressAt, c.endedAt].filter((x): x is string => x !== null).map(Date.parse);
    const cur = m.get(c.parentRunId) ?? { live: false, last: 0 };
    m.set(c.parentRunId, { live: cur.live || c.status !== 'ended', last: Math.max(cur.last, ...seen) });
  }
  return m;
}

/**
 * `all` may add ended runs to `live`: a child that just ended counts as its parent's last sign of life.
 * `paused`: admission is paused, so a queued run's wait is the operator's, not the queue's — no queue timeout.
 */
export function healthActions(live: readonly RunRecord[], now: Date, s: Settings, all: readonly RunRecord[] = live, paused = false): HealthAction[] {
  const t = now.getTime();
  const out: HealthAction[] = [];
  const kids = childActivity(all);
  for (const r of live) {
    if (r.status === 'queued') {
      if (!paused && t - Date.parse(r.queuedAt ?? r.createdAt) >= s.queueTimeoutMs) out.push({ runId: r.id, reason: 'failed', code: 'queue_timeout' });
      continue;
    }
    if (r.status !== 'running' || r.startedAt === null) continue;
    const started = Date.parse(r.startedAt);
    if (t - started >= r.timeoutMs + s.ghostGraceMs) {
      out.push({ runId: r.id, reason: 'ghost_sweep' });
    } else if (t - started >= r.timeoutMs) {
      out.push({ runId: r.id, reason: 'watchdog_timeout' });
    } else if (!kids.get(r.id)?.live && t - Math.max(Date.parse(r.lastProgressAt ?? r.startedAt), kids.get(r.id)?.last ?? 0) >= s.stuckKillThresholdMs) {
      out.push({ runId: r.id, reason: 'killed', killedBy: 'health_monitor' });
    }
  }
  return out;
}

/** Ended runs whose results are past retention; and live runs so old only a sweep can end them. */
export function retentionActions(
  runs: readonly RunRecord[],
  now: Date,
  s: Pick<SupervisorSettings, 'resultRetentionMs'>,
): { removeResults: string[]; endSwept: string[] } {
  const t = now.getTime();
  const removeResults: string[] = [];
  const endSwept: string[] = [];
  for (const r of runs) {
    if (r.status === 'ended') {
      if (r.endedAt && t - Date.parse(r.endedAt) >= s.resultRetentionMs) removeResults.push(r.id);
    } else if (r.status !== 'queued' && t - Date.parse(r.createdAt) >= s.resultRetentionMs) {
      endSwept.push(r.id);
    }
  }
  return { removeResults, endSwept };
}
