/**
 * [INV-5] The second wall: with the statement guard bypassed, the locked DuckDB instance itself
 * refuses to read other files, change its configuration or load extensions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { lockedConnection } from '../../../src/slice/duckdb-lockdown.js';

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
