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
 *      created over the allowed files; then lock_configuration=true; then every setting is read
 *      back and compared with what was given (the tables of duckdb-settings.ts, the parser's
 *      too, at start): a difference refuses the query (`internal`), or the helper's start;
 *   3. the guarded tree (not the caller's text) is rendered back with json_deserialize_sql and
 *      run; rows past maxRows/maxBytes are counted, not sent; over time → interrupt.
 * Threat: hostile SQL reading other files, writing, loading extensions, reaching the network,
 * reading our environment. The parent spawns us with an empty environment.
 * Trusts: the parent (it picks the files). Fails closed: any doubt → query_refused.
 * Caps: the pool starts every helper under prlimit (address space, CPU time, no core).
 * Isolation: started with `--isolate DIR` (by the pool, through setpriv + unshare), it first
 * makes `/` read-only in its own mount, network, PID and IPC namespaces, spills only into a
 * tmpfs under DIR, and drops to uid 65534 with no capabilities (helper-isolation.ts); the
 * files of each request are then bind-mounted for it by the pool (helper-mounts.ts). Without
 * it, it runs on the host as the supervisor's user.
 */
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { type DuckDBConnection, DuckDBTypeId, JsonDuckDBValueConverter } from '@duckdb/node-api';
import { type SchemaCache, guarded, lockedConnection, parserConnection } from './duckdb-lockdown.js';
import { type HelperReady, type HelperReply, type HelperRequest, HelperRequestSchema, scrubPaths } from './helper-protocol.js';
import { capOwnAddressSpace, enterIsolation, isolationLayout, readSelf } from './helper-isolation.js';

const SPILL_BYTES = 2 * 1024 ** 3;

const WIDE_INTS: ReadonlySet<DuckDBTypeId> = new Set([DuckDBTypeId.BIGINT, DuckDBTypeId.UBIGINT, DuckDBTypeId.HUGEINT, DuckDBTypeId.UHUGEINT]);

/** The JSON converter writes 64/128-bit integers as strings; a count that fits a double is a number. */
function narrowInts(row: unknown[], wide: readonly boolean[]): unknown[] {
  for (let c = 0; c < row.length; c++) {
    const v = row[c];
    if (wide[c] && typeof v === 'string' && /^-?\d{1,16}$/.test(v) && Number.isSafeInteger(Number(v))) row[c] = Number(v);
  }
  return row;
}

async function runBounded(conn: DuckDBConnection, sql: string, req: HelperRequest, deadline: number) {
  const result = await conn.stream(sql);
  const columns = result.columnNames();
  const wide = result.columnTypes().map((t) => WIDE_INTS.has(t.typeId));
  const rows: unknown[][] = [];
  // The column names count toward the cap (a child chooses them), in UTF-8 bytes as the rows do.
  let bytes = 2 + Buffer.byteLength(JSON.stringify(columns));
  if (bytes > req.maxBytes) throw new Error(`the result's column names alone are ${bytes} bytes, over the reply's ${req.maxBytes}-byte cap: select fewer columns or name them (AS)`);
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
      const row = narrowInts(chunk.convertRowValues(i, JsonDuckDBValueConverter), wide);
      bytes += Buffer.byteLength(JSON.stringify(row)) + 1;
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

type Handled = { reply: HelperReply; release: () => void };

/** Answers one request; `release` (closing the instance) runs after the reply is sent. */
async function handle(parser: DuckDBConnection, req: HelperRequest, scrubList: string[], schemas: SchemaCache): Promise<Handled> {
  const g = await guarded(parser, req);
  const none = () => undefined;
  if ('refused' in g) return { reply: { id: req.id, ok: false, error: { code: 'query_refused', message: scrubPaths(g.refused, scrubList) } }, release: none };
  const { inst, conn } = await lockedConnection(req, schemas);
  const release = () => {
    conn.closeSync();
    inst.closeSync();
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    conn.interrupt();
  }, req.timeoutMs);
  try {
    const out = await runBounded(conn, g.sql, req, Date.now() + req.timeoutMs / 2);
    return { reply: { id: req.id, ok: true, ...out }, release };
  } catch (e) {
    if (timedOut) return { reply: { id: req.id, ok: false, error: { code: 'timeout', message: `the query ran past ${req.timeoutMs} ms and was interrupted` } }, release };
    const msg = e instanceof Error ? e.message : String(e);
    return { reply: { id: req.id, ok: false, error: { code: 'query_failed', message: scrubPaths(msg.split('\n')[0] ?? msg, scrubList) } }, release };
  } finally {
    clearTimeout(timer);
  }
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--isolate');
  const isolateDir = at !== -1 ? process.argv[at + 1] : undefined;
  // Before anything reads a request: namespaces set up, privileges dropped, both verified.
  const self = isolateDir ? enterIsolation(isolateDir, SPILL_BYTES) : readSelf();
  const spillRoot = isolateDir ? isolationLayout(isolateDir).spill : undefined;
  const parser = await parserConnection();
  // Loaded (node, DuckDB, a first instance): from here on the address space may grow by the
  // pool's budget only. Before any request is read.
  const mb = process.argv.indexOf('--memory-bytes');
  if (mb === -1) throw new Error('the helper needs --memory-bytes');
  capOwnAddressSpace(Number(process.argv[mb + 1]));
  const schemas: SchemaCache = new Map();
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  const send = (r: HelperReply | HelperReady) => process.stdout.write(`${JSON.stringify(r)}\n`);
  let id = -1;
  // RLIMIT_CPU's soft limit: say so for the query in flight, then stop (the hard limit would
  // SIGKILL us 10 s later anyway; as PID 1 of our namespace an unhandled SIGXCPU is ignored).
  process.on('SIGXCPU', () => {
    send({ id, ok: false, error: { code: 'timeout', message: 'the query used up its helper\'s CPU time limit (RLIMIT_CPU); the helper was stopped' } });
    process.exit(1);
  });
  send({ ready: true, isolated: isolateDir !== undefined, self });
  // One request at a time: the pool never sends a second before the first is answered.
  for await (const line of rl) {
    id = -1;
    try {
      const raw: unknown = JSON.parse(line);
      // A request that fails its schema is still answered under its id (else the pool waits for
      // a reply that never comes until its hard timer kills this helper).
      if (raw && typeof raw === 'object' && Number.isSafeInteger((raw as { id?: unknown }).id)) id = (raw as { id: number }).id;
      const req = HelperRequestSchema.parse(raw);
      id = req.id;
      // Isolated, the only writable place is our tmpfs: each query spills into its own dir there.
      const tempDir = spillRoot ? path.join(spillRoot, `q-${req.id}`) : req.tempDir;
      if (spillRoot) fs.mkdirSync(tempDir, { mode: 0o700 });
      const scrubList = [...req.views.flatMap((v) => v.files), ...Object.values(req.fileArgs), req.tempDir, tempDir];
      let release = () => {};
      try {
        const h = await handle(parser, { ...req, tempDir }, scrubList, schemas);
        release = h.release;
        send(h.reply);
      } finally {
        release();
        if (spillRoot) fs.rmSync(tempDir, { recursive: true, force: true });
      }
    } catch (e) {
      const issue = (e as { issues?: { path: PropertyKey[]; message: string }[] }).issues?.[0];
      const msg = issue ? `the request is malformed at ${issue.path.map(String).join('.') || 'its top'}: ${issue.message}` : e instanceof Error ? e.message : String(e);
      send({ id, ok: false, error: { code: 'internal', message: scrubPaths(msg.split('\n')[0] ?? msg) } });
    }
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`duckdb-helper: ${scrubPaths(e instanceof Error ? e.message : String(e))}\n`);
  process.exit(1);
});
