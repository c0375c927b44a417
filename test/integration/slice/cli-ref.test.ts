import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { main } from '../../../src/cli/cli.js';
import { FsResultStore } from '../../../src/results/index.js';

async function brig(home: string, argv: string[]) {
  const out = new PassThrough();
  const errS = new PassThrough();
  let o = '';
  let e = '';
  out.on('data', (b) => (o += b));
  errS.on('data', (b) => (e += b));
  const code = await main(argv, { stdout: out, stderr: errS, env: { BRIG_HOME: home }, isTTY: false });
  return { code, out: o, err: e };
}

test('brig ref list|read|grep|jq|sql|jsonpath over a real store; refusals map to exit codes', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-h3-cli-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const body = Array.from({ length: 100 }, (_, i) => JSON.stringify({ i, k: i % 2 ? 'a' : 'b', tags: [i] })).join('\n') + '\n';
  const ref = await store.writeStream('run-c', 'root-c', 'rows.jsonl', Readable.from([Buffer.from(body)]));

  const list = await brig(home, ['ref', 'list', 'run-c', '--json']);
  assert.equal(list.code, 0);
  assert.equal(JSON.parse(list.out).refs[0].ref, ref.ref);

  const read = await brig(home, ['ref', 'read', ref.ref, '--line', '50', '--lines', '1']);
  assert.equal(read.out, '{"i":49,"k":"a","tags":[49]}\n');
  assert.match(read.err, /50 more lines/);

  const grep = await brig(home, ['ref', 'grep', ref.ref, '"i":9[0-9]', '--max', '2', '--json']);
  const g = JSON.parse(grep.out);
  assert.equal(g.returned, 2);
  assert.equal(g.more, 8);

  const jq = await brig(home, ['ref', 'jq', ref.ref, 'select(.i == 3) | .k']);
  assert.equal(jq.out, '"a"\n');

  const sql = await brig(home, ['ref', 'sql', ref.ref, 'SELECT k, count(*) AS n FROM ref GROUP BY 1 ORDER BY 1', '--json']);
  assert.equal(sql.code, 0, sql.err);
  assert.deepEqual(JSON.parse(sql.out).rows, [['a', '50'], ['b', '50']]);

  const jp = await brig(home, ['ref', 'jsonpath', ref.ref, '$.tags[0]', '--max-rows', '3', '--json']);
  assert.deepEqual(JSON.parse(jp.out).rows, [[0], [1], [2]]);

  const refused = await brig(home, ['ref', 'sql', ref.ref, "SELECT * FROM read_text('/etc/passwd')", '--json']);
  assert.equal(refused.code, 3);
  assert.equal(JSON.parse(refused.out).error.code, 'query_refused');
  assert.ok(!refused.out.includes(home));

  const missing = await brig(home, ['ref', 'read', 'ref_aaaaaaaaaaaaaaaaaaaaaaaaaa', '--line', '1']);
  assert.equal(missing.code, 4);
  assert.match(missing.err, /ref_not_found/);
});
