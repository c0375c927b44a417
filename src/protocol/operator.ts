/**
 * The operator's vocabulary: a lease as an operator sees it, the audit ledger's report, the
 * doctor's checks, a locked query's answer, the fleet roll-up — and the operator surface a
 * Brig carries, whichever side serves it (the daemon over its API, this process's stores).
 */
import type { Result } from './errors.js';
import type { LeaseRecord } from './leases.js';

export type LeaseState = 'live' | 'revoked' | 'expired';

/** A lease as an operator sees it: no token hash, with its state now. */
export type LeaseView = Omit<LeaseRecord, 'tokenHash'> & { state: LeaseState };

export interface LedgerBreak {
  file: string;
  /** 1-based line number in that file. */
  line: number;
  why: string;
}

export interface AnchorReport {
  /** The anchor file ($BRIG_HOME/ledger.anchor). */
  file: string;
  /** Segments it records (the chain's heads); 0 when there is no ledger yet. */
  segments: number;
  /** Open segments with lines past their entry: a live writer, or the window a crash leaves. */
  behind: { file: string; lines: number }[];
}

export interface LedgerReport {
  ok: boolean;
  files: number;
  lines: number;
  /** The first bad line, when not ok. */
  bad?: LedgerBreak;
  /** Segments with no `ledger.closed` line: still being written, or a crash. */
  open: string[];
  /** Open segments whose last line is cut mid-write (a machine crash); that line is not counted. */
  torn: string[];
  anchor: AnchorReport;
  /** The ledger directory verified. */
  dir?: string;
}

/** A started DuckDB helper read back from /proc (slice/helper-report.ts gathers it, jail/doctor.ts judges it). */
export interface HelperFacts {
  isolated: boolean;
  /** Why its credentials are not an isolated helper's (uid, gid, a capability), or null. */
  privilegeLeft: string | null;
  uid: number;
  capEff: string;
  /** RLIMIT_AS and RLIMIT_CPU as /proc/<pid>/limits shows them (soft), or null when unlimited. */
  addressSpaceBytes: number | null;
  cpuSeconds: number | null;
}

/** What grep, run through the slicer's own wrapper, read of itself (/proc/self). */
export interface ToolFacts {
  isolated: boolean;
  /** Why a tool's credentials, network or mounts are not an isolated one's, or null. */
  privilegeLeft: string | null;
  uid: number;
  capEff: string;
  interfaces: string[];
  /** RLIMIT_AS as grep read it, run with the slicer's default cap; null when unlimited. */
  addressSpaceBytes: number | null;
  /** Why isolating failed (grep/jq then run unisolated), or null. */
  fallback: string | null;
}

export interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
  hint?: string;
}

/** What one locked read-only SELECT answers (the audit ledger's `ledger` view, a ref's `ref`). */
export interface QueryResult {
  columns: string[];
  rows: unknown[][];
  truncated: boolean;
  /** Rows produced past the returned ones; a lower bound when `moreExact` is false. */
  more: number;
  moreExact: boolean;
}

/** A content-free roll-up of a window across every run tree. */
export interface FleetReport {
  since: string;
  until: string;
  runs: number;
  live: number;
  byEndReason: Record<string, number>;
  byKilledBy: Record<string, number>;
  /** Runs the health monitor killed for making no progress. */
  stuckKills: number;
  refusals: { total: number; byCode: Record<string, number>; byKind: Record<string, number> };
  tokens: number;
  costUsd: number;
  /** Runs that called an unpriced model: their cost is unknown, not 0. */
  costUnknownRuns: number;
  keptOutOfContext: { runs: number; materializedBytes: number; charsReentered: number; estSavedTokens: number };
  topTrees: { rootRunId: string; runs: number; tokens: number; costUsd: number }[];
  /**
   * The window in buckets of `bucketMinutes` (60 up to a 48-hour window, else 360), oldest
   * first, each from its `start`: runs created in it, and those of them that ended, by end
   * reason; the tokens they spent.
   */
  bucketMinutes: number;
  buckets: { start: string; runs: number; byEndReason: Record<string, number>; tokens: number }[];
  /** Request → child started (a run's createdAt → startedAt, the queue included), over the runs that started: ms. */
  spawnLatencyMs: { n: number; p50: number | null; p95: number | null };
  /**
   * Egress through the gate (ledger `egress.conn` and `egress.deny` in the window): connections
   * and bytes by rule, refusals by reason — rule ids, reasons and counts only.
   */
  egress: {
    connections: number;
    bytesUp: number;
    bytesDown: number;
    byRule: Record<string, { connections: number; bytesUp: number; bytesDown: number }>;
    refusals: number;
    refusalsByReason: Record<string, number>;
  };
}

export interface FleetOptions {
  sinceMinutes: number;
  /** How many trees to list by spend (default 5). */
  top?: number;
}

/**
 * Whether the home admits new runs (`brig admission pause|resume|status`): while paused,
 * running children go on, new spawns wait in the queue (refused `admission_paused` only when
 * it is full), and a resume starts them in order. Kept in $BRIG_HOME/admission.json: a
 * restarted daemon is still paused.
 */
export interface AdmissionState {
  paused: boolean;
  /** When the current state began (the last pause or resume); null when never changed. */
  since: string | null;
  /** Who paused or resumed last; null when never changed. */
  by: string | null;
  /** sha256 of the last pause's or resume's reason (the text itself is kept nowhere); null when none. */
  reasonHash: string | null;
  /** Runs waiting in the queue now (null when no supervisor of this home answers). */
  queued: number | null;
}

export interface AdmissionChange {
  /** Who (default `operator`); kept on the state and in the ledger. */
  by?: string;
  /** Why; only its sha256 is kept. */
  reason?: string;
}

/**
 * What an operator does with a home, on any Brig: leases (list, show, revoke: the daemon's
 * own store when one runs, so its runs end at once), the audit ledger (verify, a locked
 * query), the doctor, and the fleet roll-up.
 */
export interface OperatorSurface {
  readonly leases: {
    list(): Promise<{ leases: LeaseView[]; unreadable: string[] }>;
    /** The lease and its lineage up to the root; lease_not_found when unknown. */
    show(id: string): Promise<Result<{ lease: LeaseView; lineage: LeaseView[] }>>;
    /** Revokes the lease and its subtree (ledgered; their runs end killed). */
    revoke(id: string, reason?: string): Promise<Result<LeaseView[]>>;
  };
  readonly audit: {
    verify(): Promise<LedgerReport>;
    /** One read-only SELECT over the view `ledger`, locked down like the slicer. */
    query(sql: string, maxRows?: number): Promise<Result<QueryResult>>;
  };
  doctor(o?: { build?: boolean }): Promise<DoctorCheck[]>;
  fleet(o: FleetOptions): Promise<FleetReport>;
  /** Pause and resume admission (ledgered with who, when and the reason's hash); a repeat is not an error. */
  readonly admission: {
    status(): Promise<AdmissionState>;
    pause(c?: AdmissionChange): Promise<Result<AdmissionState>>;
    resume(c?: AdmissionChange): Promise<Result<AdmissionState>>;
  };
}
