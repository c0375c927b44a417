/**
 * The test tiers (test/tiers/): every test file is run by exactly one tier, the budgets keep
 * `make test` within 8 minutes, and the summary counts a file as node's own runner does —
 * whether the file ran in a process of its own or in a shared worker.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, fork } from 'node:child_process';
import path from 'node:path';
import { parseTap, tapSummary, topLevelSections } from '../tiers/tap.js';
import { allTestFiles, filesOf, ROOT, TIERS, tierOf } from '../tiers/tiers.js';

const SAMPLE = 'test/fixtures/tiers/sample.ts';

test('every test file is in exactly one tier, and every file a tier names exists', () => {
  const all = allTestFiles();
  assert.ok(all.length > 100, `found ${all.length} test files`);
  assert.deepEqual(all.filter((f) => tierOf(f) === undefined), [], 'test files no tier runs');
  const byTier = TIERS.flatMap((t) => filesOf(t.name, all));
  assert.deepEqual([...byTier].sort(), all, 'each file once');
  for (const t of TIERS) {
    for (const f of [...Object.keys(t.alone), ...Object.keys(t.ownProcess), ...t.startFirst]) {
      assert.ok(all.includes(f), `${t.name} names ${f}, which is no test file`);
      assert.equal(tierOf(f), t.name, `${f} is listed by the ${t.name} tier but runs in ${tierOf(f)}`);
    }
    if (!t.shared) assert.deepEqual(t.ownProcess, {}, `${t.name} gives every file a process already`);
    for (const [f, why] of Object.entries({ ...t.alone, ...t.ownProcess })) assert.ok(why.length > 20, `${f}: say why`);
  }
});

// 8 minutes and 30 s until round 2026-12-02's proofs (egress, graphs, a full home, outages): 11 and 40.
// 15 minutes from round 2026-12-03 (14 integration files more; a quiet run should bring it back), 16 minutes 40 s with its
// second part's 10 (graph crash tests, replay, admission, hooks, the toolbox), 17 minutes 40 s with its third
// part's 16 (handles and the package, a foreign warm pool, graph budgets, inspected TLS, timing). The Kubernetes tier has its own
// bound: its pods cost ~1 s each (the kubelet's relist); 3 minutes until 2026-12-04's second stop, 4 with its 10 files
// (the pool, egress, a repository, NetworkPolicy enforcement shown by the doctor, the ENOSPC and PID conformance rows:
// 166 s in CI). Its files run one at a time: one stops the policy controller, one puts a policy beside brig's.
test('the engine tiers add up to at most 17 minutes 40 s, the Kubernetes tier to at most 4, and the unit tier to at most 40 s', () => {
  assert.ok(TIERS.filter((t) => t.name !== 'k8s').reduce((n, t) => n + t.budgetS, 0) <= 1060);
  assert.ok(TIERS.find((t) => t.name === 'k8s')!.budgetS <= 240);
  assert.ok(TIERS.find((t) => t.name === 'unit')!.budgetS <= 40);
  assert.ok(TIERS.find((t) => t.name === 'integration')!.concurrency <= 2, 'integration files run at most two at a time');
});

const EXPECTED = {
  counts: { tests: 9, pass: 4, fail: 1, cancelled: 0, skipped: 3, todo: 1 },
  skips: [
    { name: 'skips with a # in its reason', reason: 'no engine #2 here' },
    { name: 'declared skipped', reason: '(no reason given)' },
    { name: 'a # in its name > inner skips', reason: 'inner why' },
  ],
  failed: ['fails: Expected values to be strictly equal:'],
};

test('a file of its own: counted as node counts it, each skip named with its reason', async () => {
  const tap = await new Promise<string>((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', '--test-reporter=tap', SAMPLE], { cwd: ROOT }, (_e, stdout) => resolve(stdout));
  });
  const r = parseTap(tap);
  assert.deepEqual(r, EXPECTED);
  const { tests, pass, fail, skipped, todo } = r.counts;
  assert.deepEqual(tapSummary(tap), { tests, pass, fail, cancelled: 0, skipped, todo }, "the same as node's own summary");
});

test('a file in a shared worker: its own section, counted the same', async () => {
  const child = fork(path.join(ROOT, 'test/tiers/worker.ts'), [], { cwd: ROOT, execArgv: ['--import', 'tsx', '--test-reporter=tap'], stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let tap = '';
  child.stdout!.on('data', (d: Buffer) => (tap += d.toString()));
  const done: string[] = [];
  child.on('message', (m: { ready?: true; done?: string }) => {
    if (m.done) done.push(m.done);
    child.send(done.length === 0 ? { file: SAMPLE } : { end: true });
  });
  await new Promise((resolve) => child.on('close', resolve));
  assert.deepEqual(done, [SAMPLE], 'the worker says when the file is done');
  const sections = topLevelSections(tap);
  assert.deepEqual(sections.map((s) => [s.name, s.ok]), [[SAMPLE, false]]);
  assert.deepEqual(parseTap(sections[0]!.body), EXPECTED);
});

test('a file in a process started ahead of it (--single): counted as if it ran alone', async () => {
  const child = fork(path.join(ROOT, 'test/tiers/worker.ts'), ['--single', '--preload', path.join(ROOT, 'test/tiers/tap.ts'), '--preload', 'fast-check'], { cwd: ROOT, execArgv: ['--import', 'tsx', '--test-reporter=tap'], stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let tap = '';
  child.stdout!.on('data', (d: Buffer) => (tap += d.toString()));
  child.once('message', () => child.send({ file: SAMPLE }));
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.equal(code, 1, 'a failing test fails its process');
  assert.deepEqual(parseTap(tap), EXPECTED);
  assert.ok(tapSummary(tap), "node's own summary closes it");
});
