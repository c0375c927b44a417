/**
 * sql over every kind's reader, jsonpath over json and jsonl, and the helper's time limit:
 * an over-time query is interrupted, the helper recycled, and the pool keeps serving.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { DuckDBInstance } from '@duckdb/node-api';
import { FsResultStore } from '../../../src/results/index.js';
import { DuckdbHelperPool, Slicer } from '../../../src/slice/index.js';

async function setup(t: import('node:test').TestContext) {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-h3-kinds-'));
  const pool = new DuckdbHelperPool({ size: 1 });
  t.after(async () => {
    await pool.close();
    await fs.rm(home, { recursive: true, force: true });
  });
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  return { home, pool, store };
}

test('sql reads csv, json, text and parquet refs with the right reader; jsonpath over json', async (t) => {
  const { pool, store } = await setup(t);
  const out = store.outDir('root-k', 'run-k');
  await fs.mkdir(out, { recursive: true });
  await fs.writeFile(path.join(out, 'people.csv'), 'name,age\nada,36\nalan,41\ngrace,85\n');
  await fs.writeFile(path.join(out, 'doc.json'), JSON.stringify({ items: [{ id: 1, tags: ['a'] }, { id: 2, tags: ['b', 'c'] }], meta: { n: 2 } }));
  await fs.writeFile(path.join(out, 'notes.txt'), 'alpha line\nbeta line, with comma\n"quoted" gamma\n');
  const pq = path.join(out, 'nums.parquet');
  const inst = await DuckDBInstance.create(':memory:');
  const c = await inst.connect();
  await c.run(`COPY (SELECT range AS n, range % 3 AS g FROM range(100)) TO '${pq}' (FORMAT parquet)`);
  c.closeSync();
  inst.closeSync();
  const m = await store.indexDir('run-k', 'root-k', out);
  const by = Object.fromEntries(m.refs.map((r) => [r.path.split('/').pop(), r]));
  assert.equal(by['nums.parquet']!.kind, 'binary');
  const s = new Slicer(store, { pool });

  const csv = await s.sql(by['people.csv']!.ref, 'SELECT name FROM ref WHERE age > 40 ORDER BY name');
  assert.ok(csv.ok, JSON.stringify(csv));
  assert.deepEqual(csv.value.rows, [['alan'], ['grace']]);

  const json = await s.sql(by['doc.json']!.ref, 'SELECT len(items) AS n, meta.n AS m FROM ref');
  assert.ok(json.ok, JSON.stringify(json));
  assert.deepEqual(json.value.rows, [[2, 2]]);

  const text = await s.sql(by['notes.txt']!.ref, "SELECT line FROM ref WHERE line LIKE '%comma%' OR line LIKE '%gamma%'");
  assert.ok(text.ok, JSON.stringify(text));
  assert.deepEqual(text.value.rows, [['beta line, with comma'], ['"quoted" gamma']]);

  const parquet = await s.sql(by['nums.parquet']!.ref, 'SELECT g, count(*) FROM ref GROUP BY 1 ORDER BY 1');
  assert.ok(parquet.ok, JSON.stringify(parquet));
  assert.deepEqual(parquet.value.rows, [[0, 34], [1, 33], [2, 33]]);

  const jp = await s.jsonpath(by['doc.json']!.ref, '$.items[*].id');
  assert.ok(jp.ok, JSON.stringify(jp));
  assert.deepEqual(jp.value.rows, [[[1, 2]]]);
  const jp2 = await s.jsonpath(by['doc.json']!.ref, "$['items'][1].tags[1]");
  assert.ok(jp2.ok);
  assert.deepEqual(jp2.value.rows, [['c']]);
  const bad = await s.jsonpath(by['doc.json']!.ref, '$..id');
  assert.ok(!bad.ok);
  assert.equal(bad.error.code, 'query_refused');
  const notJson = await s.jsonpath(by['people.csv']!.ref, '$.a');
  assert.ok(!notJson.ok);
  assert.equal(notJson.error.code, 'query_refused');
});

test('a csv ref\'s rows and columns are what sql sees: with a header, headerless, text only, one line', async (t) => {
  const { pool, store } = await setup(t);
  const out = store.outDir('root-c', 'run-c');
  await fs.mkdir(out, { recursive: true });
  const files: Record<string, string> = {
    'header.csv': 'id,name,score\n1,ada,3.5\n2,alan,4\n',
    'headerless.csv': '1,ada,3.5\n2,alan,4\n3,grace,1.25\n',
    'text.csv': 'alice,bob\ncarol,dave\n',
    'one.csv': '7,8,9\n',
    'crlf.csv': 'k,v\r\na,1\r\nb,2\r\n',
  };
  for (const [n, body] of Object.entries(files)) await fs.writeFile(path.join(out, n), body);
  const m = await store.indexDir('run-c', 'root-c', out);
  const s = new Slicer(store, { pool });
  const seen: Record<string, { rows: number | undefined; columns: string[] | undefined; sqlRows: unknown; sqlColumns: string[] }> = {};
  for (const r of m.refs) {
    assert.equal(r.kind, 'csv', r.path);
    const q = await s.sql(r.ref, 'SELECT count(*) FROM ref');
    assert.ok(q.ok, JSON.stringify(q));
    const cols = await s.sql(r.ref, 'SELECT * FROM ref LIMIT 1');
    assert.ok(cols.ok, JSON.stringify(cols));
    seen[r.path.split('/').pop()!] = { rows: r.rows, columns: r.columns, sqlRows: q.value.rows?.[0]?.[0], sqlColumns: cols.value.columns as string[] };
  }
  for (const [n, v] of Object.entries(seen)) {
    assert.equal(v.rows, v.sqlRows, `${n}: the ref's rows are the rows sql counts`);
    assert.deepEqual(v.columns, v.sqlColumns, `${n}: the ref's columns are the view's`);
  }
  assert.deepEqual(seen['headerless.csv']!.columns, ['column0', 'column1', 'column2']);
  assert.equal(seen['headerless.csv']!.rows, 3);
  assert.deepEqual(seen['header.csv']!.columns, ['id', 'name', 'score']);
  assert.deepEqual(seen['text.csv']!.columns, ['alice', 'bob']);
  assert.equal(seen['one.csv']!.rows, 1);
});

// req: slice:helper-bounded
test('[INV-5] an over-time query is interrupted, its helper recycled, and the next query is served', async (t) => {
  const { pool, store } = await setup(t);
  const ref = await store.writeStream('run-t', 'root-t', 'x.jsonl', Readable.from([Buffer.from('{"a":1}\n')]));
  const s = new Slicer(store, { pool, limits: { timeoutMs: 1000 } });
  await pool.warm();
  const before = pool.pids();
  const slow = await s.sql(ref.ref, 'SELECT count(*) FROM range(1000000000000) a');
  assert.ok(!slow.ok);
  assert.equal(slow.error.code, 'timeout');
  const next = await s.sql(ref.ref, 'SELECT a FROM ref');
  assert.ok(next.ok, JSON.stringify(next));
  assert.deepEqual(next.value.rows, [[1]]);
  const after = pool.pids();
  assert.equal(after.length, 1);
  assert.notDeepEqual(after, before, 'the helper that timed out was replaced');
});

test('a JSON-lines ref queried again (cached sniffed schema) answers exactly as the first time', async (t) => {
  const { pool, store } = await setup(t);
  const rows = Array.from({ length: 300 }, (_, i) =>
    JSON.stringify({ id: i, 'odd name': `n${i}`, nested: { a: i * 2, tags: [`t${i % 3}`] }, when: `2026-01-0${(i % 9) + 1}`, maybe: i % 2 ? null : 1.5 }),
  ).join('\n');
  const ref = await store.writeStream('run-s', 'root-s', 'n.jsonl', Readable.from([Buffer.from(`${rows}\n`)]));
  const s = new Slicer(store, { pool });
  const q = 'SELECT count(*), sum(nested.a), max("odd name"), count(maybe), any_value(typeof(nested)), any_value(typeof("when")) FROM ref WHERE nested.tags[1] = \'t1\'';
  const first = await s.sql(ref.ref, q);
  const second = await s.sql(ref.ref, q);
  const third = await s.sql(ref.ref, 'DESCRIBE SELECT * FROM ref');
  const fourth = await s.sql(ref.ref, 'DESCRIBE SELECT * FROM ref');
  assert.ok(first.ok && second.ok && third.ok && fourth.ok, JSON.stringify([first, second]));
  assert.deepEqual(second.value.rows, first.value.rows);
  assert.deepEqual(fourth.value.rows, third.value.rows);
  assert.equal(first.value.rows?.[0]?.[0], 100);
});
