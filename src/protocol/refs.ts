/**
 * The drill-in vocabulary: a ResultRef and a run's manifest, what every slice verb answers,
 * the envelope a coordinator receives and the savings it reports. results/ and slice/ declare
 * their schemas against these types; the child's SDK and every face name them from here.
 */
import type { Result } from './errors.js';

/** What a ResultRef's bytes are, decided by sniffing the first bytes plus the file name. */
export const RESULT_KINDS = ['json', 'jsonl', 'csv', 'text', 'binary'] as const;
export type ResultKind = (typeof RESULT_KINDS)[number];

/**
 * Where a ref came from: the child's result value, its bounded stdio, /workspace/out, or
 * (`transcript`) an agent child's conversation as the supervisor served it (JSONL).
 */
export const REF_SOURCES = ['value', 'stdout', 'stderr', 'out', 'transcript', 'changes'] as const;
export type RefSource = (typeof REF_SOURCES)[number];

/** Opaque, random: knowing one ref says nothing about any other. */
export const REF_ID_RE = /^ref_[a-z2-7]{26}$/;
/** Run ids become directory names: a closed alphabet, never a path. */
export const RUN_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
/** A ref's preview: at most this many bytes of its head, cut at a UTF-8 boundary. */
export const PREVIEW_BYTES = 2048;

export interface ResultRef {
  ref: string;
  runId: string;
  rootRunId: string;
  /** Relative to the run's result directory, POSIX separators (`out/rows.jsonl`, `result.json`). */
  path: string;
  source: RefSource;
  kind: ResultKind;
  bytes: number;
  /** Data rows: lines for jsonl, lines minus the header for csv. */
  rows?: number | undefined;
  /** The first 64 column names (each ≤ 64 chars); `columnCount` is set when there were more. */
  columns?: string[] | undefined;
  columnCount?: number | undefined;
  /** Lines in the file (a last line without a newline counts). */
  lines: number;
  sha256: string;
  /** At most PREVIEW_BYTES of the head, cut at a UTF-8 boundary; empty for binary. */
  preview: string;
  createdAt: string;
  expiresAt: string;
}

export interface RunManifest {
  runId: string;
  rootRunId: string;
  refs: ResultRef[];
  /** Entries of /workspace/out that were not turned into refs, and why (content-free). */
  skipped: { path: string; reason: string }[];
}

export const SLICE_VERBS = ['read', 'grep', 'jq', 'sql', 'jsonpath'] as const;
export type SliceVerb = (typeof SLICE_VERBS)[number];

/** What every slice verb returns. */
export interface SliceOutput {
  ref: string;
  verb: SliceVerb;
  /** read/grep/jq: the slice as text (base64 for a binary read). */
  text?: string;
  encoding?: 'utf8' | 'base64';
  /** sql/jsonpath */
  columns?: string[];
  rows?: unknown[][];
  returned: number;
  unit: 'bytes' | 'lines' | 'matches' | 'rows' | 'values';
  /** How many more units there were past the slice; a lower bound when moreExact is false. */
  more: number;
  moreExact: boolean;
  /** "1,234 more lines" when cut, absent otherwise. */
  note?: string;
}

/** A read by byte range (offset, length) or by line (line, lines). */
export type ReadRange = { offset: number; length?: number } | { line: number; lines?: number };

export interface GrepOptions {
  maxMatches?: number;
  context?: number;
  ignoreCase?: boolean;
  /** The pattern is a fixed string, not a regex. */
  fixed?: boolean;
}

/**
 * The context economy, as a labelled estimate:
 *   estSavedTokens = max(0, round(materializedBytes / 4) − round(charsReentered / 4)).
 */
export interface Savings {
  materializedBytes: number;
  charsReentered: number;
  estSavedTokens: number;
  /** Absent when nothing was materialized (no would-be cost to divide by). */
  savedRatio?: number;
}

export type CondenseStrategy = 'auto' | 'always' | 'never';
export type CondensationLevel = 1 | 2 | 3;

/** A Level 2 summary's validated structure. */
export interface CondensedSummary {
  summary: string;
  conclusions: string[];
  filePaths: string[];
  actionableItems: string[];
  errors: string[];
  keyData: Record<string, string | number | boolean | null>;
}

export interface Condensed {
  level: CondensationLevel;
  /** `passthrough` | `LLM summary` | `head+tail` */
  levelName: string;
  body: string;
  originalTokens: number;
  condensedTokens: number;
  /** condensedTokens / originalTokens (1 when the original is empty). */
  ratio: number;
  structured?: CondensedSummary;
  /** Why Level 2 was not used when it was wanted (content-free). */
  fallback?: string;
}

/** What a coordinator receives of a run: the narrative-cast envelope, how it was condensed, what it saved. */
export interface RunEnvelope {
  envelope: string;
  condensed: Condensed;
  savings: Savings;
}

export interface RunResult extends RunEnvelope {
  runId: string;
  refs: ResultRef[];
}

export interface ResultOptions {
  /**
   * Cast afresh with this condensation strategy and do not keep it: a look (`brig result
   * --strategy`), never the envelope the coordinator got. Absent: that envelope (kept).
   */
  strategy?: CondenseStrategy;
}

/**
 * The drill-in surface a face holds: the RefService in this process, or the daemon's over its
 * API (client/). Both answer the same way, refusals as Result values.
 */
export interface RefSurface {
  list(runId: string): Promise<Result<ResultRef[]>>;
  manifest(runId: string): Promise<Result<RunManifest>>;
  read(ref: string, range: ReadRange): Promise<Result<SliceOutput>>;
  grep(ref: string, pattern: string, opts?: GrepOptions): Promise<Result<SliceOutput>>;
  jq(ref: string, expr: string): Promise<Result<SliceOutput>>;
  sql(ref: string, query: string, opts?: { maxRows?: number }): Promise<Result<SliceOutput>>;
  jsonpath(ref: string, expr: string, opts?: { maxRows?: number }): Promise<Result<SliceOutput>>;
  result(runId: string, o?: ResultOptions): Promise<Result<RunResult>>;
  peek(runId: string): Promise<Result<RunResult>>;
}
