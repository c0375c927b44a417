import { z } from 'zod';
import { REF_ID_RE, REF_SOURCES, RESULT_KINDS, RUN_ID_RE, type RefSource, type ResultKind, type ResultRef, type RunManifest } from '../protocol/index.js';

/** The ref vocabulary (protocol/refs.ts) and its schemas, declared against its types. */
export { PREVIEW_BYTES, REF_ID_RE, REF_SOURCES, RESULT_KINDS, RUN_ID_RE } from '../protocol/index.js';
export type { RefSource, ResultKind, ResultRef, RunManifest } from '../protocol/index.js';
export const ResultKindSchema = z.enum(RESULT_KINDS) satisfies z.ZodType<ResultKind>;
export const RefSourceSchema = z.enum(REF_SOURCES) satisfies z.ZodType<RefSource>;

export const ResultRefSchema = z.strictObject({
  /** Opaque, random: knowing one ref says nothing about any other. */
  ref: z.string().regex(REF_ID_RE),
  runId: z.string().regex(RUN_ID_RE),
  rootRunId: z.string().regex(RUN_ID_RE),
  /** Relative to the run's result directory, POSIX separators (`out/rows.jsonl`, `result.json`). */
  path: z.string().min(1),
  source: RefSourceSchema,
  kind: ResultKindSchema,
  bytes: z.number().int().nonnegative(),
  /** Data rows: lines for jsonl, lines minus the header for csv. */
  rows: z.number().int().nonnegative().optional(),
  /** The first 64 column names (each ≤ 64 chars); `columnCount` is set when there were more. */
  columns: z.array(z.string()).optional(),
  columnCount: z.number().int().nonnegative().optional(),
  /** Lines in the file (a last line without a newline counts). */
  lines: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** At most 2048 bytes of the head, cut at a UTF-8 boundary; empty for binary. */
  preview: z.string(),
  createdAt: z.string(),
  expiresAt: z.string(),
}) satisfies z.ZodType<ResultRef>;

export const RunManifestSchema = z.strictObject({
  runId: z.string().regex(RUN_ID_RE),
  rootRunId: z.string().regex(RUN_ID_RE),
  refs: z.array(ResultRefSchema),
  /** Entries of /workspace/out that were not turned into refs, and why (content-free). */
  skipped: z.array(z.strictObject({ path: z.string(), reason: z.string() })),
}) satisfies z.ZodType<RunManifest>;

/** Byte caps; over one is refused with `ref_too_large`, never truncated. */
export interface ResultCaps {
  maxFileBytes: number;
  maxRunBytes: number;
}

/** One line-index entry per this many lines: line N is a seek plus at most this many lines of scan. */
export const LINE_INDEX_STRIDE = 1024;
