/**
 * The pure parts of the long-lived fixes: dedup on the whole request, admission that does
 * not count parents blocked on their children, a spooled result crossing back as a pointer,
 * and the start-up sweep of what interrupted materializations left.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { resultsPort } from '../../../src/daemon/compose.js';
import { FsResultStore } from '../../../src/results/index.js';
import { DEFAULT_SETTINGS, decideAdmission, nextToStart, type RunRecord } from '../../../src/runs/index.js';
import { boundedResult } from '../../../src/runs/child-calls.js';
import { createRunRecord, requestHash } from '../../../src/runs/record.js';

const T0 = new Date('2026-01-01T00:00:00Z');
let seq = 0;
function run(p: Partial<RunRecord> = {}): RunRecord {
  const id = `r-ll${String(seq++).padStart(8, '0')}`;
  const base = createRunRecord({
    id, parent: null, callerId: 'operator', agent: 'default', kind: 'script', label: null, task: `task ${id}`,
    requestHash: `h-${id}`, now: T0, timeoutMs: 1000, maxSteps: 10, async: true, expectedOutputs: [], resumeOf: null,
  });
  return { ...base, ...p };
}

test('requestHash: the same task with another argv, caps or profile is other work; async and key order are not', () => {
  const base = { task: 'same words', kind: 'command', argv: ['sh', '-c', 'echo A'], caps: ['exec'], profile: 'worker' };
  const h = requestHash(base);
  assert.notEqual(requestHash({ ...base, argv: ['sh', '-c', 'echo B'] }), h);
  assert.notEqual(requestHash({ ...base, caps: ['exec', 'spawn'] }), h);
  assert.notEqual(requestHash({ ...base, profile: 'root' }), h);
  assert.notEqual(requestHash({ ...base, kind: 'script', script: 'export default () => 1' }), h);
  assert.equal(requestHash({ ...base, async: true }), h);
  assert.equal(requestHash({ profile: 'worker', caps: ['exec'], argv: ['sh', '-c', 'echo A'], kind: 'command', task: 'same words' }), h);
});

test('admission: parents blocked on their children do not hold the global slots their children need', () => {
  const parents = [0, 1, 2, 3, 4].map(() => run({ status: 'running' }));
  const child = { depth: 2, parentRunId: parents[0]!.id, rootRunId: parents[0]!.id, callerId: parents[0]!.id, agent: 'default', requestHash: 'h-child' };
  assert.equal(decideAdmission(parents, child, DEFAULT_SETTINGS).kind, 'queue', 'five computing parents fill maxConcurrent 5');
  const blocked = new Set(parents.map((p) => p.id));
  assert.equal(decideAdmission(parents, child, DEFAULT_SETTINGS, blocked).kind, 'admit');
  const queued = parents.map((p, i) => run({ status: 'queued', parentRunId: p.id, rootRunId: p.id, createdAt: new Date(T0.getTime() + i).toISOString() }));
  assert.deepEqual(nextToStart([...parents, ...queued], DEFAULT_SETTINGS), []);
  assert.deepEqual(nextToStart([...parents, ...queued], DEFAULT_SETTINGS, blocked), queued.map((q) => q.id));
  // A blocked parent still counts among its own parent's children (per-parent caps hold).
  const top = run({ status: 'running' });
  const mid = [0, 1, 2, 3, 4].map(() => run({ status: 'running', depth: 2, parentRunId: top.id, rootRunId: top.id }));
  const sixth = { depth: 2, parentRunId: top.id, rootRunId: top.id, callerId: top.id, agent: 'default', requestHash: 'h-6' };
  assert.equal(decideAdmission([top, ...mid], sixth, DEFAULT_SETTINGS, new Set(mid.map((m) => m.id))).kind, 'queue');
});

test('admission: an operator\'s spawns are bounded by maxConcurrent alone; a run\'s children by maxChildrenPerAgent too', () => {
  const wide = { ...DEFAULT_SETTINGS, maxConcurrent: 8 };
  const ops = [0, 1, 2, 3, 4, 5].map(() => run({ status: 'running' }));
  const op = { depth: 1, parentRunId: null, rootRunId: null, callerId: 'operator', agent: 'default', requestHash: 'h-op' };
  assert.equal(decideAdmission(ops, op, wide).kind, 'admit', 'a seventh operator spawn under maxConcurrent 8 runs');
  assert.equal(decideAdmission([...ops, run({ status: 'running' }), run({ status: 'running' })], op, wide).kind, 'queue', 'the ninth waits');
  const top = run({ status: 'running' });
  const kids = [0, 1, 2, 3, 4].map(() => run({ status: 'running', depth: 2, parentRunId: top.id, rootRunId: top.id }));
  const kid = { depth: 2, parentRunId: top.id, rootRunId: top.id, callerId: top.id, agent: 'default', requestHash: 'h-kid' };
  assert.equal(decideAdmission([top, ...kids], kid, wide).kind, 'queue', 'a run\'s sixth child waits behind maxChildrenPerAgent 5');
  const queuedOps = [0, 1].map((i) => run({ status: 'queued', createdAt: new Date(T0.getTime() + i).toISOString() }));
  assert.deepEqual(nextToStart([...ops, ...queuedOps], wide), queuedOps.map((q) => q.id), 'queued operator runs start up to maxConcurrent');
});

test('a spooled child result crosses back as a pointer with its size, never inline', () => {
  assert.deepEqual(boundedResult(null, 70_123), { result: null, resultCut: { chars: 70_123, hint: 'the whole value is the result.json ref: slice it with refs.read / refs.jq' } });
  assert.deepEqual(boundedResult({ small: 1 }, null), { result: { small: 1 } });
});

// req: results:atomic
test('[INV-4] start-up sweep: collect temps and never-indexed dirs of ended runs go; live runs and indexed refs stay', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-ll-sweep-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const port = resultsPort(store);
  // An indexed run with a half-copied second collect beside it.
  const out = port.outDir('r-root0001', 'r-done0001');
  await fs.mkdir(out, { recursive: true });
  await fs.writeFile(path.join(out, 'a.txt'), 'kept');
  await port.index('r-root0001', 'r-done0001', out, {});
  await fs.mkdir(`${out}.tmp-abcdef`, { recursive: true });
  await fs.writeFile(path.join(`${out}.tmp-abcdef`, 'half.bin'), Buffer.alloc(4096));
  // An ended run whose collect finished but whose indexing never did (the crash window).
  const orphan = port.outDir('r-root0001', 'r-orph0001');
  await fs.mkdir(orphan, { recursive: true });
  await fs.writeFile(path.join(orphan, 'big.bin'), Buffer.alloc(8192));
  // A live run being redone by the supervisor: kept for it.
  const live = port.outDir('r-root0001', 'r-live0001');
  await fs.mkdir(live, { recursive: true });
  await fs.writeFile(path.join(live, 'x'), 'x');

  const swept = await store.sweepInterrupted((id) => id === 'r-live0001');
  assert.equal(swept.removed, 2);
  assert.ok(swept.bytes >= 12288);
  await assert.rejects(fs.access(`${out}.tmp-abcdef`));
  await assert.rejects(fs.access(store.runDir('r-root0001', 'r-orph0001')));
  assert.equal(await fs.readFile(path.join(out, 'a.txt'), 'utf8'), 'kept');
  assert.equal(await fs.readFile(path.join(live, 'x'), 'utf8'), 'x');
  assert.equal((await store.list('r-done0001')).length, 1);
});

test('brig list shows a live run\'s own progress line (escaped, cut) and marks partial results', async () => {
  const { runLine } = await import('../../../src/cli/run-view.js');
  const live = run({ status: 'running', startedAt: T0.toISOString(), progressLine: 'step 3: parsing\x1b[31m logs\n' + 'x'.repeat(100) });
  const line = runLine(live, new Date(T0.getTime() + 5000));
  assert.match(line, /“step 3: parsing\\x1b\[31m logs x+…”/);
  assert.ok(!line.includes('\x1b'), 'no raw escape reaches the terminal');
  const ended = run({ status: 'ended', endReason: 'killed', killedBy: 'operator', partial: true, progressLine: 'old' });
  assert.match(runLine(ended), /killed\(operator\).*\(partial\)/);
  assert.doesNotMatch(runLine(ended), /old/);
});

test('[INV-4] a collection redone after a crash replaces what the first attempt indexed: no doubled refs, no refusal', async (t) => {
  const { collectOutputs } = await import('../../../src/runs/launch.js');
  const { RunTable } = await import('../../../src/runs/run-table.js');
  const { RunStore } = await import('../../../src/runs/run-store.js');
  const { MemoryLedger } = await import('../../helpers/fakes/memory-ledger.js');
  const { FakeJailDriver } = await import('../../helpers/fakes/fake-jail.js');
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-ll-redo-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const table = new RunTable(new RunStore(path.join(home, 'runs')), new MemoryLedger(), { now: () => new Date() });
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const rec = run({ status: 'materializing', result: { steps: 7 } });
  table.runs.set(rec.id, rec);
  await table.store.ensureDir(rec.id);
  const jail = (await new FakeJailDriver().create({ runId: rec.id } as never)) as import('../../helpers/fakes/fake-jail.js').FakeJail;
  jail.outFiles = { 's.txt': 'x'.repeat(7508) };
  const ctx = { table, results: resultsPort(store), settings: DEFAULT_SETTINGS };
  const first = await collectOutputs(ctx, rec.id, jail);
  assert.equal(first.error, undefined);
  // The crash: run.json still says materializing; the next start collects again.
  const again = await collectOutputs(ctx, rec.id, jail);
  assert.equal(again.error, undefined, JSON.stringify(again.error));
  assert.deepEqual(again.missingOutputs, []);
  const refs = await store.list(rec.id);
  assert.deepEqual(refs.map((r) => r.path).sort(), ['out/s.txt', 'result.json', 'stdout.txt']);
});

/**
 * A supervisor that died with a run's end saved but not released: run.json says ended (and
 * unreleased). `announced`: the crash fell after its ledger lines, before the flag was cleared.
 */
async function diedBeforeRelease(announced: boolean) {
  const { setupSup, until } = await import('./setup.js');
  const first = await setupSup();
  const r = await first.sup.spawn({ task: 'ends', script: 'export default async () => 1', async: true });
  assert.ok(r.ok);
  await until(() => first.sup.peek(r.value.id)?.status === 'running', 'running');
  await first.sup.close();
  const rec = (await first.store.load(r.value.id))!;
  await first.store.save({ ...rec, status: 'ended', endReason: 'completed', terminalStatus: null, endedAt: new Date().toISOString(), unreleased: true });
  if (announced) first.ledger.append({ type: 'run.lifecycle_ended', runId: r.value.id, endReason: 'completed' });
  const restart = () => setupSup({ home: first.home, jail: first.jail, leases: first.leases, ...(announced ? { ledger: first.ledger } : {}) });
  return { first, runId: r.value.id, restart };
}

// req: end:released end:one-reason
test('[INV-8] an end saved by a supervisor that died before releasing it is finished at the next start: socket dir gone, announced once', async () => {
  const { first, runId, restart } = await diedBeforeRelease(false);
  const brokerDir = path.join(first.home, 'brokers', runId);
  await fs.mkdir(brokerDir, { recursive: true });
  await fs.writeFile(path.join(brokerDir, 'broker.sock'), '');
  const second = await restart();
  await assert.rejects(fs.access(brokerDir), 'the socket directory went with the finished end');
  const after = second.sup.peek(runId)!;
  assert.equal(after.endReason, 'completed', 'the end reason is the saved one');
  assert.equal(after.unreleased, undefined);
  const ends = second.ledger.events.filter((e: { type: string; runId?: string }) => e.type === 'run.lifecycle_ended' && e.runId === runId);
  assert.equal(ends.length, 1);
  await second.sup.close();
});

test('[INV-8] an end a dead supervisor announced but did not mark released is finished at the next start without a second announcement', async () => {
  const { first, runId, restart } = await diedBeforeRelease(true);
  const second = await restart();
  assert.equal(second.sup.peek(runId)!.unreleased, undefined, 'released and marked so');
  const ends = first.ledger.events.filter((e: { type: string; runId?: string }) => e.type === 'run.lifecycle_ended' && e.runId === runId);
  assert.equal(ends.length, 1, 'announced exactly once across the crash');
  await second.sup.close();
});

test('sessions_list filters: kind and since (minutes) narrow a list', async () => {
  const { setupSup } = await import('./setup.js');
  const { sup } = await setupSup();
  const a = await sup.spawn({ task: 's', script: 'export default async () => 1', async: true });
  const b = await sup.spawn({ task: 'c', kind: 'command', argv: ['true'], async: true });
  assert.ok(a.ok && b.ok);
  assert.deepEqual((await sup.list({ kind: ['command'] })).map((r) => r.id), [b.value.id]);
  assert.equal((await sup.list({ kind: ['agent'] })).length, 0);
  assert.equal((await sup.list({ sinceMinutes: 5 })).length, 2);
  assert.equal((await sup.list({ sinceMinutes: 0.000001 })).length, 0, 'created before the window');
  await sup.close();
});
