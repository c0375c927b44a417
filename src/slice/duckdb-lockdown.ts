/**
 * The DuckDB lockdown, shared by the helper process (duckdb-helper.ts, its only user in
 * production) and the tests that prove the second wall holds without the guard.
 * See duckdb-helper.ts for what is guaranteed and in which order; the settings, their values
 * and why are the tables of duckdb-settings.ts, issued from there and read back after the lock.
 */
import fs from 'node:fs';
import { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { BrigError } from '../util/errors.js';
import { PARSER_LOCKDOWN, QUERY_LOCKDOWN, createConfig, lockdownDrift, readBackSql, resolveLockdown, setStatement, type LockSetting, type ReadBack } from './duckdb-settings.js';
import type { HelperRequest, ViewSpec } from './helper-protocol.js';
import { globLiteral, guardSerializedSelect, parseBigJson, sqlString, stringifyBigJson } from './sql-guard.js';

/** The parser's instance, its settings read back: a drift refuses the helper's start. */
export async function parserConnection(): Promise<DuckDBConnection> {
  const settings = resolveLockdown(PARSER_LOCKDOWN);
  const inst = await DuckDBInstance.create(':memory:', createConfig(settings));
  const conn = await inst.connect();
  await verifyLockdown(conn, settings);
  return conn;
}

/** What DuckDB reports for each setting now (current_setting, JSON-decoded). */
export async function readBack(conn: DuckDBConnection, settings: readonly LockSetting[]): Promise<ReadBack[]> {
  const row = (await conn.runAndReadAll(readBackSql(settings))).getRows()[0] ?? [];
  return settings.map((s, i) => ({ name: s.name, value: typeof row[i] === 'string' ? JSON.parse(row[i]) : undefined }));
}

/** Throws (`internal`) unless DuckDB reports every setting as it was given. */
export async function verifyLockdown(conn: DuckDBConnection, settings: readonly LockSetting[]): Promise<void> {
  const drift = lockdownDrift(settings, await readBack(conn, settings));
  if (drift.length > 0) {
    const names = drift.map((d) => d.name);
    throw new BrigError('internal', `the DuckDB lockdown did not hold (${names.join(', ')} not as brig set it); nothing runs under it`, { data: { drift: names } });
  }
}

async function scalar(conn: DuckDBConnection, sql: string): Promise<unknown> {
  const r = await conn.runAndReadAll(sql);
  return r.getRows()[0]?.[0];
}

/** Parse + guard + render: returns the SQL text that will run, or a refusal. */
export async function guarded(parser: DuckDBConnection, req: Pick<HelperRequest, 'sql' | 'views' | 'fileArgs'>): Promise<{ sql: string } | { refused: string }> {
  if (req.sql.includes('\0')) return { refused: 'the query may not contain NUL' };
  const serialized = await scalar(parser, `SELECT json_serialize_sql(${sqlString(req.sql)})`);
  let tree: unknown;
  try {
    tree = parseBigJson(String(serialized));
  } catch {
    return { refused: 'the query could not be parsed' };
  }
  const verdict = guardSerializedSelect(tree, { views: req.views.map((v) => v.name), fileArgs: req.fileArgs });
  if (!verdict.ok) return { refused: verdict.reason };
  // What runs is the checked tree, rendered back; a shape DuckDB cannot render is refused.
  const sql = await scalar(parser, `SELECT json_deserialize_sql(${sqlString(stringifyBigJson(verdict.ast))})`).catch(() => undefined);
  if (typeof sql !== 'string') return { refused: 'this query uses syntax the guard cannot render back for checking' };
  return { sql };
}

/** Column names and types of a view, as DuckDB's sniffer found them. */
export type ViewSchema = [name: string, type: string][];

/**
 * Sniffed JSON-lines schemas by file identity (device, inode, size, mtime — not the path: an
 * isolated helper sees each request's files at a fresh bind-mount path), so a ref queried
 * again does not pay for type detection twice per query (view + query). Plain data in the
 * helper process, never DuckDB state: every query still gets a fresh instance.
 */
export type SchemaCache = Map<string, ViewSchema>;

export function viewSql(v: ViewSpec, schema?: ViewSchema): string {
  const lit = (f: string) => sqlString(globLiteral(f));
  const files = v.files.length === 1 ? lit(v.files[0]!) : `[${v.files.map(lit).join(', ')}]`;
  const from =
    v.reader === 'read_lines'
      ? `read_csv(${files}, columns={'line': 'VARCHAR'}, header=false, delim=chr(1), quote='', escape='', auto_detect=false, null_padding=true, strict_mode=false)`
      : v.reader === 'read_csv_header' || v.reader === 'read_csv_headerless'
        ? `read_csv(${files}, header=${v.reader === 'read_csv_header'})`
      : v.reader === 'read_ndjson' && schema
        ? `read_ndjson(${files}, columns={${schema.map(([n, t]) => `${sqlString(n)}: ${sqlString(t)}`).join(', ')}})`
        : `${v.reader}(${files})`;
  return `CREATE VIEW "${v.name}" AS SELECT * FROM ${from}`;
}

function schemaKey(v: ViewSpec): string | undefined {
  if (v.reader !== 'read_ndjson') return undefined;
  try {
    return JSON.stringify(v.files.map((f) => {
      const st = fs.statSync(f);
      return [st.dev, st.ino, st.size, st.mtimeMs, st.ctimeMs];
    }));
  } catch {
    return undefined;
  }
}

type LockedRequest = Pick<HelperRequest, 'views' | 'memoryLimit' | 'threads' | 'tempDir' | 'maxTempSize'>;

/** The query lockdown's settings for one request (QUERY_LOCKDOWN with the request's values). */
export function queryLockdown(req: LockedRequest): LockSetting[] {
  const files = [...new Set(req.views.flatMap((v) => v.files))];
  // Each file, and its name as the readers are given it (globLiteral): DuckDB checks the
  // pattern before it expands it, and the expansion can only be the file itself.
  const allowedPaths = [...new Set(files.flatMap((f) => [f, globLiteral(f)]))];
  return resolveLockdown(QUERY_LOCKDOWN, { allowedPaths, memoryLimit: req.memoryLimit, threads: req.threads, tempDir: req.tempDir, maxTempSize: req.maxTempSize });
}

/**
 * A fresh instance under the query lockdown, its views made, its settings read back. Order
 * matters (the table's): create settings, then the SETs (the files allowed before external
 * access goes off), the views while the configuration can still be changed, the lock last.
 */
export async function lockedConnection(req: LockedRequest, schemas?: SchemaCache): Promise<{ inst: DuckDBInstance; conn: DuckDBConnection }> {
  const settings = queryLockdown(req);
  const inst = await DuckDBInstance.create(':memory:', createConfig(settings));
  let conn: DuckDBConnection | undefined;
  try {
    conn = await inst.connect();
    for (const s of settings) if (s.at === 'set') await conn.run(setStatement(s));
    for (const v of req.views) await createView(conn, v, schemas);
    for (const s of settings) if (s.at === 'lock') await conn.run(setStatement(s));
    await verifyLockdown(conn, settings);
    return { inst, conn };
  } catch (e) {
    conn?.closeSync();
    inst.closeSync();
    throw e;
  }
}

async function createView(conn: DuckDBConnection, v: ViewSpec, schemas: SchemaCache | undefined): Promise<void> {
  const key = schemas ? schemaKey(v) : undefined;
  const known = key ? schemas!.get(key) : undefined;
  await conn.run(viewSql(v, known));
  if (key && !known) {
    const d = await conn.runAndReadAll(`DESCRIBE "${v.name}"`);
    schemas!.set(key, d.getRows().map((r) => [String(r[0]), String(r[1])]));
    if (schemas!.size > 256) schemas!.delete(schemas!.keys().next().value!);
  }
}

