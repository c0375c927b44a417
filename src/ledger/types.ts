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

/** What a ledger holds that the disk has not taken yet (file-ledger.ts: a full disk). */
export interface LedgerBacklog {
  /** Chained lines held in memory, not yet (wholly) on disk. */
  lines: number;
  bytes: number;
  /** Events past the held bound: counted by type, not chained (written as counts later). */
  unrecorded: number;
  /** Since when the disk has refused (ISO), or null while it takes every line. */
  since: string | null;
}

export interface Ledger {
  append(event: LedgerEvent): void;
  /**
   * Whether an event of this type for this run is already on record (any process's segment).
   * For the one step that must not be done twice across a crash: announcing a run's end.
   */
  hasRunEvent?(type: string, runId: string): boolean;
  /** What the disk has not taken yet; absent: a ledger that never holds lines back. */
  backlog?(): LedgerBacklog;
  /** Resolves when everything appended so far is on disk. */
  flush(): Promise<void>;
  close(): Promise<void>;
}
