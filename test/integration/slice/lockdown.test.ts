/**
 * [INV-5] The second wall: with the statement guard bypassed, the locked DuckDB instance itself
 * refuses to read other files, change its configuration or load extensions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { lockedConnection, parserConnection, queryLockdown, readBack, verifyLockdown } from '../../../src/slice/duckdb-lockdown.js';
import { lockdownDrift } from '../../../src/slice/duckdb-settings.js';
import { lockedQuery } from '../../../src/slice/index.js';
import { isBrigError } from '../../../src/util/errors.js';

const CANARY = 'CANARY_LOCK_51d0';

// req: slice:helper-locked slice:one-ref
test('[INV-5] lockdown without the guard: SET after the lock, other files, extensions all fail', async (t) => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-h3-lock-'));
  const tempDir = path.join(dir, 'spill');
  await fs.mkdir(tempDir);
  t.after(() => fs.rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'ref.jsonl');
  const canary = path.join(dir, 'canary.csv');
  await fs.writeFile(file, '{"a":1}\n{"a":2}\n');
  await fs.writeFile(canary, `x\n${CANARY}\n`);
  const { inst, conn } = await lockedConnection({
    views: [{ name: 'ref', reader: 'read_ndjson', files: [file] }],
    memoryLimit: '256MB',
    threads: 1,
    tempDir,
    maxTempSize: '64MB',
  });
  t.after(() => {
    conn.closeSync();
    inst.closeSync();
  });
  const sum = await conn.runAndReadAll('SELECT sum(a) FROM ref');
  assert.deepEqual(sum.getRowsJson(), [['3']]);
  const hostile = [
    'SET enable_external_access=true',
    `SET allowed_paths=['${canary}']`,
    'SET lock_configuration=false',
    'SET autoload_known_extensions=true',
    `SET temp_directory='/'`,
    `SELECT * FROM read_text('${canary}')`,
    `SELECT * FROM read_csv('${canary}')`,
    `SELECT * FROM '${canary}'`,
    `COPY (SELECT 1) TO '${path.join(dir, 'out.csv')}'`,
    `ATTACH '${path.join(dir, 'x.db')}'`,
    'INSTALL httpfs',
    'LOAD httpfs',
    `SELECT * FROM glob('${dir}/*')`,
    "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
  ];
  for (const q of hostile) {
    let shown = '';
    await assert.rejects(
      conn.runAndReadAll(q).then((r) => {
        shown = JSON.stringify(r.getRowsJson());
      }),
      (e: unknown) => {
        shown = String((e as Error).message);
        return true;
      },
      `ran inside the lockdown: ${q}`,
    );
    assert.ok(!shown.includes(CANARY), `canary leaked: ${q}`);
  }
  await assert.rejects(fs.access(path.join(dir, 'out.csv')));
  const still = await conn.runAndReadAll("SELECT current_setting('enable_external_access'), current_setting('lock_configuration')");
  assert.deepEqual(still.getRowsJson(), [[false, true]]);
});

test('[INV-5] the lockdown is read back from a real instance: it holds as the table says; a table with a value it does not hold is refused', async (t) => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-lock-rb-'));
  const tempDir = path.join(dir, 'spill');
  await fs.mkdir(tempDir);
  t.after(() => fs.rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'a[1].jsonl');
  await fs.writeFile(file, '{"a":1}\n');
  const req = { views: [{ name: 'ref', reader: 'read_ndjson' as const, files: [file] }], memoryLimit: '256MB', threads: 1, tempDir, maxTempSize: '64MB' };
  // lockedConnection verifies before it returns: the real instance passes its own read-back.
  const { inst, conn } = await lockedConnection(req);
  t.after(() => {
    conn.closeSync();
    inst.closeSync();
  });
  const settings = queryLockdown(req);
  const rows = await readBack(conn, settings);
  assert.deepEqual(lockdownDrift(settings, rows), [], JSON.stringify(rows));
  // A set to DuckDB (its own order): the file, and its name as the readers are given it.
  assert.deepEqual((rows.find((r) => r.name === 'allowed_paths')?.value as string[]).sort(), [file, file.replace('[', '[[]')].sort());
  // Values this instance does not hold: each is caught from what DuckDB reports.
  const unreachable = settings.map((s) =>
    s.name === 'threads' ? { ...s, value: '7' } : s.name === 'memory_limit' ? { ...s, value: '999GB' } : s.name === 'allowed_paths' ? { ...s, value: [...s.value, '/etc/passwd'] } : s,
  );
  assert.deepEqual(lockdownDrift(unreachable, rows).map((d) => d.name).sort(), ['allowed_paths', 'memory_limit', 'threads']);
  await assert.rejects(verifyLockdown(conn, unreachable), (e: unknown) => isBrigError(e, 'internal') && /lockdown did not hold/.test(e.message) && !e.message.includes('/etc/passwd'));
  await verifyLockdown(conn, settings);
  // The parser's instance passes its own at start; the helper reads both back on every query.
  const parser = await parserConnection();
  parser.closeSync();
  const r = await lockedQuery({ files: [file], viewName: 'ref', reader: 'read_ndjson', sql: 'SELECT sum(a) AS s FROM ref' });
  assert.deepEqual(r.rows, [[1]]);
});
