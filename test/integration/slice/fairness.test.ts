/**
 * [INV-9] One child cannot stall everyone's slicing. Through the daemon's own wiring
 * (daemon/refs.ts openDrillIn: the operator's RefService and the children's ChildRefs over
 * one slicing), with real DuckDB helpers and real jq processes: a child flooding slow calls
 * gets at most SLICE_SCHEDULE.perRun admitted (the rest `rate_limited` at once), the
 * operator's call is served before any of the child's completes, a tree's siblings together
 * get at most perTree, and a call whose deadline passes while it waits fails `timeout`
 * without ever running. Order and counts only; no timing assertion.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { loadConfig } from '../../../src/config/index.js';
import { openDrillIn, type DrillIn } from '../../../src/daemon/refs.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import type { RunRecord } from '../../../src/protocol/index.js';
import { FsResultStore } from '../../../src/results/index.js';
import { SLICE_SCHEDULE, SliceScheduler, Slicer } from '../../../src/slice/index.js';

/** ≈ 1–5 s of DuckDB work on this machine (load varies); finite, under the child's 15 s. */
const SLOW_SQL = 'SELECT count(*) FROM ref, range(25000000) t(i) WHERE hash(i + x) % 7 = 0';
/** ≈ 1–3 s of jq work. */
const SLOW_JQ = 'reduce range(0; 1000000) as $i (0; . + $i)';

interface Outcome {
  code: string;
  /** A rate_limited refusal's scope (run, tree, queue). */
  scope?: unknown;
  /** Completion order across every call of the test (1-based). */
  at: number;
}

/** A tree root → p → pc, root → q → qc, and another tree x → xc; each leaf has a JSON-lines ref. */
async function world(t: import('node:test').TestContext) {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-fair-'));
  await fs.chmod(home, 0o700);
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const runs = new Map<string, RunRecord>();
  const add = (p: string[]) => runs.set(p.at(-1)!, { id: p.at(-1)!, rootRunId: p[0]!, path: p, parentRunId: p.length > 1 ? p.at(-2)! : null } as RunRecord);
  [['root'], ['root', 'p'], ['root', 'q'], ['root', 'p', 'pc'], ['root', 'q', 'qc'], ['x'], ['x', 'xc']].forEach(add);
  const ref: Record<string, string> = {};
  for (const id of ['pc', 'qc', 'xc']) ref[id] = (await store.writeStream(id, runs.get(id)!.rootRunId, 'data.jsonl', Readable.from([Buffer.from('{"x":1}\n{"x":2}\n')]))).ref;
  const drill = openDrillIn(loadConfig({ BRIG_HOME: home }), { store, ledger: new MemoryLedger(), getRun: async (id) => runs.get(id) });
  t.after(async () => {
    await drill.close();
    await fs.rm(home, { recursive: true, force: true });
  });
  let done = 0;
  // A handler's reply or throw, or RefService's Result: the code it came to, and when.
  const settle = (p: Promise<unknown>): Promise<Outcome> =>
    p.then(
      (v) => ({ code: (v as { ok?: boolean; error?: { code: string } }).ok === false ? (v as { error: { code: string } }).error.code : 'ok', at: ++done }),
      (e: { code?: string; data?: { scope?: unknown } }) => ({ code: e.code ?? String(e), scope: e.data?.scope, at: ++done }),
    );
  const child = (runId: string) => ({
    sql: (r: string, sql: string) => settle(drill.childRefs.handlers['refs.sql']({ runId, leaseId: `l-${runId}`, method: 'refs.sql', params: { ref: r, sql } })),
    jq: (r: string, filter: string) => settle(drill.childRefs.handlers['refs.jq']({ runId, leaseId: `l-${runId}`, method: 'refs.jq', params: { ref: r, filter } })),
  });
  // Warm: both faces have answered once (no helper start in what follows).
  assert.equal((await child('p').sql(ref.pc!, 'SELECT 1')).code, 'ok');
  assert.equal((await settle(drill.refs.sql(ref.pc!, 'SELECT 1'))).code, 'ok');
  return { drill, ref, child, settle };
}

const count = (os: Outcome[], code: string) => os.filter((o) => o.code === code).length;
const tick = () => new Promise((r) => setTimeout(r, 300));

// req: limits:no-stall
test('[INV-9] sql: a child flooding slow queries gets perRun admitted, the rest rate_limited; the operator is served before any of the child\'s completes', async (t) => {
  const { drill, ref, child, settle } = await world(t);
  const flood = Array.from({ length: SLICE_SCHEDULE.perRun + 3 }, () => child('p').sql(ref.pc!, SLOW_SQL));
  await tick(); // the flood reaches the scheduler first
  const op = await settle(drill.refs.sql(ref.pc!, 'SELECT 42'));
  assert.equal(op.code, 'ok');
  const outs = await Promise.all(flood);
  const before = outs.filter((o) => o.code === 'ok' && o.at < op.at).length;
  assert.equal(before, 0, `the operator's query waited for ${before} of the child's`);
  assert.equal(count(outs, 'rate_limited'), 3, JSON.stringify(outs));
  // Admitted: they ran, or (on a busy machine) a later one's time ran out while it waited.
  assert.equal(count(outs, 'ok') + count(outs, 'timeout'), SLICE_SCHEDULE.perRun, JSON.stringify(outs));
});

// req: limits:no-stall
test('[INV-9] jq: a child flooding slow filters gets perRun admitted, the rest rate_limited; the operator is served before any of the child\'s completes', async (t) => {
  const { drill, ref, child, settle } = await world(t);
  const flood = Array.from({ length: SLICE_SCHEDULE.perRun + 5 }, () => child('p').jq(ref.pc!, SLOW_JQ));
  await tick();
  const op = await settle(drill.refs.jq(ref.pc!, '.x'));
  assert.equal(op.code, 'ok');
  const outs = await Promise.all(flood);
  const before = outs.filter((o) => o.code === 'ok' && o.at < op.at).length;
  assert.equal(before, 0, `the operator's jq waited for ${before} of the child's`);
  assert.equal(count(outs, 'rate_limited'), 5, JSON.stringify(outs));
  assert.equal(count(outs, 'ok') + count(outs, 'timeout'), SLICE_SCHEDULE.perRun, JSON.stringify(outs));
});

// req: limits:no-stall
test('[INV-9] the per-tree cap holds across two sibling runs; another tree is not charged for it', async (t) => {
  const { ref, child } = await world(t);
  // Both siblings at their own cap at once: together they are over the tree's.
  const p = Array.from({ length: SLICE_SCHEDULE.perRun }, () => child('p').sql(ref.pc!, SLOW_SQL));
  const q = Array.from({ length: SLICE_SCHEDULE.perRun }, () => child('q').sql(ref.qc!, SLOW_SQL));
  await tick();
  const other = child('x').sql(ref.xc!, 'SELECT 1');
  const [ps, qs, xs] = [await Promise.all(p), await Promise.all(q), await other];
  const all = [...ps, ...qs];
  const refused = all.filter((o) => o.code === 'rate_limited');
  assert.equal(refused.length, 2 * SLICE_SCHEDULE.perRun - SLICE_SCHEDULE.perTree, JSON.stringify(all));
  assert.ok(refused.every((o) => o.scope === 'tree'), 'refused for the tree, each run being within its own cap');
  assert.equal(count(all, 'ok') + count(all, 'timeout'), SLICE_SCHEDULE.perTree, 'the tree\'s admitted calls ran (or their time ran out waiting)');
  assert.equal(xs.code, 'ok', 'another tree is admitted');
});

// req: limits:no-stall
test('[INV-9] time in the queue counts: a call whose deadline passes while it waits fails timeout and never runs', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-fair-dl-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const r = (await store.writeStream('run-d', 'root-d', 'data.jsonl', Readable.from([Buffer.from('{"x":1}\n')]))).ref;
  // One scheduler, as the daemon has: the child lane's grep/jq slots are all taken by filters
  // that run to their own (long) deadline; a quick filter with a short deadline waits behind them.
  const scheduler = new SliceScheduler();
  const child = (runId: string) => ({ lane: 'child' as const, runId, treeId: `tree-${runId}` });
  const long = new Slicer(store, { scheduler, limits: { timeoutMs: 8000 } });
  const short = new Slicer(store, { scheduler, limits: { timeoutMs: 1500 } });
  let done = 0;
  const settle = (p: Promise<{ ok: boolean; error?: { code: string } }>) => p.then((v) => ({ code: v.ok ? 'ok' : v.error!.code, at: ++done }));
  const hogs = Array.from({ length: scheduler.capacity('child').tools }, (_, i) => settle(long.as(child(`hog${i}`)).jq(r, 'def f: f; f')));
  await tick();
  const waiting = await settle(short.as(child('late')).jq(r, '.x'));
  const hogged = await Promise.all(hogs);
  assert.equal(waiting.code, 'timeout', 'its deadline passed in the queue');
  assert.ok(hogged.every((h) => h.at > waiting.at), 'it was refused while every slot was still taken: it never ran');
  assert.ok(hogged.every((h) => h.code === 'timeout'));
});
