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
  /**
   * Whether an event of this type for this run is already on record (any process's segment).
   * For the one step that must not be done twice across a crash: announcing a run's end.
   */
  hasRunEvent?(type: string, runId: string): boolean;
  /** Resolves when everything appended so far is on disk. */
  flush(): Promise<void>;
  close(): Promise<void>;
}
