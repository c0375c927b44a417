/**
 * The DuckDB helper: a separate process (the only importer of @duckdb/node-api) that runs one
 * guarded SELECT at a time over one or a few files, in a fresh locked-down DuckDB instance.
 *
 * Guarantees, per request, in this order and all before the user's query runs:
 *   1. the query is parsed by DuckDB (json_serialize_sql) in a separate instance that has no
 *      file access and a locked configuration, and checked by the statement guard;
 *   2. a FRESH in-memory instance is made with extension autoinstall/autoload off,
 *      memory_limit and threads set; then allowed_paths = the request's files, a private
 *      temp_directory with max_temp_directory_size, enable_external_access=false; the views are
 *      created over the allowed files; then lock_configuration=true;
 *   3. the guarded tree (not the caller's text) is rendered back with json_deserialize_sql and
 *      run; rows past maxRows/maxBytes are counted, not sent; over time → interrupt.
 * Threat: hostile SQL reading other files, writing, loading extensions, reaching the network,
 * reading our environment. The parent spawns us with an empty environment.
 * Trusts: the parent (it picks the files). Fails closed: any doubt → query_refused.
 * Not done: this process runs on the host as the supervisor's user, not in its own jail.
 */
import readline from 'node:readline';
import { DuckDBConnection, DuckDBInstance, JsonDuckDBValueConverter } from '@duckdb/node-api';
import { type HelperReply, type HelperRequest, HelperRequestSchema, type ViewSpec, scrubPaths } from './helper-protocol.js';
import { guardSerializedSelect, parseBigJson, sqlString, stringifyBigJson } from './sql-guard.js';

const NO_EXTENSIONS = { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false', allow_community_extensions: 'false' };

async function parserConnection(): Promise<DuckDBConnection> {
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
async function guarded(parser: DuckDBConnection, req: HelperRequest): Promise<{ sql: string } | { refused: string }> {
  const serialized = await scalar(parser, `SELECT json_serialize_sql(${sqlString(req.sql)})`);
  let tree: unknown;
  try {
    tree = parseBigJson(String(serialized));
  } catch {
    return { refused: 'the query could not be parsed' };
  }
  const verdict = guardSerializedSelect(tree, { views: req.views.map((v) => v.name), fileArgs: req.fileArgs });
  if (!verdict.ok) return { refused: verdict.reason };
  const sql = await scalar(parser, `SELECT json_deserialize_sql(${sqlString(stringifyBigJson(verdict.ast))})`);
  return { sql: String(sql) };
}

function viewSql(v: ViewSpec): string {
  const files = v.files.length === 1 ? sqlString(v.files[0]!) : `[${v.files.map(sqlString).join(', ')}]`;
  const from =
    v.reader === 'read_lines'
      ? `read_csv(${files}, columns={'line': 'VARCHAR'}, header=false, delim=chr(1), quote='', escape='', auto_detect=false, null_padding=true, strict_mode=false)`
      : `${v.reader}(${files})`;
  return `CREATE VIEW "${v.name}" AS SELECT * FROM ${from}`;
}

async function lockedConnection(req: HelperRequest): Promise<{ inst: DuckDBInstance; conn: DuckDBConnection }> {
  const inst = await DuckDBInstance.create(':memory:', {
    ...NO_EXTENSIONS,
    memory_limit: req.memoryLimit,
    threads: String(req.threads),
  });
  const conn = await inst.connect();
  const files = [...new Set(req.views.flatMap((v) => v.files))];
  // Order matters: allow the files before turning external access off, create the views while
  // the configuration can still be read, lock last.
  await conn.run(`SET allowed_paths=[${files.map(sqlString).join(', ')}]`);
  await conn.run(`SET temp_directory=${sqlString(req.tempDir)}`);
  await conn.run(`SET max_temp_directory_size=${sqlString(req.maxTempSize)}`);
  await conn.run(`SET enable_external_access=false`);
  for (const v of req.views) await conn.run(viewSql(v));
  await conn.run(`SET lock_configuration=true`);
  return { inst, conn };
}

async function runBounded(conn: DuckDBConnection, sql: string, req: HelperRequest, deadline: number) {
  const result = await conn.stream(sql);
  const columns = result.columnNames();
  const rows: unknown[][] = [];
  let bytes = 2;
  let more = 0;
  let moreExact = true;
  for (;;) {
    const chunk = await result.fetchChunk();
    if (!chunk || chunk.rowCount === 0) break;
    for (let i = 0; i < chunk.rowCount; i++) {
      if (rows.length >= req.maxRows || bytes > req.maxBytes) {
        more += chunk.rowCount - i;
        break;
      }
      const row = chunk.convertRowValues(i, JsonDuckDBValueConverter);
      bytes += JSON.stringify(row).length + 1;
      if (bytes > req.maxBytes) {
        more += 1;
        continue;
      }
      rows.push(row);
    }
    // Counting the rest is worth a little time, not the whole budget.
    if (more > 0 && Date.now() > deadline) {
      moreExact = false;
      break;
    }
  }
  return { columns, rows, more, moreExact };
}

async function handle(parser: DuckDBConnection, req: HelperRequest, scrubList: string[]): Promise<HelperReply> {
  const g = await guarded(parser, req);
  if ('refused' in g) return { id: req.id, ok: false, error: { code: 'query_refused', message: scrubPaths(g.refused, scrubList) } };
  const { inst, conn } = await lockedConnection(req);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    conn.interrupt();
  }, req.timeoutMs);
  try {
    const out = await runBounded(conn, g.sql, req, Date.now() + req.timeoutMs / 2);
    return { id: req.id, ok: true, ...out };
  } catch (e) {
    if (timedOut) return { id: req.id, ok: false, error: { code: 'timeout', message: `the query ran past ${req.timeoutMs} ms and was interrupted` } };
    const msg = e instanceof Error ? e.message : String(e);
    return { id: req.id, ok: false, error: { code: 'query_failed', message: scrubPaths(msg.split('\n')[0] ?? msg, scrubList) } };
  } finally {
    clearTimeout(timer);
    conn.closeSync();
    inst.closeSync();
  }
}

async function main(): Promise<void> {
  const parser = await parserConnection();
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  const send = (r: HelperReply) => process.stdout.write(`${JSON.stringify(r)}\n`);
  send({ id: 0, ok: true, columns: [], rows: [], more: 0, moreExact: true }); // ready
  // One request at a time: the pool never sends a second before the first is answered.
  for await (const line of rl) {
    let id = -1;
    try {
      const req = HelperRequestSchema.parse(JSON.parse(line));
      id = req.id;
      const scrubList = [...req.views.flatMap((v) => v.files), ...Object.values(req.fileArgs), req.tempDir];
      send(await handle(parser, req, scrubList));
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      send({ id, ok: false, error: { code: 'internal', message: scrubPaths(msg.split('\n')[0] ?? msg) } });
    }
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`duckdb-helper: ${scrubPaths(e instanceof Error ? e.message : String(e))}\n`);
  process.exit(1);
});
