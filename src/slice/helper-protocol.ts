import { z } from 'zod';

/**
 * The JSON-lines protocol between the supervisor and the DuckDB helper process.
 * One request per line on the helper's stdin, one reply per line on its stdout.
 */

/** How a view reads its files. Chosen by brig (from the ref's kind), never by the query. */
export const READERS = [
  'read_ndjson',
  'read_json_auto',
  'read_csv_auto', // DuckDB's sniffer decides the header
  'read_csv_header', // csv whose first line brig decided is a header (results/kind.ts csvHasHeader)
  'read_csv_headerless', // csv whose first line is data: columns column0, column1, …
  'read_parquet',
  'read_lines', // text: one VARCHAR column `line`
  'read_ndjson_objects', // jsonpath over JSON lines: one JSON column `json` per line
  'read_json_objects', // jsonpath over a JSON document
] as const;
export const ReaderSchema = z.enum(READERS);
export type Reader = z.infer<typeof ReaderSchema>;

export const ViewSpecSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
  reader: ReaderSchema,
  files: z.array(z.string().min(1)).min(1),
});
export type ViewSpec = z.infer<typeof ViewSpecSchema>;

export const HelperRequestSchema = z.strictObject({
  id: z.number().int(),
  sql: z.string().max(100_000),
  views: z.array(ViewSpecSchema).min(1),
  /** Reader table functions may be called on these names only; each maps to one allowed file. */
  fileArgs: z.record(z.string(), z.string()),
  maxRows: z.number().int().positive(),
  /** Cap on the JSON size of the returned rows; rows past it are counted, not sent. */
  maxBytes: z.number().int().positive(),
  timeoutMs: z.number().int().positive(),
  memoryLimit: z.string().regex(/^\d+(KB|MB|GB)$/),
  threads: z.number().int().positive().max(64),
  /** Private spill directory (created and removed by the caller) and its cap. */
  tempDir: z.string().min(1),
  maxTempSize: z.string().regex(/^\d+(KB|MB|GB)$/),
});
export type HelperRequest = z.infer<typeof HelperRequestSchema>;

/** A helper's credentials as its own /proc/self/status shows them (cap sets as hex). */
export const HelperSelfSchema = z.strictObject({
  uid: z.array(z.number().int()),
  gid: z.array(z.number().int()),
  groups: z.array(z.number().int()),
  capInh: z.string(),
  capPrm: z.string(),
  capEff: z.string(),
  capBnd: z.string(),
  capAmb: z.string(),
  noNewPrivs: z.number().int(),
});
export type HelperSelf = z.infer<typeof HelperSelfSchema>;

/** The helper's first line: it is ready, whether it runs isolated, and what it runs as. */
export const HelperReadySchema = z.strictObject({ ready: z.literal(true), isolated: z.boolean(), self: HelperSelfSchema });
export type HelperReady = z.infer<typeof HelperReadySchema>;

export const HelperErrorCodeSchema = z.enum(['query_refused', 'query_failed', 'timeout', 'internal']);
export const HelperReplySchema = z.union([
  z.strictObject({
    id: z.number().int(),
    ok: z.literal(true),
    columns: z.array(z.string()),
    rows: z.array(z.array(z.unknown())),
    /** Rows the query produced beyond those returned (counted, never sent). */
    more: z.number().int().nonnegative(),
    /** False when counting the rest was cut by the time budget: `more` is then a lower bound. */
    moreExact: z.boolean(),
  }),
  z.strictObject({
    id: z.number().int(),
    ok: z.literal(false),
    error: z.strictObject({ code: HelperErrorCodeSchema, message: z.string() }),
  }),
]);
export type HelperReply = z.infer<typeof HelperReplySchema>;

/**
 * Removes host paths from a message before it leaves the helper or the slice layer:
 * the known files become `<ref>`, any other absolute path becomes `<path>`.
 */
export function scrubPaths(message: string, known: readonly string[] = []): string {
  let out = message;
  for (const k of [...known].sort((a, b) => b.length - a.length)) if (k.length > 1) out = out.split(k).join('<ref>');
  return out.replace(/(^|[\s"'`(=\[,])\/(?!\/)[^\s"'`)\],]*/g, '$1<path>');
}
