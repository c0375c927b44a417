/**
 * A ledger that shows every event to observers (metrics, the daemon's log) before appending
 * it to the real one, so what they count or say is exactly what the audit trail holds. An
 * observer's failure never stands between an event and the ledger.
 */
import type { Ledger, LedgerEvent } from '../ledger/index.js';

export function teeLedger(inner: Ledger, observers: ((ev: LedgerEvent) => void)[]): Ledger {
  return {
    append(ev) {
      for (const o of observers) {
        try {
          o(ev);
        } catch {
          // an observer's failure is its own
        }
      }
      inner.append(ev);
    },
    ...(inner.hasRunEvent ? { hasRunEvent: (type: string, runId: string) => inner.hasRunEvent!(type, runId) } : {}),
    flush: () => inner.flush(),
    close: () => inner.close(),
  };
}
