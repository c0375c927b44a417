/**
 * Events are content-free (INV-7): ids, counts, enums, durations. The value type admits
 * no objects, so a task text or a model reply cannot ride along in a nested field; string
 * fields are for ids and enum values only, and writers keep them that way.
 */
export type LedgerValue = string | number | boolean | null | readonly string[];

export interface LedgerEvent {
  /** e.g. `lease.issued`, `broker.denied`, `run.spawned`, `jail.created`. */
  type: string;
  runId?: string;
  rootRunId?: string;
  leaseId?: string;
  [field: string]: LedgerValue | undefined;
}

export interface Ledger {
  append(event: LedgerEvent): void;
  /** Resolves when everything appended so far is on disk. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** A ledger that keeps events in memory: for unit tests and dry runs. */
export class MemoryLedger implements Ledger {
  readonly events: LedgerEvent[] = [];
  append(event: LedgerEvent): void {
    this.events.push({ ...event });
  }
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}
