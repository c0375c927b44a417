import type { Ledger, LedgerEvent } from '../../../src/ledger/index.js';

/** A ledger that keeps events in memory: the unit tests' twin of FileLedger. */
export class MemoryLedger implements Ledger {
  readonly events: LedgerEvent[] = [];
  append(event: LedgerEvent): void {
    this.events.push({ ...event });
  }
  hasRunEvent(type: string, runId: string): boolean {
    return this.events.some((e) => e.type === type && e.runId === runId);
  }
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}
