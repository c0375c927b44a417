/**
 * The five drill-in verbs over ONE ResultRef: read, grep, jq, sql, jsonpath.
 *
 * Guarantees: each verb reads only the ref's own file; each returns a bounded slice (bytes,
 * lines, matches or rows) and says how much more there was; errors come from a closed set
 * (ref_not_found, query_refused, query_failed, timeout, output_too_large) and never show host
 * paths. grep/jq run as argv-only subprocesses with an empty environment, isolated as the
 * helper is where the host allows it (tool-runner.ts), the ref as their stdin; sql/jsonpath
 * run in the locked DuckDB helper. Every grep, jq, sql and jsonpath call goes through the
 * SliceScheduler as its caller (the operator, or the child run a slicer was bound to with
 * `as`): admitted or refused `rate_limited`, queued in its lane, and run with what is left of
 * its time limit, which starts when the verb is called. Threat: hostile patterns, filters and
 * queries from a child or a relayed prompt, and floods of them. Trusts: the ResultStore's
 * manifest, the caller it is bound to. Fails closed.
 */
import fsp from 'node:fs/promises';
import os from 'node:os';
import type { GrepOptions, ReadRange, ResultRef } from '../protocol/index.js';
import { csvHasHeader } from '../results/index.js';
import { BrigError, type Result, err, ok, toBrigError } from '../util/errors.js';
import type { DuckdbHelperPool } from './duckdb-pool.js';
import { type Reader, scrubPaths } from './helper-protocol.js';
import { parseJsonPath } from './jsonpath.js';
import { lockedQuery } from './locked-query.js';
import { readBytes, readLines } from './read-slice.js';
import { OPERATOR_CALLER, type SliceCaller, SliceScheduler } from './slice-scheduler.js';
import { GREP, JQ } from './tool-runner.js';
import { type SliceOutput, type SliceVerb, clamp, intArg, out } from './slice-output.js';

export type { SliceOutput, SliceVerb } from './slice-output.js';

/** What the slicer needs from the store (FsResultStore has it). */
export interface RefReader {
  get(ref: string): Promise<ResultRef>;
  resolvePath(ref: ResultRef): string;
  lineIndex(ref: ResultRef): Promise<number[]>;
}

export interface SliceLimits {
  maxBytes: number;
  maxLines: number;
  maxMatches: number;
  maxRows: number;
  timeoutMs: number;
  /** Address-space cap for grep/jq. */
  toolMemoryBytes: number;
}

export const SLICE_DEFAULTS: SliceLimits = Object.freeze({
  maxBytes: 256 * 1024,
  maxLines: 2000,
  maxMatches: 200,
  maxRows: 500,
  timeoutMs: 30_000,
  toolMemoryBytes: 2 * 1024 ** 3,
});

/** Told of each verb call once it answered: its verb, lane, outcome (`ok` or the error code) and seconds from the call (metrics). */
export type SliceObserver = (call: { verb: SliceVerb; lane: SliceCaller['lane']; outcome: string; seconds: number }) => void;

export interface SlicerOptions {
  /**
   * The supervisor's one scheduler (its lanes hold the DuckDB pools). Without one the slicer
   * makes its own, with both lanes on `pool`: for a process with one slicer and no children.
   */
  scheduler?: SliceScheduler;
  /** Used only to make that scheduler. */
  pool?: DuckdbHelperPool;
  limits?: Partial<SliceLimits>;
  onSlice?: SliceObserver;
}

export class Slicer {
  private readonly limits: SliceLimits;
  private readonly scheduler: SliceScheduler;
  private readonly onSlice: SliceObserver | undefined;

  constructor(
    private readonly refs: RefReader,
    opts: SlicerOptions = {},
    /** Whose calls these are (the operator unless bound with `as`). */
    private readonly caller: SliceCaller = OPERATOR_CALLER,
  ) {
    this.limits = { ...SLICE_DEFAULTS, ...opts.limits };
    this.scheduler = opts.scheduler ?? new SliceScheduler({ operator: opts.pool ? { pool: opts.pool } : {}, child: opts.pool ? { pool: opts.pool } : {} });
    this.onSlice = opts.onSlice;
  }

  /** The same slicer (store, limits, scheduler) calling as `caller`. */
  as(caller: SliceCaller): Slicer {
    return new Slicer(this.refs, { scheduler: this.scheduler, limits: this.limits, ...(this.onSlice ? { onSlice: this.onSlice } : {}) }, caller);
  }

  read(ref: string, range: ReadRange): Promise<Result<SliceOutput>> {
    return this.guard('read', ref, async (r, file) =>
      'line' in range ? readLines(r, file, range, await this.refs.lineIndex(r), this.limits.maxBytes, this.limits.maxLines) : readBytes(r, file, range, this.limits.maxBytes),
    );
  }

  grep(ref: string, pattern: string, o: GrepOptions = {}): Promise<Result<SliceOutput>> {
    const deadline = Date.now() + this.limits.timeoutMs;
    return this.guard('grep', ref, async (r, file) => {
      if (pattern.length === 0 || pattern.length > 2000) throw refused('the pattern must be 1–2000 characters');
      // Bad numbers are the caller's mistake, said as such (not a grep error about `-C NaN`).
      const max = clamp(intArg(o.maxMatches ?? 50, 'maxMatches', 1), 1, this.limits.maxMatches);
      const ctx = clamp(intArg(o.context ?? 0, 'context', 0), 0, 20);
      const flags = ['-n', '-a', o.fixed ? '-F' : '-E', ...(o.ignoreCase ? ['-i'] : []), ...(ctx > 0 ? ['-C', String(ctx)] : [])];
      // One slot for both passes, within one deadline.
      // The ref is grep's stdin (as jq's): an isolated tool has no path to it.
      return this.scheduler.run(this.caller, 'tool', deadline, async ({ remainingMs, nice, tools }) => {
        const res = await tools.run({
          nice,
          cmd: GREP,
          args: [...flags, '-m', String(max), '--', pattern],
          stdinFile: file,
          timeoutMs: remainingMs,
          maxBytes: this.limits.maxBytes,
          maxMemoryBytes: this.limits.toolMemoryBytes,
        });
        if (res.timedOut) throw timeoutError('grep', this.limits.timeoutMs);
        if (res.code === 2 && !res.cut) throw new BrigError('query_failed', `grep: ${scrub(res.stderr, file)}`);
        const text = res.stdout.toString('utf8');
        const matches = text.split('\n').filter((l) => /^\d+:/.test(l)).length;
        let more = 0;
        let moreExact = true;
        const left = deadline - Date.now();
        if ((matches >= max || res.cut) && left < 1) moreExact = false;
        else if (matches >= max || res.cut) {
          // Cut: count the rest in a second bounded pass (only paid when there is more).
          const count = await tools.run({
            nice,
            cmd: GREP,
            args: ['-c', '-a', o.fixed ? '-F' : '-E', ...(o.ignoreCase ? ['-i'] : []), '--', pattern],
            stdinFile: file,
            timeoutMs: left,
            maxBytes: 64,
            maxMemoryBytes: this.limits.toolMemoryBytes,
          });
          const total = Number(count.stdout.toString().trim());
          if (count.timedOut || !Number.isFinite(total)) moreExact = false;
          else more = Math.max(0, total - matches);
        }
        return out(r.ref, 'grep', { text: cutUtf8(text, res.cut), encoding: 'utf8', returned: matches, unit: 'matches', more, moreExact });
      });
    });
  }

  jq(ref: string, expr: string): Promise<Result<SliceOutput>> {
    const deadline = Date.now() + this.limits.timeoutMs;
    return this.guard('jq', ref, async (r, file) => {
      if (r.kind !== 'json' && r.kind !== 'jsonl') throw refused(`jq needs a json or jsonl ref; this one is ${r.kind}`);
      const why = jqRefusal(expr);
      if (why) throw refused(why);
      // Debian's jq 1.6 rejects `--` before the filter; a leading space keeps a filter that
      // starts with '-' from being read as an option, with the same meaning to jq.
      const res = await this.scheduler.run(this.caller, 'tool', deadline, ({ remainingMs, nice, tools }) =>
        tools.run({
          nice,
          cmd: JQ,
          args: ['-c', expr.startsWith('-') ? ` ${expr}` : expr],
          stdinFile: file,
          timeoutMs: remainingMs,
          maxBytes: this.limits.maxBytes,
          maxMemoryBytes: this.limits.toolMemoryBytes,
        }),
      );
      if (res.timedOut) throw timeoutError('jq', this.limits.timeoutMs);
      if (res.code !== 0 && !res.cut) throw new BrigError('query_failed', `jq: ${scrub(res.stderr, file).trim().split('\n')[0]}`);
      const text = cutUtf8(res.stdout.toString('utf8'), res.cut);
      const lines = text.length === 0 ? 0 : text.split('\n').filter((l) => l.length > 0).length;
      return out(r.ref, 'jq', { text, encoding: 'utf8', returned: lines, unit: 'values', more: res.cut ? 1 : 0, moreExact: !res.cut });
    });
  }

  sql(ref: string, query: string, o: { maxRows?: number } = {}): Promise<Result<SliceOutput>> {
    const deadline = Date.now() + this.limits.timeoutMs;
    return this.guard('sql', ref, async (r, file) => {
      const reader = await readerFor(r, file);
      const maxRows = clamp(intArg(o.maxRows ?? 100, 'maxRows', 1), 1, this.limits.maxRows);
      const res = await this.scheduler.run(this.caller, 'helper', deadline, ({ pool, remainingMs }) =>
        lockedQuery({
          files: [file],
          viewName: 'ref',
          reader,
          sql: query,
          maxRows,
          maxBytes: this.limits.maxBytes,
          timeoutMs: remainingMs,
          threads: Math.min(4, os.availableParallelism()),
          fileArgs: { [r.ref]: file, [r.path]: file, ref: file },
          ...(pool ? { pool } : {}),
        }),
      );
      return out(r.ref, 'sql', { columns: res.columns, rows: res.rows, returned: res.rows.length, unit: 'rows', more: res.more, moreExact: res.moreExact });
    });
  }

  jsonpath(ref: string, expr: string, o: { maxRows?: number } = {}): Promise<Result<SliceOutput>> {
    const deadline = Date.now() + this.limits.timeoutMs;
    return this.guard('jsonpath', ref, async (r, file) => {
      if (r.kind !== 'json' && r.kind !== 'jsonl') throw refused(`jsonpath needs a json or jsonl ref; this one is ${r.kind}`);
      const p = parseJsonPath(expr);
      if (!p.ok) throw refused(`jsonpath: ${p.error}`);
      const lit = `'${p.value.duckPath.replaceAll("'", "''")}'`;
      const maxRows = clamp(intArg(o.maxRows ?? 100, 'maxRows', 1), 1, this.limits.maxRows);
      const res = await this.scheduler.run(this.caller, 'helper', deadline, ({ pool, remainingMs }) =>
        lockedQuery({
          files: [file],
          viewName: 'ref',
          reader: r.kind === 'jsonl' ? 'read_ndjson_objects' : 'read_json_objects',
          sql: `SELECT v FROM (SELECT json_extract(json, ${lit}) AS v FROM ref) WHERE v IS NOT NULL`,
          maxRows,
          maxBytes: this.limits.maxBytes,
          timeoutMs: remainingMs,
          threads: Math.min(4, os.availableParallelism()),
          ...(pool ? { pool } : {}),
        }),
      );
      const rows = res.rows.map((row) => [parseJsonCell(row[0])]);
      return out(r.ref, 'jsonpath', { columns: ['value'], rows, returned: rows.length, unit: 'values', more: res.more, moreExact: res.moreExact });
    });
  }

  /** Resolves the ref, runs the verb, turns any failure into a closed-set, path-free error. */
  private async guard(verb: SliceVerb, ref: string, fn: (r: ResultRef, file: string) => Promise<SliceOutput>): Promise<Result<SliceOutput>> {
    const t0 = performance.now();
    const res = await this.answer(ref, fn);
    this.onSlice?.({ verb, lane: this.caller.lane, outcome: res.ok ? 'ok' : res.error.code, seconds: (performance.now() - t0) / 1000 });
    return res;
  }

  private async answer(ref: string, fn: (r: ResultRef, file: string) => Promise<SliceOutput>): Promise<Result<SliceOutput>> {
    let file = '';
    try {
      const r = await this.refs.get(ref);
      file = this.refs.resolvePath(r);
      return ok(await fn(r, file));
    } catch (e) {
      const be = toBrigError(e);
      const code = SLICE_ERRORS.includes(be.code) ? be.code : 'query_failed';
      // The scheduler's refusals keep their own hint (what to wait for).
      const hint = code === 'rate_limited' || (code === 'timeout' && be.data.queued) ? { hint: be.hint } : {};
      return err(new BrigError(code, scrub(be.message, file), { ...(Object.keys(be.data).length ? { data: { ...be.data } } : {}), ...hint }));
    }
  }
}

/** The codes a verb answers with; anything else becomes query_failed. */
const SLICE_ERRORS: readonly string[] = ['ref_not_found', 'query_refused', 'query_failed', 'timeout', 'output_too_large', 'invalid_input', 'rate_limited'];

/** The reader a view needs for this ref's kind. */
async function readerFor(r: ResultRef, file: string): Promise<Reader> {
  switch (r.kind) {
    case 'jsonl':
      return 'read_ndjson';
    case 'json':
      return 'read_json_auto';
    case 'csv': {
      // The same decision the ref's rows/columns were made from: the file's first 64 KiB.
      const fh = await fsp.open(file, 'r');
      const head = Buffer.alloc(65536);
      const { bytesRead } = await fh.read(head, 0, head.length, 0).finally(() => fh.close());
      return csvHasHeader(head.subarray(0, bytesRead)) ? 'read_csv_header' : 'read_csv_headerless';
    }
    case 'text':
      return 'read_lines';
    case 'binary': {
      const fh = await fsp.open(file, 'r');
      const magic = Buffer.alloc(4);
      await fh.read(magic, 0, 4, 0).finally(() => fh.close());
      if (magic.toString('latin1') === 'PAR1') return 'read_parquet';
      throw refused('sql needs a json, jsonl, csv, text or parquet ref; this one is binary');
    }
  }
}

/**
 * jq directives (import/include/module) can only open a program; refusing them keeps jq from
 * reading any .jq/.json file on the host. (It also runs in an empty directory with no env.)
 */
export function jqRefusal(expr: string): string | undefined {
  if (expr.length === 0 || expr.length > 10_000) return 'the filter must be 1–10000 characters';
  if (expr.includes('\0')) return 'the filter may not contain NUL';
  let s = expr;
  for (;;) {
    const t = s.replace(/^\s+/, '');
    if (t.startsWith('#')) {
      const nl = t.indexOf('\n');
      s = nl === -1 ? '' : t.slice(nl + 1);
      continue;
    }
    s = t;
    break;
  }
  if (/^(import|include|module)\b/.test(s)) return 'jq modules (import/include/module) are not allowed';
  if (/\b(get_search_list|modulemeta|\$__prog_args)\b/.test(expr)) return 'this jq builtin is not allowed';
  return undefined;
}

/** json_extract returns JSON text, or a list of JSON texts for a wildcard path. */
function parseJsonCell(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(parseJsonCell);
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

function cutUtf8(text: string, cut: boolean): string {
  // A cut stream may end mid-character; the replacement char at the end is dropped.
  return cut ? text.replace(/\uFFFD+$/, '') : text;
}

function refused(reason: string): BrigError {
  return new BrigError('query_refused', reason, { data: { reason } });
}

function timeoutError(tool: string, ms: number): BrigError {
  return new BrigError('timeout', `${tool} ran past ${ms} ms and was killed`);
}

function scrub(message: string, file: string): string {
  return scrubPaths(message, file ? [file] : []);
}
