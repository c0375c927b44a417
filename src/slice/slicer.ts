/**
 * The five drill-in verbs over ONE ResultRef: read, grep, jq, sql, jsonpath.
 *
 * Guarantees: each verb reads only the ref's own file; each returns a bounded slice (bytes,
 * lines, matches or rows) and says how much more there was; errors come from a closed set
 * (ref_not_found, query_refused, query_failed, timeout, output_too_large) and never show host
 * paths. grep/jq run as argv-only subprocesses with an empty environment; sql/jsonpath run in
 * the locked DuckDB helper. Threat: hostile patterns, filters and queries from a child or a
 * relayed prompt. Trusts: the ResultStore's manifest. Fails closed.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import { LINE_INDEX_STRIDE, type ResultRef } from '../results/index.js';
import { BrigError, type Result, err, ok, toBrigError } from '../util/errors.js';
import { boundedExec } from './bounded-exec.js';
import type { DuckdbHelperPool } from './duckdb-pool.js';
import { type Reader, scrubPaths } from './helper-protocol.js';
import { parseJsonPath } from './jsonpath.js';
import { lockedQuery } from './locked-query.js';

/** What the slicer needs from the store (FsResultStore has it). */
export interface RefReader {
  get(ref: string): Promise<ResultRef>;
  resolvePath(ref: ResultRef): string;
  lineIndex(ref: ResultRef): Promise<number[]>;
}

export type SliceVerb = 'read' | 'grep' | 'jq' | 'sql' | 'jsonpath';

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

export type ReadRange = { offset: number; length?: number } | { line: number; lines?: number };

export interface GrepOptions {
  maxMatches?: number;
  context?: number;
  ignoreCase?: boolean;
  /** The pattern is a fixed string, not a regex. */
  fixed?: boolean;
}

const GREP = ['/usr/bin/grep', '/bin/grep'].find((p) => fs.existsSync(p)) ?? '/usr/bin/grep';
const JQ = '/usr/bin/jq';

export class Slicer {
  private readonly limits: SliceLimits;

  constructor(
    private readonly refs: RefReader,
    private readonly opts: { pool?: DuckdbHelperPool; limits?: Partial<SliceLimits> } = {},
  ) {
    this.limits = { ...SLICE_DEFAULTS, ...opts.limits };
  }

  read(ref: string, range: ReadRange): Promise<Result<SliceOutput>> {
    return this.guard(ref, async (r, file) => ('line' in range ? this.readLines(r, file, range) : this.readBytes(r, file, range)));
  }

  grep(ref: string, pattern: string, o: GrepOptions = {}): Promise<Result<SliceOutput>> {
    return this.guard(ref, async (r, file) => {
      if (pattern.length === 0 || pattern.length > 2000) throw refused('the pattern must be 1–2000 characters');
      const max = clamp(o.maxMatches ?? 50, 1, this.limits.maxMatches);
      const ctx = clamp(o.context ?? 0, 0, 20);
      const flags = ['-n', '-a', o.fixed ? '-F' : '-E', ...(o.ignoreCase ? ['-i'] : []), ...(ctx > 0 ? ['-C', String(ctx)] : [])];
      const res = await boundedExec({
        cmd: GREP,
        args: [...flags, '-m', String(max), '--', pattern, file],
        timeoutMs: this.limits.timeoutMs,
        maxBytes: this.limits.maxBytes,
        maxMemoryBytes: this.limits.toolMemoryBytes,
      });
      if (res.timedOut) throw timeoutError('grep', this.limits.timeoutMs);
      if (res.code === 2 && !res.cut) throw new BrigError('query_failed', `grep: ${scrub(res.stderr, file)}`);
      const text = res.stdout.toString('utf8');
      const matches = text.split('\n').filter((l) => /^\d+:/.test(l)).length;
      let more = 0;
      let moreExact = true;
      if (matches >= max || res.cut) {
        // Cut: count the rest in a second bounded pass (only paid when there is more).
        const count = await boundedExec({
          cmd: GREP,
          args: ['-c', '-a', o.fixed ? '-F' : '-E', ...(o.ignoreCase ? ['-i'] : []), '--', pattern, file],
          timeoutMs: this.limits.timeoutMs,
          maxBytes: 64,
          maxMemoryBytes: this.limits.toolMemoryBytes,
        });
        const total = Number(count.stdout.toString().trim());
        if (count.timedOut || !Number.isFinite(total)) moreExact = false;
        else more = Math.max(0, total - matches);
      }
      return out(r.ref, 'grep', { text: cutUtf8(text, res.cut), encoding: 'utf8', returned: matches, unit: 'matches', more, moreExact });
    });
  }

  jq(ref: string, expr: string): Promise<Result<SliceOutput>> {
    return this.guard(ref, async (r, file) => {
      if (r.kind !== 'json' && r.kind !== 'jsonl') throw refused(`jq needs a json or jsonl ref; this one is ${r.kind}`);
      const why = jqRefusal(expr);
      if (why) throw refused(why);
      // Debian's jq 1.6 rejects `--` before the filter; a leading space keeps a filter that
      // starts with '-' from being read as an option, with the same meaning to jq.
      const res = await boundedExec({
        cmd: JQ,
        args: ['-c', expr.startsWith('-') ? ` ${expr}` : expr],
        stdinFile: file,
        timeoutMs: this.limits.timeoutMs,
        maxBytes: this.limits.maxBytes,
        maxMemoryBytes: this.limits.toolMemoryBytes,
      });
      if (res.timedOut) throw timeoutError('jq', this.limits.timeoutMs);
      if (res.code !== 0 && !res.cut) throw new BrigError('query_failed', `jq: ${scrub(res.stderr, file).trim().split('\n')[0]}`);
      const text = cutUtf8(res.stdout.toString('utf8'), res.cut);
      const lines = text.length === 0 ? 0 : text.split('\n').filter((l) => l.length > 0).length;
      return out(r.ref, 'jq', { text, encoding: 'utf8', returned: lines, unit: 'values', more: res.cut ? 1 : 0, moreExact: !res.cut });
    });
  }

  sql(ref: string, query: string, o: { maxRows?: number } = {}): Promise<Result<SliceOutput>> {
    return this.guard(ref, async (r, file) => {
      const reader = await readerFor(r, file);
      const res = await lockedQuery({
        files: [file],
        viewName: 'ref',
        reader,
        sql: query,
        maxRows: clamp(o.maxRows ?? 100, 1, this.limits.maxRows),
        maxBytes: this.limits.maxBytes,
        timeoutMs: this.limits.timeoutMs,
        threads: Math.min(4, os.availableParallelism()),
        fileArgs: { [r.ref]: file, [r.path]: file, ref: file },
        ...(this.opts.pool ? { pool: this.opts.pool } : {}),
      });
      return out(r.ref, 'sql', { columns: res.columns, rows: res.rows, returned: res.rows.length, unit: 'rows', more: res.more, moreExact: res.moreExact });
    });
  }

  jsonpath(ref: string, expr: string, o: { maxRows?: number } = {}): Promise<Result<SliceOutput>> {
    return this.guard(ref, async (r, file) => {
      if (r.kind !== 'json' && r.kind !== 'jsonl') throw refused(`jsonpath needs a json or jsonl ref; this one is ${r.kind}`);
      const p = parseJsonPath(expr);
      if (!p.ok) throw refused(`jsonpath: ${p.error}`);
      const lit = `'${p.value.duckPath.replaceAll("'", "''")}'`;
      const res = await lockedQuery({
        files: [file],
        viewName: 'ref',
        reader: r.kind === 'jsonl' ? 'read_ndjson_objects' : 'read_json_objects',
        sql: `SELECT v FROM (SELECT json_extract(json, ${lit}) AS v FROM ref) WHERE v IS NOT NULL`,
        maxRows: clamp(o.maxRows ?? 100, 1, this.limits.maxRows),
        maxBytes: this.limits.maxBytes,
        timeoutMs: this.limits.timeoutMs,
        threads: Math.min(4, os.availableParallelism()),
        ...(this.opts.pool ? { pool: this.opts.pool } : {}),
      });
      const rows = res.rows.map((row) => [parseJsonCell(row[0])]);
      return out(r.ref, 'jsonpath', { columns: ['value'], rows, returned: rows.length, unit: 'values', more: res.more, moreExact: res.moreExact });
    });
  }

  private async readBytes(r: ResultRef, file: string, range: { offset: number; length?: number }): Promise<SliceOutput> {
    const offset = intArg(range.offset, 'offset', 0);
    const want = clamp(intArg(range.length ?? 64 * 1024, 'length', 1), 1, this.limits.maxBytes);
    const fh = await fsp.open(file, 'r');
    try {
      const buf = Buffer.alloc(Math.min(want, Math.max(0, r.bytes - offset)));
      const { bytesRead } = buf.length > 0 ? await fh.read(buf, 0, buf.length, offset) : { bytesRead: 0 };
      const got = buf.subarray(0, bytesRead);
      const binary = r.kind === 'binary';
      const text = binary ? got.toString('base64') : got.toString('utf8');
      const more = Math.max(0, r.bytes - offset - bytesRead);
      return out(r.ref, 'read', { text, encoding: binary ? 'base64' : 'utf8', returned: bytesRead, unit: 'bytes', more, moreExact: true });
    } finally {
      await fh.close();
    }
  }

  /** Line N (1-based): seek to the nearest indexed line at or before it, scan forward. */
  private async readLines(r: ResultRef, file: string, range: { line: number; lines?: number }): Promise<SliceOutput> {
    const line = intArg(range.line, 'line', 1);
    const want = clamp(intArg(range.lines ?? 100, 'lines', 1), 1, this.limits.maxLines);
    if (line > r.lines) return out(r.ref, 'read', { text: '', encoding: 'utf8', returned: 0, unit: 'lines', more: 0, moreExact: true });
    const index = await this.refs.lineIndex(r);
    const k = Math.min(Math.floor((line - 1) / LINE_INDEX_STRIDE), Math.max(0, index.length - 1));
    let skip = line - 1 - k * LINE_INDEX_STRIDE;
    let pos = index[k] ?? 0;
    const fh = await fsp.open(file, 'r');
    const parts: Buffer[] = [];
    let taken = 0;
    let bytes = 0;
    let cut = false;
    try {
      const buf = Buffer.alloc(64 * 1024);
      let carry = Buffer.alloc(0);
      outer: while (taken < want) {
        const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
        if (bytesRead === 0) {
          if (carry.length > 0 && skip === 0) parts.push(carry), taken++;
          break;
        }
        pos += bytesRead;
        let chunk = carry.length ? Buffer.concat([carry, buf.subarray(0, bytesRead)]) : buf.subarray(0, bytesRead);
        let start = 0;
        let nl = chunk.indexOf(10, start);
        while (nl !== -1) {
          if (skip > 0) skip--;
          else {
            const piece = chunk.subarray(start, nl + 1);
            if (bytes + piece.length > this.limits.maxBytes) {
              cut = true;
              break outer;
            }
            parts.push(Buffer.from(piece));
            bytes += piece.length;
            if (++taken >= want) break outer;
          }
          start = nl + 1;
          nl = chunk.indexOf(10, start);
        }
        carry = Buffer.from(chunk.subarray(start));
        if (carry.length > this.limits.maxBytes) {
          cut = true;
          break;
        }
        chunk = carry;
      }
    } finally {
      await fh.close();
    }
    if (taken === 0 && cut) throw new BrigError('output_too_large', `line ${line} is longer than the ${this.limits.maxBytes}-byte cap`, { hint: 'Read it by bytes: --offset/--length.' });
    const more = Math.max(0, r.lines - (line - 1) - taken);
    const text = Buffer.concat(parts).toString('utf8');
    return out(r.ref, 'read', { text, encoding: 'utf8', returned: taken, unit: 'lines', more, moreExact: true, ...(cut ? { cutByBytes: true } : {}) });
  }

  /** Resolves the ref, runs the verb, turns any failure into a closed-set, path-free error. */
  private async guard(ref: string, fn: (r: ResultRef, file: string) => Promise<SliceOutput>): Promise<Result<SliceOutput>> {
    let file = '';
    try {
      const r = await this.refs.get(ref);
      file = this.refs.resolvePath(r);
      return ok(await fn(r, file));
    } catch (e) {
      const be = toBrigError(e);
      const code = ['ref_not_found', 'query_refused', 'query_failed', 'timeout', 'output_too_large', 'invalid_input'].includes(be.code) ? be.code : 'query_failed';
      return err(new BrigError(code, scrub(be.message, file), Object.keys(be.data).length ? { data: { ...be.data } } : {}));
    }
  }
}

function out(ref: string, verb: SliceVerb, o: Omit<SliceOutput, 'ref' | 'verb' | 'note'> & { cutByBytes?: boolean }): SliceOutput {
  const { cutByBytes, ...rest } = o;
  const note =
    o.more > 0 || cutByBytes
      ? `${o.moreExact ? '' : 'at least '}${o.more.toLocaleString('en-US')} more ${o.unit}${cutByBytes ? ' (cut at the byte cap)' : ''}`
      : undefined;
  return { ref, verb, ...rest, ...(note ? { note } : {}) };
}

/** The reader a view needs for this ref's kind. */
async function readerFor(r: ResultRef, file: string): Promise<Reader> {
  switch (r.kind) {
    case 'jsonl':
      return 'read_ndjson';
    case 'json':
      return 'read_json_auto';
    case 'csv':
      return 'read_csv_auto';
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

function clamp(n: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, Math.floor(n)));
}

function intArg(v: number, name: string, min: number): number {
  if (!Number.isSafeInteger(v) || v < min) throw new BrigError('invalid_input', `${name} must be an integer ≥ ${min}`);
  return v;
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
