import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { brigPaths } from '../../../src/config/index.js';
import { LeaseStore, loadPolicyFile, shippedPoliciesDir } from '../../../src/lease/index.js';
import { FsResultStore } from '../../../src/results/index.js';
import { recordOf } from '../../helpers/run-record.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { runCli } from '../../helpers/cli.js';

const brig = (home: string, argv: string[]) => runCli(argv, { home });

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
  assert.deepEqual(JSON.parse(sql.out).rows, [['a', 50], ['b', 50]]);

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

// req: envelope:bounded
test('[INV-3] brig result RUN prints the bounded envelope; brig explain RUN shows refs and savings', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-h3-cli-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const big = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ i, v: 'x'.repeat(20) })).join('\n') + '\n';
  const ref = await store.writeStream('r-abc123', 'r-root01', 'out-rows.jsonl', Readable.from([Buffer.from(big)]));
  const runDir = path.join(home, 'runs', 'r-abc123');
  await fs.mkdir(runDir, { recursive: true });
  const record = recordOf({
    id: 'r-abc123', rootRunId: 'r-root01', parentRunId: 'r-root01', depth: 1, label: 'scan',
    startedAt: '2026-01-01T00:00:00.000Z', endedAt: '2026-01-01T00:00:02.500Z', stepsExecuted: 3,
    result: { answer: 'x'.repeat(30_000) },
  });
  await fs.writeFile(path.join(runDir, 'run.json'), JSON.stringify(record));
  const r = await brig(home, ['result', 'r-abc123']);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^\[Subagent Result: scan\]\nStatus: Completed\nCondensation: Level 3 \(head\+tail\)\n/);
  assert.match(r.out, new RegExp(`\\n- ${ref.path} — ${ref.ref} jsonl, [\\d.]+ (B|KB|MB), [\\d,]+ rows`));
  assert.match(r.out, /Runtime: 2\.5s \| Steps: 3/);
  assert.ok(r.out.length < 17_000, 'the envelope is bounded');
  const j = JSON.parse((await brig(home, ['result', 'r-abc123', '--json'])).out);
  assert.equal(j.level, 3);
  assert.ok(j.savings.estSavedTokens > 0);
  const ex = await brig(home, ['explain', 'r-abc123']);
  assert.equal(ex.code, 0, ex.err);
  assert.match(ex.out, /Run r-abc123 \(scan\)/);
  assert.match(ex.out, new RegExp(ref.ref));
  assert.match(ex.out, /estSavedTokens: \d+/);
  const none = await brig(home, ['result', 'r-nope00']);
  assert.equal(none.code, 4);
  const badStrategy = await brig(home, ['result', 'r-abc123', '--strategy', 'sometimes']);
  assert.notEqual(badStrategy.code, 0);
  assert.match(badStrategy.err, /invalid_input/);
  assert.match(badStrategy.err, /--strategy must be auto, always or never, got "sometimes"/);
  // A run that has not ended has no envelope yet (the API says the same).
  await fs.mkdir(path.join(home, 'runs', 'r-live01'), { recursive: true });
  await fs.writeFile(path.join(home, 'runs', 'r-live01', 'run.json'), JSON.stringify({ ...record, id: 'r-live01', status: 'running', endReason: null, endedAt: null, result: null }));
  const live = await brig(home, ['result', 'r-live01']);
  assert.notEqual(live.code, 0);
  assert.match(live.err, /not_running/);
  assert.match(live.err, /brig wait RUN/);
  assert.equal(live.out, '', 'no half envelope');
});

test('brig explain RUN shows its lease decisions; a root shows its savings rolled up over the tree', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-a5-explain-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const pol = loadPolicyFile(path.join(shippedPoliciesDir(), 'default.yaml'));
  assert.ok(pol.ok);
  const leases = new LeaseStore({ dir: brigPaths(home).leases, policy: pol.value, ledger: new MemoryLedger() });
  const root = leases.issueRoot({ profile: 'coordinator', runId: 'r-root01', rootRunId: 'r-root01', timeoutMs: 600_000 });
  assert.ok(root.ok);
  const kid = leases.issueChild({ parentLeaseId: root.value.record.id, request: { caps: ['llm', 'spawn'] }, profile: 'worker', runId: 'r-kid001', rootRunId: 'r-root01', timeoutMs: 60_000 });
  assert.ok(kid.ok);
  assert.ok(kid.value.record.refused.length > 0, 'the worker profile refuses something, so there is a decision to show');

  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const rows = (n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ i, v: 'y'.repeat(30) })).join('\n') + '\n';
  const kidRef = await store.writeStream('r-kid001', 'r-root01', 'rows.jsonl', Readable.from([Buffer.from(rows(5000))]));
  const rootRef = await store.writeStream('r-root01', 'r-root01', 'rows.jsonl', Readable.from([Buffer.from(rows(3000))]));
  const record = (id: string, parent: string | null, depth: number, leaseId: string) =>
    recordOf({ id, rootRunId: 'r-root01', parentRunId: parent, path: parent ? [parent, id] : [id], depth, label: id, createdAt: `2026-01-01T00:00:0${depth}.000Z`, leaseId, result: { ok: true } });
  for (const r of [record('r-root01', null, 0, root.value.record.id), record('r-kid001', 'r-root01', 1, kid.value.record.id)]) {
    await fs.mkdir(path.join(home, 'runs', r.id), { recursive: true });
    await fs.writeFile(path.join(home, 'runs', r.id, 'run.json'), JSON.stringify(r));
  }

  const ex = await brig(home, ['explain', 'r-kid001']);
  assert.equal(ex.code, 0, ex.err);
  assert.match(ex.out, new RegExp(`Lease decisions:\\n  - lease ${kid.value.record.id} \\(profile worker, depth ${kid.value.record.depth}\\)`));
  const refused = kid.value.record.refused[0]!;
  assert.ok(ex.out.includes(`refused ${refused.what}: ${refused.code}`), ex.out);
  assert.doesNotMatch(ex.out, /rolled up over the tree/, 'a child shows its own savings only');

  const rx = await brig(home, ['explain', 'r-root01']);
  assert.equal(rx.code, 0, rx.err);
  const m = /Savings rolled up over the tree \(2 runs, estimate\):\n  materialized: (\d+) bytes  re-entered: (\d+) chars  estSavedTokens: (\d+)/.exec(rx.out);
  assert.ok(m, rx.out);
  assert.equal(Number(m[1]), kidRef.bytes + rootRef.bytes, 'the tree counts both runs\' refs');
  const j = JSON.parse((await brig(home, ['explain', 'r-root01', '--json'])).out);
  const jk = JSON.parse((await brig(home, ['explain', 'r-kid001', '--json'])).out);
  assert.equal(j.treeSavings.runs, 2);
  assert.equal(j.treeSavings.estSavedTokens, j.savings.estSavedTokens + jk.savings.estSavedTokens, 'the roll-up is the sum of the runs\' own');
  assert.equal(j.treeSavings.materializedBytes, j.savings.materializedBytes + jk.savings.materializedBytes);
});
