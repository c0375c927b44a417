import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckdbHelperPool, lockedQuery } from '../../../src/slice/index.js';
import { isBrigError } from '../../../src/util/errors.js';

// req: slice:select-only slice:one-ref
test('[INV-5] lockedQuery: a SELECT over the view runs; other files and statements are refused', async (t) => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-lq-'));
  t.after(() => fs.rm(dir, { recursive: true, force: true }));
  const a = path.join(dir, 'a.jsonl');
  const b = path.join(dir, 'b.jsonl');
  await fs.writeFile(a, '{"k":"x","n":1}\n{"k":"y","n":2}\n');
  await fs.writeFile(b, '{"k":"x","n":5}\n');
  await fs.writeFile(path.join(dir, 'canary.txt'), 'CANARY_LQ_7731\n');

  const r = await lockedQuery({ files: [a, b], viewName: 'events', reader: 'read_ndjson', sql: 'SELECT k, sum(n) AS s FROM events GROUP BY 1 ORDER BY 1' });
  assert.deepEqual(r.columns, ['k', 's']);
  assert.deepEqual(r.rows, [['x', 6], ['y', 2]]);
  assert.equal(r.truncated, false);

  const cut = await lockedQuery({ files: [a], viewName: 'events', reader: 'read_ndjson', sql: 'SELECT * FROM range(10)', maxRows: 3 });
  assert.equal(cut.rows.length, 3);
  assert.equal(cut.truncated, true);
  assert.equal(cut.more, 7);

  for (const sql of [
    `SELECT * FROM '${path.join(dir, 'canary.txt')}'`,
    `SELECT * FROM read_text('${path.join(dir, 'canary.txt')}')`,
    'COPY events TO \'/tmp/x.csv\'',
    'SELECT 1; SELECT 2',
  ]) {
    await assert.rejects(
      lockedQuery({ files: [a], viewName: 'events', reader: 'read_ndjson', sql }),
      (e: unknown) => isBrigError(e, 'query_refused') && !e.message.includes(dir) && !e.message.includes('CANARY'),
      sql,
    );
  }
});

test('[INV-9] a reply is bounded in UTF-8 bytes, column names included; an overlong query is refused before any helper sees it', async (t) => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-lq-bytes-'));
  const pool = new DuckdbHelperPool({ size: 1 });
  t.after(async () => {
    await pool.close();
    await fs.rm(dir, { recursive: true, force: true });
  });
  const euro = path.join(dir, 'euro.jsonl');
  await fs.writeFile(euro, `${Array.from({ length: 100 }, () => JSON.stringify({ s: '€'.repeat(1000) })).join('\n')}\n`);
  const r = await lockedQuery({ files: [euro], viewName: 'ref', reader: 'read_ndjson', sql: 'SELECT s FROM ref', maxBytes: 20_000, pool });
  const size = Buffer.byteLength(JSON.stringify(r.rows));
  assert.ok(size <= 20_000, `the rows are ${size} bytes for a 20,000-byte cap (3-byte characters counted as 3)`);
  assert.ok(r.rows.length >= 5 && r.truncated, `${r.rows.length} rows, then "more"`);

  // A header whose names alone pass the cap: refused with a reason, not shipped.
  const wide = path.join(dir, 'wide.csv');
  await fs.writeFile(wide, `${Array.from({ length: 40 }, (_, i) => `c${i}_${'n'.repeat(1000)}`).join(',')}\n${Array(40).fill('1').join(',')}\n`);
  await assert.rejects(
    lockedQuery({ files: [wide], viewName: 'ref', reader: 'read_csv_auto', sql: 'SELECT * FROM ref LIMIT 1', maxBytes: 20_000, pool }),
    (e: unknown) => isBrigError(e, 'query_failed') && /column names alone/.test(e.message),
  );

  const before = pool.started;
  await assert.rejects(
    lockedQuery({ files: [euro], viewName: 'ref', reader: 'read_ndjson', sql: `SELECT 1 --${'x'.repeat(100_001)}`, pool }),
    (e: unknown) => isBrigError(e, 'query_refused') && /at most 100000/.test(e.message),
  );
  assert.equal(pool.started, before, 'no helper was started or replaced for it');
  assert.deepEqual((await lockedQuery({ files: [euro], viewName: 'ref', reader: 'read_ndjson', sql: 'SELECT count(*) FROM ref', pool })).rows, [[100]]);
});

// req: slice:one-ref
test('[INV-5] a file whose name holds glob characters is read as itself, never as a pattern over its siblings', async (t) => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-lq-glob-'));
  t.after(() => fs.rm(dir, { recursive: true, force: true }));
  const own = path.join(dir, 'a[1]*?.csv');
  await fs.writeFile(own, 'v\nmine\n');
  await fs.writeFile(path.join(dir, 'a1x.csv'), 'v\nsibling\n');
  // Isolated (the file bind-mounted under a name without glob characters) and not (the host path, escaped).
  for (const isolate of ['auto', 'off'] as const) {
    const pool = new DuckdbHelperPool({ size: 1, isolate });
    try {
      const view = await lockedQuery({ files: [own], viewName: 'ref', reader: 'read_csv_auto', sql: 'SELECT v FROM ref', pool });
      assert.deepEqual(view.rows, [['mine']], isolate);
      const direct = await lockedQuery({ files: [own], viewName: 'ref', reader: 'read_csv_auto', sql: "SELECT v FROM read_csv_auto('ref')", fileArgs: { ref: own }, pool });
      assert.deepEqual(direct.rows, [['mine']], isolate);
    } finally {
      await pool.close();
    }
  }
});
