import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { lockedQuery } from '../../../src/slice/index.js';
import { isBrigError } from '../../../src/util/errors.js';

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
