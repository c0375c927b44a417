import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BrigError } from '../util/errors.js';
import { DuckdbHelperPool } from './duckdb-pool.js';
import { type HelperReply, type Reader, scrubPaths } from './helper-protocol.js';

/** Limits every locked query runs under unless the caller narrows them. */
export const QUERY_DEFAULTS = Object.freeze({
  maxRows: 1000,
  maxBytes: 1024 * 1024,
  timeoutMs: 15_000,
  memoryLimit: '1GB',
  threads: 2,
  maxTempSize: '2GB',
});

export interface LockedQueryOptions {
  /** The only files the query can read (they become allowed_paths). */
  files: string[];
  /** The view the SQL reads, made over all `files` with `reader`. */
  viewName: string;
  reader: Reader;
  sql: string;
  maxRows?: number;
  maxBytes?: number;
  timeoutMs?: number;
  memoryLimit?: string;
  threads?: number;
  /** Reader table functions may be called on these names; each maps to one of `files`. */
  fileArgs?: Record<string, string>;
  /** A warm pool to use; without one a helper is spawned for this query and stopped after. */
  pool?: DuckdbHelperPool;
}

export interface LockedQueryResult {
  columns: string[];
  rows: unknown[][];
  truncated: boolean;
  /** Rows produced past the returned ones; a lower bound when `moreExact` is false. */
  more: number;
  moreExact: boolean;
}

/**
 * Runs one untrusted SELECT over `files` as the view `viewName`, in the DuckDB helper under
 * the full lockdown (statement guard, fresh instance, allowed_paths = files, no external
 * access, no extensions, memory/threads/temp caps, locked configuration, timeout).
 * Throws BrigError: query_refused | query_failed | timeout | internal. Messages carry no host paths.
 */
/** The longest SQL a query may be (the helper's own request cap). */
export const MAX_SQL_CHARS = 100_000;

export async function lockedQuery(opts: LockedQueryOptions): Promise<LockedQueryResult> {
  if (opts.files.length === 0) throw new BrigError('invalid_input', 'lockedQuery needs at least one file');
  if (opts.sql.length > MAX_SQL_CHARS) throw new BrigError('query_refused', `the query is ${opts.sql.length} characters; at most ${MAX_SQL_CHARS}`);
  const files = opts.files.map((f) => path.resolve(f));
  const fileArgs = Object.fromEntries(Object.entries(opts.fileArgs ?? {}).map(([k, v]) => [k, path.resolve(v)]));
  // A reader may be pointed only at a file the view could read anyway.
  if (Object.values(fileArgs).some((v) => !files.includes(v))) throw new BrigError('invalid_input', 'fileArgs may only name files listed in files');
  const tempDir = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-duck-'));
  const pool = opts.pool ?? new DuckdbHelperPool({ size: 1 });
  let reply: HelperReply;
  try {
    reply = await pool.run({
      sql: opts.sql,
      views: [{ name: opts.viewName, reader: opts.reader, files }],
      fileArgs,
      maxRows: opts.maxRows ?? QUERY_DEFAULTS.maxRows,
      maxBytes: opts.maxBytes ?? QUERY_DEFAULTS.maxBytes,
      timeoutMs: opts.timeoutMs ?? QUERY_DEFAULTS.timeoutMs,
      memoryLimit: opts.memoryLimit ?? QUERY_DEFAULTS.memoryLimit,
      threads: opts.threads ?? QUERY_DEFAULTS.threads,
      tempDir,
      maxTempSize: QUERY_DEFAULTS.maxTempSize,
    });
  } finally {
    if (!opts.pool) await pool.close();
    await fs.rm(tempDir, { recursive: true, force: true });
  }
  if (reply.ok) {
    return { columns: reply.columns, rows: reply.rows, truncated: reply.more > 0, more: reply.more, moreExact: reply.moreExact };
  }
  const known = [...files, tempDir, ...Object.values(opts.fileArgs ?? {})];
  const message = scrubPaths(reply.error.message, known);
  switch (reply.error.code) {
    case 'query_refused':
      return Promise.reject(new BrigError('query_refused', `query refused: ${message}`, { data: { reason: message } }));
    case 'query_failed':
      return Promise.reject(new BrigError('query_failed', `query failed: ${message}`));
    case 'timeout':
      return Promise.reject(new BrigError('timeout', message));
    default:
      return Promise.reject(new BrigError('internal', `DuckDB helper: ${message}`));
  }
}
