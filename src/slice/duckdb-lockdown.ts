/**
 * The DuckDB lockdown, shared by the helper process (duckdb-helper.ts, its only user in
 * production) and the tests that prove the second wall holds without the guard.
 * See duckdb-helper.ts for what is guaranteed and in which order.
 */
import fs from 'node:fs';
import { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import type { HelperRequest, ViewSpec } from './helper-protocol.js';
import { globLiteral, guardSerializedSelect, parseBigJson, sqlString, stringifyBigJson } from './sql-guard.js';

const NO_EXTENSIONS = { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false', allow_community_extensions: 'false' };

export async function parserConnection(): Promise<DuckDBConnection> {
  const inst = await DuckDBInstance.create(':memory:', {
    ...NO_EXTENSIONS,
    enable_external_access: 'false',
    threads: '1',
    memory_limit: '64MB',
    lock_configuration: 'true',
  });
  return inst.connect();
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

export async function lockedConnection(
  req: Pick<HelperRequest, 'views' | 'memoryLimit' | 'threads' | 'tempDir' | 'maxTempSize'>,
  schemas?: SchemaCache,
): Promise<{ inst: DuckDBInstance; conn: DuckDBConnection }> {
  const inst = await DuckDBInstance.create(':memory:', {
    ...NO_EXTENSIONS,
    memory_limit: req.memoryLimit,
    threads: String(req.threads),
  });
  const conn = await inst.connect();
  const files = [...new Set(req.views.flatMap((v) => v.files))];
  // Order matters: allow the files before turning external access off, create the views while
  // the configuration can still be read, lock last.
  // Each file, and its name as the readers are given it (globLiteral): DuckDB checks the
  // pattern before it expands it, and the expansion can only be the file itself.
  const allowed = [...new Set(files.flatMap((f) => [f, globLiteral(f)]))];
  await conn.run(`SET allowed_paths=[${allowed.map(sqlString).join(', ')}]`);
  await conn.run(`SET temp_directory=${sqlString(req.tempDir)}`);
  await conn.run(`SET max_temp_directory_size=${sqlString(req.maxTempSize)}`);
  await conn.run(`SET enable_external_access=false`);
  for (const v of req.views) {
    const key = schemas ? schemaKey(v) : undefined;
    const known = key ? schemas!.get(key) : undefined;
    await conn.run(viewSql(v, known));
    if (key && !known) {
      const d = await conn.runAndReadAll(`DESCRIBE "${v.name}"`);
      schemas!.set(key, d.getRows().map((r) => [String(r[0]), String(r[1])]));
      if (schemas!.size > 256) schemas!.delete(schemas!.keys().next().value!);
    }
  }
  await conn.run(`SET lock_configuration=true`);
  return { inst, conn };
}

