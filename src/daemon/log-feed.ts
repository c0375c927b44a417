/**
 * What the daemon logs besides its API requests: each run's lifecycle and the engine's
 * failures, read off the content-free events every part already ledgers (a tee, like the
 * metrics), so a log line never says more than the audit trail does.
 */
import type { LedgerEvent } from '../ledger/index.js';
import { ERROR_CODES, isErrorCode } from '../util/errors.js';
import type { Logger } from '../util/log.js';

/** A failure of brig or of what it depends on (the engine, the jail, a model), not of the child: an error line. */
const failedUnderneath = (code: unknown) => isErrorCode(code) && ['internal', 'unavailable'].includes(ERROR_CODES[code].kind);

const pick = (ev: LedgerEvent, keys: string[]) => Object.fromEntries(keys.filter((k) => ev[k] !== undefined && ev[k] !== null).map((k) => [k, ev[k]]));

export function logEvents(log: Logger): (ev: LedgerEvent) => void {
  return (ev: LedgerEvent) => {
    switch (ev.type) {
      case 'run.spawned':
        return log.info(pick(ev, ['runId', 'rootRunId', 'parentRunId', 'depth', 'kind', 'queued']), 'run spawned');
      case 'run.started':
        return log.info(pick(ev, ['runId']), 'run started');
      case 'run.failed':
        if (failedUnderneath(ev.code)) log.error(pick(ev, ['runId', 'code', 'endReason']), 'run failed in the engine or the jail');
        return;
      case 'run.lifecycle_ended':
        return log.info(pick(ev, ['runId', 'endReason', 'killedBy', 'runtimeMs', 'stepsExecuted', 'outputBytes']), 'run ended');
      case 'run.refused':
        return log.info(pick(ev, ['code', 'parentRunId', 'depth', 'count']), 'spawn refused');
      case 'run.internal_error':
        return log.error(pick(ev, ['runId', 'code']), 'background work failed');
      case 'broker.abuse':
        return log.warn(pick(ev, ['runId', 'denied']), 'broker cut off an abusive run');
      case 'lease.revoked':
        // A run's end releases its lease: routine, not a revocation anyone made.
        if (typeof ev.released === 'string') return log.debug(pick(ev, ['leaseId', 'runId', 'released']), 'lease released');
        return log.info(pick(ev, ['leaseId', 'runId', 'by']), 'lease revoked');
      case 'supervisor.shutdown':
        return log.info(pick(ev, ['drained', 'killed', 'unfinished']), 'supervisor shut down');
    }
  };
}
