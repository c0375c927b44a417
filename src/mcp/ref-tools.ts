/**
 * Drill-in: the five slice verbs over one ResultRef and the list of a run's refs, with the
 * same parameters as `brig ref …`. Each returns a bounded slice and says how much more there
 * was; the slicer does the confining (empty environment, locked DuckDB, the SQL guard) and
 * its refusals come back as refusal results (INV-5 lives in slice/, not here).
 */
import { z } from 'zod';
import type { SliceOutput } from '../index.js';
import { BrigError, type Result } from '../util/errors.js';
import { RunIdSchema } from './run-tools.js';
import { READ_ONLY, tool, type ToolDef } from './tool-def.js';
import { answer, outputShape, refusal } from './tool-result.js';
import { RefSummarySchema, refLine, refSummary } from './views.js';

const RefIdSchema = z.string().min(1).max(64).describe('a ResultRef id (ref_…), from an envelope or ref_list');
const MaxRows = z.number().int().min(1).max(10_000).optional().describe('at most this many back (the rest is counted)');

const SliceSchema = outputShape({
  ref: z.string(),
  verb: z.string(),
  text: z.string().optional().describe('read / grep / jq: the slice (base64 for a binary read)'),
  encoding: z.enum(['utf8', 'base64']).optional(),
  columns: z.array(z.string()).optional().describe('sql / jsonpath'),
  rows: z.array(z.array(z.unknown())).optional(),
  returned: z.number(),
  unit: z.enum(['bytes', 'lines', 'matches', 'rows', 'values']),
  more: z.number().describe('units past the slice (a lower bound when moreExact is false)'),
  moreExact: z.boolean(),
  note: z.string().optional().describe('"1,234 more lines" when cut'),
});

function sliceText(s: SliceOutput): string {
  let body: string;
  if (s.rows && s.columns) body = [JSON.stringify(s.columns), ...s.rows.map((r) => JSON.stringify(r))].join('\n');
  else body = s.text ?? '';
  const tail = s.note ? `\n… ${s.note}` : '';
  return `${body.endsWith('\n') ? body.slice(0, -1) : body}${tail}` || `(no ${s.unit})`;
}

function slice(res: Result<SliceOutput>) {
  if (!res.ok) return refusal(res.error);
  const { ref, verb, text, encoding, columns, rows, returned, unit, more, moreExact, note } = res.value;
  const s = { ref, verb, returned, unit, more, moreExact, ...(text !== undefined ? { text } : {}), ...(encoding ? { encoding } : {}), ...(columns ? { columns } : {}), ...(rows ? { rows } : {}), ...(note ? { note } : {}) };
  return answer(s, sliceText(res.value));
}

/** refs listed per ref_list page by default, and at most. */
const REF_PAGE = 50;
const REF_PAGE_MAX = 200;

const refList = tool({
  name: 'ref_list',
  title: 'List a run’s ResultRefs',
  description: 'Use to see every ResultRef of a run — id, kind, bytes, lines, rows, path — and what its collect skipped, to pick the ref to slice.',
  annotations: READ_ONLY,
  input: z.strictObject({
    runId: RunIdSchema,
    offset: z.number().int().nonnegative().optional().describe('the first ref to list (default 0)'),
    limit: z.number().int().positive().max(REF_PAGE_MAX).optional().describe(`refs per page (default ${REF_PAGE}, at most ${REF_PAGE_MAX})`),
  }),
  output: outputShape({
    runId: z.string(),
    refs: z.array(RefSummarySchema),
    skipped: z.array(z.object({ path: z.string(), reason: z.string() })),
    total: z.number().optional().describe('refs the run has; more than listed when a page is cut'),
    more: z.number().optional().describe('refs after this page (call again with offset)'),
  }),
  async run({ runId, offset = 0, limit = REF_PAGE }, { brig }) {
    const m = await brig.refs.manifest(runId);
    if (!m.ok) {
      const run = await brig.get(runId);
      if (!run) return refusal(new BrigError('run_not_found', `no run ${runId}`));
      if (run.status === 'ended') return refusal(m.error);
      return answer({ runId, refs: [], skipped: [] }, `run ${runId} is ${run.status}: its refs exist once it has ended. Call \`wait\`.`);
    }
    // A page, never the whole list: a child that wrote 10,000 files must not put them all in context.
    const all = m.value.refs;
    const refs = all.slice(offset, offset + limit).map(refSummary);
    const more = Math.max(0, all.length - offset - refs.length);
    const skipped = m.value.skipped.slice(0, REF_PAGE);
    const lines = [...refs.map(refLine), ...skipped.map((s) => `(skipped ${s.path}: ${s.reason})`)];
    if (more > 0) lines.push(`… ${more} more refs (of ${all.length}): call ref_list with offset ${offset + refs.length}`);
    if (m.value.skipped.length > skipped.length) lines.push(`… ${m.value.skipped.length - skipped.length} more skipped`);
    return answer({ runId, refs, skipped, total: all.length, more }, lines.join('\n') || 'no refs for this run');
  },
});

const refRead = tool({
  name: 'ref_read',
  title: 'Read a slice of a ref',
  description: 'Use to read part of a ref by line (1-based, a seek through its line index, not a scan) or by byte offset — never the whole of a large one; a cut slice says how much more there is.',
  annotations: READ_ONLY,
  input: z.strictObject({
    ref: RefIdSchema,
    line: z.number().int().min(1).optional().describe('start at this line (default 1, when offset is not given)'),
    lines: z.number().int().min(1).max(2000).optional().describe('how many lines from line (default 100)'),
    offset: z.number().int().min(0).optional().describe('start at this byte offset instead of a line'),
    length: z.number().int().min(1).max(256 * 1024).optional().describe('how many bytes from offset (default 64 KiB)'),
  }),
  output: SliceSchema,
  async run(a, { brig }) {
    if (a.offset !== undefined && (a.line !== undefined || a.lines !== undefined)) {
      return refusal(new BrigError('invalid_input', 'give line/lines or offset/length, not both', { hint: 'e.g. {ref, line: 2500, lines: 20} or {ref, offset: 0, length: 4096}' }));
    }
    if (a.offset === undefined && a.length !== undefined) return refusal(new BrigError('invalid_input', 'length goes with offset', { hint: 'Give offset with length, or lines with line.' }));
    const range = a.offset !== undefined ? { offset: a.offset, ...(a.length !== undefined ? { length: a.length } : {}) } : { line: a.line ?? 1, ...(a.lines !== undefined ? { lines: a.lines } : {}) };
    return slice(await brig.refs.read(a.ref, range));
  },
});

const refGrep = tool({
  name: 'ref_grep',
  title: 'Grep a ref',
  description: 'Use to find the lines of a ref matching an extended regex (or a fixed string), with line numbers and optional context — e.g. errors in a log — without reading it.',
  annotations: READ_ONLY,
  input: z.strictObject({
    ref: RefIdSchema,
    pattern: z.string().min(1).max(2000).describe('an extended regex (GNU grep -E), or a fixed string with fixed: true'),
    max: z.number().int().min(1).max(10_000).optional().describe('stop after this many matching lines (default 200)'),
    context: z.number().int().min(0).max(20).optional().describe('lines of context around each match'),
    ignoreCase: z.boolean().optional(),
    fixed: z.boolean().optional().describe('pattern is a fixed string, not a regex'),
  }),
  output: SliceSchema,
  async run(a, { brig }) {
    const opts = { ...(a.max !== undefined ? { maxMatches: a.max } : {}), ...(a.context !== undefined ? { context: a.context } : {}), ignoreCase: a.ignoreCase === true, fixed: a.fixed === true };
    return slice(await brig.refs.grep(a.ref, a.pattern, opts));
  },
});

const refJq = tool({
  name: 'ref_jq',
  title: 'jq over a ref',
  description: 'Use to filter or reshape a json / jsonl ref with a jq filter (one compact value per output line), e.g. select(.kind == "error") | .id.',
  annotations: READ_ONLY,
  input: z.strictObject({ ref: RefIdSchema, filter: z.string().min(1).max(4000).describe('a jq filter') }),
  output: SliceSchema,
  async run(a, { brig }) {
    return slice(await brig.refs.jq(a.ref, a.filter));
  },
});

const refSql = tool({
  name: 'ref_sql',
  title: 'SQL over a ref',
  description:
    'Use to count, group or aggregate a ref with one SELECT over the view `ref` (jsonl, json, csv, parquet; a text ref is one column `line`) in a locked, read-only DuckDB — e.g. SELECT kind, count(*) FROM ref GROUP BY 1; anything but one SELECT over the ref is refused.',
  annotations: READ_ONLY,
  input: z.strictObject({ ref: RefIdSchema, query: z.string().min(1).max(16_000).describe('one SELECT over the view `ref`'), maxRows: MaxRows }),
  output: SliceSchema,
  async run(a, { brig }) {
    return slice(await brig.refs.sql(a.ref, a.query, a.maxRows !== undefined ? { maxRows: a.maxRows } : {}));
  },
});

const refJsonpath = tool({
  name: 'ref_jsonpath',
  title: 'JSONPath over a ref',
  description: "Use to extract values from a json / jsonl ref with a strict JSONPath — $, .name, ['name'], [n], [*] (no filters or recursive descent) — e.g. $.items[*].id.",
  annotations: READ_ONLY,
  input: z.strictObject({ ref: RefIdSchema, path: z.string().min(1).max(1000).describe('a strict JSONPath starting at $'), maxRows: MaxRows }),
  output: SliceSchema,
  async run(a, { brig }) {
    return slice(await brig.refs.jsonpath(a.ref, a.path, a.maxRows !== undefined ? { maxRows: a.maxRows } : {}));
  },
});

export const REF_TOOLS: ToolDef[] = [refList, refRead, refGrep, refJq, refSql, refJsonpath];
