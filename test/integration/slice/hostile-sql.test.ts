/**
 * [INV-5] Hostile SQL against the real DuckDB helper: every query is refused with a reason or
 * fails inside the lockdown, and a canary file outside the ref never appears in any output.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { FsResultStore } from '../../../src/results/index.js';
import { DuckdbHelperPool, Slicer } from '../../../src/slice/index.js';

const CANARY = 'CANARY_9f2c1e_DO_NOT_LEAK';

async function setup() {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-h3-sql-'));
  const canaryDir = path.join(home, 'outside');
  await fs.mkdir(canaryDir);
  const canary = path.join(canaryDir, 'canary.csv');
  await fs.writeFile(canary, `secret\n${CANARY}\n`);
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const rows = Array.from({ length: 50 }, (_, i) => JSON.stringify({ id: i, kind: i % 2 ? 'odd' : 'even', installed_at: `2026-01-${String((i % 28) + 1).padStart(2, '0')}` })).join('\n');
  const ref = await store.writeStream('run-a', 'root-a', 'out.jsonl', Readable.from([Buffer.from(`${rows}\n`)]));
  const other = await store.writeStream('run-b', 'root-a', 'out.jsonl', Readable.from([Buffer.from(`{"secret":"${CANARY}"}\n`)]));
  return { home, canary, canaryDir, store, ref, other };
}

// req: slice:select-only slice:one-ref
test('[INV-5] at least 30 hostile queries: refused or failed, canary never shown, ref unchanged', async (t) => {
  const s = await setup();
  const pool = new DuckdbHelperPool({ size: 2 });
  t.after(async () => {
    await pool.close();
    await fs.rm(s.home, { recursive: true, force: true });
  });
  const slicer = new Slicer(s.store, { pool, limits: { timeoutMs: 10_000 } });
  const refFile = s.store.resolvePath(s.ref);
  const before = await fs.readFile(refFile, 'utf8');
  const fill = (q: string) =>
    q
      .replaceAll('{CANARY}', s.canary)
      .replaceAll('{CANARY_DIR}', s.canaryDir)
      .replaceAll('{CANARY_NAME}', `outside/${path.basename(s.canary)}`)
      .replaceAll('{REF_FILE}', refFile)
      .replaceAll('{REF_DIR}', path.dirname(refFile))
      .replaceAll('{OTHER_REF_FILE}', s.store.resolvePath(s.other))
      .replaceAll('{OTHER_RUN}', 'run-b');
  const list: string[] = JSON.parse(await fs.readFile(new URL('../../fixtures/slice/hostile-sql.json', import.meta.url), 'utf8'));
  assert.ok(list.length >= 30, 'the hostile list has at least 30 queries');
  const outcomes: string[] = [];
  for (const raw of list) {
    const q = fill(raw);
    const res = await slicer.sql(s.ref.ref, q);
    const shown = JSON.stringify(res.ok ? res.value : { ...res.error.toJSON() });
    assert.ok(!shown.includes(CANARY), `canary leaked by: ${raw}`);
    assert.ok(!shown.includes(s.home), `host path shown by: ${raw} → ${shown}`);
    assert.equal(res.ok, false, `hostile query ran: ${raw} → ${shown}`);
    if (!res.ok) {
      assert.ok(['query_refused', 'query_failed'].includes(res.error.code), `${raw} → ${res.error.code}`);
      assert.ok(res.error.message.length > 10, 'a refusal names its reason');
      outcomes.push(res.error.code);
      if (process.env.H3_DEBUG) console.log(res.error.code, raw.slice(0, 50), "→", res.error.message.slice(0, 120));
    }
  }
  assert.equal(await fs.readFile(refFile, 'utf8'), before, 'the ref file is unchanged');
  await assert.rejects(fs.access(path.join(s.canaryDir, 'out.csv')));
  // Most are stopped by the guard before DuckDB runs anything.
  assert.ok(outcomes.filter((c) => c === 'query_refused').length >= 30);
});

test('[INV-5] legitimate queries pass: aggregates, a self-join, a column named installed_at, the ref by id', async (t) => {
  const s = await setup();
  const pool = new DuckdbHelperPool({ size: 1 });
  t.after(async () => {
    await pool.close();
    await fs.rm(s.home, { recursive: true, force: true });
  });
  const slicer = new Slicer(s.store, { pool });
  const agg = await slicer.sql(s.ref.ref, 'SELECT kind, count(*) AS n, max(id) AS top FROM ref GROUP BY 1 ORDER BY 1');
  assert.ok(agg.ok);
  assert.deepEqual(agg.value.rows, [['even', 25, 48], ['odd', 25, 49]]);
  const join = await slicer.sql(s.ref.ref, 'SELECT count(*) FROM ref a JOIN ref b ON a.id + 1 = b.id');
  assert.ok(join.ok);
  assert.deepEqual(join.value.rows, [[49]]);
  const inst = await slicer.sql(s.ref.ref, "SELECT installed_at FROM ref WHERE installed_at >= '2026-01-28' ORDER BY id");
  assert.ok(inst.ok, JSON.stringify(inst));
  assert.equal(inst.value.rows?.length, 1);
  const byId = await slicer.sql(s.ref.ref, `SELECT count(*) FROM read_ndjson('${s.ref.ref}')`);
  assert.ok(byId.ok, JSON.stringify(byId));
  assert.deepEqual(byId.value.rows, [[50]]);
  const cte = await slicer.sql(s.ref.ref, 'WITH odd AS (SELECT * FROM ref WHERE kind = \'odd\') SELECT count(*) FROM odd');
  assert.ok(cte.ok);
  assert.deepEqual(cte.value.rows, [[25]]);
  for (const maxRows of [0, 2.5, Number.NaN]) {
    const bad = await slicer.sql(s.ref.ref, 'SELECT id FROM ref', { maxRows });
    assert.ok(!bad.ok && bad.error.code === 'invalid_input' && /maxRows must be an integer/.test(bad.error.message), `maxRows ${maxRows}: ${JSON.stringify(bad)}`);
    const badJp = await slicer.jsonpath(s.ref.ref, '$.id', { maxRows });
    assert.ok(!badJp.ok && badJp.error.code === 'invalid_input', `jsonpath maxRows ${maxRows}`);
  }
  const cut = await slicer.sql(s.ref.ref, 'SELECT id FROM ref ORDER BY id', { maxRows: 10 });
  assert.ok(cut.ok);
  assert.equal(cut.value.rows?.length, 10);
  assert.equal(cut.value.more, 40);
  assert.match(cut.value.note ?? '', /40 more rows/);
});
