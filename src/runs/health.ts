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

export function healthActions(live: readonly RunRecord[], now: Date, s: Settings): HealthAction[] {
  const t = now.getTime();
  const out: HealthAction[] = [];
  for (const r of live) {
    if (r.status === 'queued') {
      if (t - Date.parse(r.createdAt) >= s.queueTimeoutMs) out.push({ runId: r.id, reason: 'failed', code: 'queue_timeout' });
      continue;
    }
    if (r.status !== 'running' || r.startedAt === null) continue;
    const started = Date.parse(r.startedAt);
    if (t - started >= r.timeoutMs + s.ghostGraceMs) {
      out.push({ runId: r.id, reason: 'ghost_sweep' });
    } else if (t - started >= r.timeoutMs) {
      out.push({ runId: r.id, reason: 'watchdog_timeout' });
    } else if (t - Date.parse(r.lastProgressAt ?? r.startedAt) >= s.stuckKillThresholdMs) {
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
