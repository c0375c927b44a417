import { healthActions } from './health.js';
import type { RunActions, RunTable } from './run-table.js';
import type { KilledBy, SupervisorSettings } from './types.js';

/**
 * The periodic and event-driven ends: the health tick acts on the pure `healthActions`
 * (watchdog, stuck-kill, ghost sweep, queue timeout), and a revoked lease ends its run.
 */

export function healthTick(table: RunTable, settings: SupervisorSettings, actions: Pick<RunActions, 'endRun'>, paused = false): void {
  const live = table.all().filter((r) => r.status !== 'ended' && !table.ending.has(r.id) && !table.preparing.has(r.id));
  for (const a of healthActions(live, table.clock.now(), settings, table.all(), paused)) {
    const error = a.code ? { code: a.code, message: 'waited too long for a slot' } : undefined;
    table.background(actions.endRun(a.runId, a.reason, { ...(a.killedBy ? { killedBy: a.killedBy } : {}), ...(error ? { error } : {}) }));
  }
}

/** An operator's revoke reads as an operator kill; anything else (expiry, abuse) as system. */
export function endRevoked(table: RunTable, actions: Pick<RunActions, 'endRun'>, leaseId: string, by: string): void {
  const killedBy: KilledBy = by === 'operator' ? 'operator' : 'system';
  for (const r of table.all()) {
    if (r.leaseId === leaseId && r.status !== 'ended' && !table.ending.has(r.id)) {
      table.background(actions.endRun(r.id, 'killed', { killedBy, error: { code: 'lease_expired', message: `the lease was revoked by ${killedBy}` } }));
    }
  }
}
