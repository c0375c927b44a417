import { z } from 'zod';

/** What a ResultRef's bytes are, decided by sniffing the first bytes plus the file name. */
export const RESULT_KINDS = ['json', 'jsonl', 'csv', 'text', 'binary'] as const;
export const ResultKindSchema = z.enum(RESULT_KINDS);
export type ResultKind = z.infer<typeof ResultKindSchema>;

/** Where a ref came from: the child's result value, its bounded stdio, or /workspace/out. */
/** `transcript`: an agent child's conversation as the supervisor served it (JSONL). */
export const REF_SOURCES = ['value', 'stdout', 'stderr', 'out', 'transcript'] as const;
export const RefSourceSchema = z.enum(REF_SOURCES);
export type RefSource = z.infer<typeof RefSourceSchema>;

export const REF_ID_RE = /^ref_[a-z2-7]{26}$/;
/** Run ids become directory names: a closed alphabet, never a path. */
export const RUN_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

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
});
export type ResultRef = z.infer<typeof ResultRefSchema>;

export const RunManifestSchema = z.strictObject({
  runId: z.string().regex(RUN_ID_RE),
  rootRunId: z.string().regex(RUN_ID_RE),
  refs: z.array(ResultRefSchema),
  /** Entries of /workspace/out that were not turned into refs, and why (content-free). */
  skipped: z.array(z.strictObject({ path: z.string(), reason: z.string() })),
});
export type RunManifest = z.infer<typeof RunManifestSchema>;

/** Byte caps; over one is refused with `ref_too_large`, never truncated. */
export interface ResultCaps {
  maxFileBytes: number;
  maxRunBytes: number;
}

export { PREVIEW_BYTES } from './preview-bytes.js';
/** One line-index entry per this many lines: line N is a seek plus at most this many lines of scan. */
export const LINE_INDEX_STRIDE = 1024;
