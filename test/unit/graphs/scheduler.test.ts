/**
 * The scheduler over a supervisor twin (no engine): when predicates, fail_fast and continue,
 * retries, the parallel cap, cancel, the write-ahead record, the envelope's bound, and
 * properties over random DAGs with random outcomes (every attempt ends once, no node starts
 * before its when holds, skipped exactly when unsatisfiable, running ≤ the cap, retries only
 * on the listed results).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { evaluateWhen, GraphService, GraphStore, graphEnvelope, manifestRows, plan } from '../../../src/graphs/index.js';
import { GRAPH_BOUNDS, type GraphRecord, type NodeResult, type NodeState, type RunRecord, type SpawnContext, type SpawnRequestInput, type WhenPredicate } from '../../../src/protocol/index.js';
import { BrigError, err, ok } from '../../../src/util/errors.js';

type End = 'completed' | 'failed' | 'watchdog_timeout';

/** A supervisor twin: each spawn ends with the next outcome scripted for its node (label graph/node). */
class TwinSupervisor {
  runs = new Map<string, { rec: RunRecord; end: () => void; resolve: () => void; ended: Promise<void>; ctx: SpawnContext; req: SpawnRequestInput }>();
  running = 0;
  maxRunning = 0;
  log: { node: string; event: 'start' | 'end'; result?: End; inputs?: string[] }[] = [];
  #n = 0;
  constructor(
    readonly outcomes: (node: string, attempt: number) => End,
    readonly auto = true,
    readonly onSpawn?: (node: string) => void | Promise<void>,
    readonly prefix = 'twin',
  ) {}

  async spawn(req: SpawnRequestInput, ctx: SpawnContext = {}) {
    const node = req.label!.split('/')[1]!;
    const attempt = Number(ctx.callerId!.split(':').at(-1));
    await this.onSpawn?.(node);
    const id = `r-${this.prefix}${String(++this.#n).padStart(6, '0')}`;
    const rec = { id, status: 'running', endReason: null, tokens: null, costUsd: null } as unknown as RunRecord;
    let end!: () => void;
    const ended = new Promise<void>((r) => (end = r));
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    this.log.push({ node, event: 'start', inputs: (ctx.inputs ?? []).map((i) => `${i.as}=${'runId' in i ? i.runId : i.ref}`) });
    const finish = (reason: RunRecord['endReason']) => {
      if (rec.status === 'ended') return;
      rec.status = 'ended';
      rec.endReason = reason;
      this.running--;
      this.log.push({ node, event: 'end', result: reason as End });
      end();
    };
    this.runs.set(id, { rec, end: () => finish(this.outcomes(node, attempt)), resolve: end, ended, ctx, req });
    if (this.auto) setImmediate(() => finish(this.outcomes(node, attempt)));
    return ok(rec);
  }

  async list() {
    return [...this.runs.values()].map((r) => ({ ...r.rec, callerId: r.ctx.callerId! }));
  }

  async wait(id: string) {
    const r = this.runs.get(id);
    if (!r) return err(new BrigError('run_not_found', id));
    await r.ended;
    return ok(r.rec);
  }

  async kill(id: string) {
    const r = this.runs.get(id)!;
    if (r.rec.status !== 'ended') {
      r.rec.status = 'ended';
      r.rec.endReason = 'killed';
      this.running--;
      this.log.push({ node: r.req.label!.split('/')[1]!, event: 'end', result: 'failed' });
      r.resolve();
    }
    return ok(r.rec);
  }
}

/** The store's directory: on tmpfs when there is one (the same real files; its fsyncs cost nothing, so the property's 120 graphs take ~1 s, not ~5). */
const STORE_ROOT = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();

const storeDirs: string[] = [];
after(() => {
  for (const d of storeDirs) fs.rmSync(d, { recursive: true, force: true });
});

function service(sup: TwinSupervisor, maxChildren = 5) {
  const dir = fs.mkdtempSync(path.join(STORE_ROOT, 'brig-graphs-'));
  storeDirs.push(dir);
  const store = new GraphStore(dir);
  const saved: GraphRecord[] = [];
  const origSave = store.save.bind(store);
  store.save = async (rec) => {
    saved.push(structuredClone(rec));
    await origSave(rec);
  };
  const manifests = new Map<string, string>();
  const g = new GraphService({
    supervisor: sup,
    store,
    limits: { maxChildren, maxDepth: 3, defaultTimeoutMs: 60_000 },
    putManifest: async (id, text) => {
      manifests.set(id, text);
      return `ref_manifest_${id}`;
    },
    refOf: async (runId) => `ref_of_${runId}`,
  });
  return { g, store, saved, manifests, dir };
}

const node = (id: string, extra: Record<string, unknown> = {}) => ({ id, kind: 'command', spawn: { task: 't', argv: ['true'] }, ...extra });
const spec = (nodes: unknown[], head: Record<string, unknown> = {}) => JSON.stringify({ graph: 'brig/v1', ...head, nodes });

async function runToEnd(g: GraphService, text: string) {
  const started = await g.run(text);
  assert.ok(started.ok, started.ok ? '' : started.error.message);
  const w = await g.wait(started.value.graphId);
  assert.ok(w.ok);
  return w.value;
}

const stateOf = (rec: GraphRecord, id: string) => rec.nodes.find((n) => n.id === id)!;

test('a chain runs in order; a dependent gets its declared input as the upstream succeeded run; the envelope and manifest come once', async () => {
  const sup = new TwinSupervisor(() => 'completed');
  const { g, manifests } = service(sup);
  const rec = await runToEnd(g, spec([node('a'), node('b', { depends_on: ['a'], inputs: [{ from: 'a', as: 'up' }] }), node('c', { depends_on: ['b'] })]));
  assert.equal(rec.state, 'completed');
  assert.deepEqual(sup.log.filter((l) => l.event === 'start').map((l) => l.node), ['a', 'b', 'c']);
  const aRun = stateOf(rec, 'a').attempts[0]!.runId;
  assert.deepEqual(sup.log.find((l) => l.node === 'b' && l.event === 'start')!.inputs, [`up=${aRun}`]);
  assert.deepEqual(sup.log.find((l) => l.node === 'c' && l.event === 'start')!.inputs, [], 'c declared no input: it gets none');
  assert.ok(rec.envelope && Buffer.byteLength(rec.envelope) <= GRAPH_BOUNDS.envelopeBytes);
  assert.match(rec.envelope, /^\[Graph Result: g-[a-z0-9]+\] completed · 3 nodes \(3 succeeded\)/);
  assert.match(rec.envelope, /^c\s+command\s+succeeded\s+a1/m);
  assert.equal(rec.manifestRef, `ref_manifest_${rec.id}`);
  const rows = manifests.get(rec.id)!.trim().split('\n').map((l) => JSON.parse(l) as { node: string; attempt: number; state: string; run_id: string });
  assert.deepEqual(rows.map((r) => [r.node, r.attempt, r.state]), [['a', 1, 'succeeded'], ['b', 1, 'succeeded'], ['c', 1, 'succeeded']]);
});

test('fail_fast: after a failure nothing new starts; not-started nodes end skipped (fail_fast); running siblings finish', async () => {
  const sup = new TwinSupervisor((n) => (n === 'a' ? 'failed' : 'completed'));
  const { g } = service(sup);
  const rec = await runToEnd(g, spec([node('a'), node('s'), node('b', { depends_on: ['a'] }), node('c', { depends_on: ['s'] })], { concurrency: { max_parallel: 2 } }));
  assert.equal(rec.state, 'failed');
  assert.equal(rec.endReason, 'fail_fast');
  assert.equal(stateOf(rec, 'a').state, 'failed');
  assert.equal(stateOf(rec, 's').state, 'succeeded', 'a running sibling finishes');
  assert.deepEqual([stateOf(rec, 'b').state, stateOf(rec, 'b').skipReason], ['skipped', 'fail_fast']);
  assert.deepEqual([stateOf(rec, 'c').state, stateOf(rec, 'c').skipReason], ['skipped', 'fail_fast']);
  assert.ok(!sup.log.some((l) => l.node === 'c'), 'c never started');
});

test('continue: only unsatisfiable nodes are skipped; a handler with when {results: {a: failed}} runs; all_done runs after a failure', async () => {
  const sup = new TwinSupervisor((n) => (n === 'a' ? 'failed' : 'completed'));
  const { g } = service(sup);
  const rec = await runToEnd(g, spec([
    node('a'),
    node('b', { depends_on: ['a'] }),
    node('onfail', { depends_on: ['a'], when: { results: { a: 'failed' } } }),
    node('always', { depends_on: ['a'], when: 'all_done' }),
    node('after_b', { depends_on: ['b'] }),
  ], { on_failure: { policy: 'continue' }, sinks: ['onfail', 'always'] }));
  assert.deepEqual(rec.nodes.map((n) => [n.id, n.state, n.skipReason]), [
    ['a', 'failed', null], ['b', 'skipped', 'unsatisfiable'], ['onfail', 'succeeded', null], ['always', 'succeeded', null], ['after_b', 'skipped', 'unsatisfiable'],
  ]);
  assert.equal(rec.state, 'completed', 'its sinks succeeded');
});

test('retry: a node that fails once then succeeds runs twice under its own keys; never retried on a result it does not list', async () => {
  const sup = new TwinSupervisor((n, attempt) => (n === 'flaky' && attempt === 1 ? 'failed' : n === 'slow' ? 'watchdog_timeout' : 'completed'));
  const { g } = service(sup);
  const rec = await runToEnd(g, spec([
    node('flaky', { retry: { max: 2, on: ['failed'] } }),
    node('slow', { retry: { max: 2, on: ['failed'] } }),
  ], { on_failure: { policy: 'continue' } }));
  const flaky = stateOf(rec, 'flaky');
  assert.deepEqual(flaky.attempts.map((a) => [a.n, a.result, a.key]), [[1, 'failed', `graph:${rec.id}:flaky:1`], [2, 'succeeded', `graph:${rec.id}:flaky:2`]]);
  assert.equal(flaky.committedRunId, flaky.attempts[1]!.runId, 'only the succeeded attempt commits');
  assert.deepEqual(stateOf(rec, 'slow').attempts.map((a) => a.result), ['timed_out'], 'timed_out is not in retry.on');
});

test('the parallel cap is min(max_parallel, the caller\'s children cap)', async () => {
  const sup = new TwinSupervisor(() => 'completed');
  const { g } = service(sup, 2);
  const started = await g.run(spec(Array.from({ length: 8 }, (_, i) => node(`n${i}`)), { concurrency: { max_parallel: 6 } }));
  assert.ok(started.ok);
  assert.equal(started.value.parallel, 2);
  await g.wait(started.value.graphId);
  assert.equal(sup.maxRunning, 2);
});

test('write-ahead: every attempt is on disk as starting (with its key) before its spawn is asked', async () => {
  let checked = 0;
  const holder: { store?: GraphStore; id?: () => string } = {};
  const sup = new TwinSupervisor(() => 'completed', true, async (n) => {
    // What a restart would read: a fresh store over the same directory (snapshot + journal).
    const ids = fs.readdirSync(holder.store!.dir);
    const rec = (await new GraphStore(holder.store!.dir).load(ids[0]!))!;
    const nr = rec.nodes.find((x) => x.id === n)!;
    assert.equal(nr.state, 'running');
    assert.equal(nr.attempts.at(-1)!.state, 'starting');
    assert.equal(nr.attempts.at(-1)!.runId, null);
    checked++;
  });
  const { g, store } = service(sup);
  holder.store = store;
  const rec = await runToEnd(g, spec([node('a'), node('b', { depends_on: ['a'] })]));
  assert.equal(checked, 2);
  assert.equal(rec.state, 'completed');
  const disk = await store.load(rec.id);
  assert.deepEqual(disk, rec, 'the last save is the ended record');
});

test('cancel: running nodes are killed (cancelled), pending ones skipped (cancelled), the graph ends cancelled once', async () => {
  const sup = new TwinSupervisor(() => 'completed', false);
  const { g, saved } = service(sup);
  const started = await g.run(spec([node('a'), node('b', { depends_on: ['a'] })]));
  assert.ok(started.ok);
  while (sup.runs.size === 0) await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  const c = await g.cancel(started.value.graphId, { confirm: true });
  assert.ok(c.ok);
  const rec = (await g.wait(started.value.graphId)).ok ? (await g.status(started.value.graphId)) : null;
  assert.ok(rec?.ok);
  assert.equal(rec.value.state, 'cancelled');
  assert.deepEqual(rec.value.nodes.map((n) => [n.id, n.state]), [['a', 'cancelled'], ['b', 'skipped']]);
  assert.equal(saved.filter((s) => s.endedAt !== null).length, 1, 'the end is written once');
  const refused = await g.cancel(started.value.graphId, { confirm: true });
  assert.ok(!refused.ok && refused.error.code === 'not_running');
  const noConfirm = await g.cancel('g-00000000', { confirm: false });
  assert.ok(!noConfirm.ok && noConfirm.error.code === 'invalid_input');
  const unknown = await g.status('g-0000000000');
  assert.ok(!unknown.ok && unknown.error.code === 'graph_not_found');
});

test('recover (on_restart: fail): a graph left running ends failed supervisor_restart once, its started runs killed', async () => {
  const sup = new TwinSupervisor(() => 'completed', false);
  const { g, store } = service(sup);
  const started = await g.run(spec([node('a'), node('b', { depends_on: ['a'] })]));
  assert.ok(started.ok);
  while (sup.runs.size === 0) await new Promise((r) => setImmediate(r));
  // The first service lives on in this process (a real crash ends it): its last write, the
  // attempt's run id, must land before the restart reads the record, or it overwrites the end.
  while (!(await store.load(started.value.graphId))?.nodes[0]?.attempts[0]?.runId) await new Promise((r) => setTimeout(r, 2));
  // A second service over the same store stands for the supervisor after a crash.
  const sup2 = new TwinSupervisor(() => 'completed');
  const killed: string[] = [];
  // An attempt caught before its run id was written is found by its key (test/integration/graphs/crash.test.ts).
  const after = new GraphService({ supervisor: { spawn: sup2.spawn.bind(sup2), wait: sup2.wait.bind(sup2), list: sup.list.bind(sup), kill: async (id) => (killed.push(id), ok({} as RunRecord)) }, store, limits: { maxChildren: 5, maxDepth: 3, defaultTimeoutMs: 1000 }, putManifest: async () => 'x' });
  assert.deepEqual(await after.recover(), [{ graphId: started.value.graphId, action: 'failed' }]);
  assert.deepEqual(await after.recover(), [], 'once');
  const rec = (await store.load(started.value.graphId))!;
  assert.equal(rec.state, 'failed');
  assert.equal(rec.endReason, 'supervisor_restart');
  assert.deepEqual(rec.nodes.map((n) => [n.id, n.state, n.skipReason]), [['a', 'failed', null], ['b', 'skipped', 'supervisor_restart']]);
  assert.deepEqual(killed, [...sup.runs.keys()]);
  assert.equal(rec.nodes[0]!.attempts[0]!.runId, [...sup.runs.keys()][0]);
});

/** A second service over the same store: the supervisor after a crash, whose runs are `runs` (what its reconcile left). */
function restarted(store: GraphStore, sup: TwinSupervisor, runs: () => Promise<RunRecord[]>, held?: { rec: RunRecord; ended: Promise<void> }) {
  const events: { type: string }[] = [];
  const manifests: string[] = [];
  const g = new GraphService({
    // A run the restart reattached (or swept) is the old supervisor's record; waited for through it.
    supervisor: { spawn: sup.spawn.bind(sup), wait: async (id) => (id === held?.rec.id ? (await held.ended, ok(held.rec)) : sup.wait(id)), kill: sup.kill.bind(sup), list: runs },
    store,
    limits: { maxChildren: 5, maxDepth: 3, defaultTimeoutMs: 60_000 },
    putManifest: async (_id, text) => (manifests.push(text), 'ref_m2'),
    onEvent: (e) => events.push(e),
  });
  return { g, events, manifests };
}

test('recover (on_restart: resume): completed nodes never re-run, the running attempt is reattached, the graph ends once', async () => {
  // The crash comes after a ended (its end written) while b runs.
  const sup = new TwinSupervisor(() => 'completed', false);
  const { g, store } = service(sup);
  const started = await g.run(spec([node('a'), node('b', { depends_on: ['a'] }), node('c', { depends_on: ['b'] })], { on_restart: 'resume' }));
  assert.ok(started.ok);
  const gid = started.value.graphId;
  while (sup.runs.size === 0) await new Promise((r) => setImmediate(r));
  [...sup.runs.values()][0]!.end();
  while (sup.runs.size < 2) await new Promise((r) => setImmediate(r));
  await new Promise((r) => setTimeout(r, 20));
  const onDisk = (await store.load(gid))!;
  assert.deepEqual(onDisk.nodes.map((n) => [n.id, n.state]), [['a', 'succeeded'], ['b', 'running'], ['c', 'pending']]);
  // The restarted supervisor reattached b's run (the dead one's service stays blocked on its own wait).
  const b = [...sup.runs.values()][1]!;
  let release!: () => void;
  const held = { rec: { ...b.rec, callerId: b.ctx.callerId! } as RunRecord, ended: new Promise<void>((r) => (release = r)) };
  const a = [...sup.runs.values()][0]!;
  const sup2 = new TwinSupervisor(() => 'completed');
  const after = restarted(store, sup2, async () => [{ ...a.rec, callerId: a.ctx.callerId! } as RunRecord, held.rec], held);
  assert.deepEqual(await after.g.recover(), [{ graphId: gid, action: 'resumed' }]);
  assert.deepEqual(after.events[0], { type: 'graph.resumed', graphId: gid, reattached: 1, lost: 0, respawned: 0, gates: 0 });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(sup2.runs.size, 0, 'nothing spawned while b runs');
  Object.assign(held.rec, { status: 'ended', endReason: 'completed' });
  release();
  const w = await after.g.wait(gid);
  assert.ok(w.ok);
  assert.equal(w.value.state, 'completed');
  assert.deepEqual(w.value.nodes.map((n) => [n.id, n.attempts.length]), [['a', 1], ['b', 1], ['c', 1]]);
  assert.deepEqual(w.value.nodes.slice(0, 2).map((n) => n.attempts[0]!.runId), [a.rec.id, b.rec.id]);
  assert.deepEqual(sup2.log.filter((l) => l.event === 'start').map((l) => l.node), ['c'], 'only c is spawned after the restart');
  assert.equal(after.events.filter((e) => e.type === 'graph.ended').length, 1);
  assert.equal(after.manifests.length, 1, 'one manifest');
  assert.deepEqual(await after.g.recover(), [], 'an ended graph is not taken up again');
});

test('recover (on_restart: resume): a lost attempt ends supervisor_restart and is retried only when idempotent; a never-spawned one is asked again under its key', async () => {
  for (const idempotent of [true, false]) {
    const sup = new TwinSupervisor(() => 'completed', false);
    const { g, store } = service(sup);
    const started = await g.run(spec([node('a', { retry: { max: 1, idempotent } }), node('b', { depends_on: ['a'] })], { on_restart: 'resume' }));
    assert.ok(started.ok);
    const gid = started.value.graphId;
    while (sup.runs.size === 0) await new Promise((r) => setImmediate(r));
    // The attempt's run id is on disk before the "crash" (a fixed sleep lost that race on a loaded machine).
    while (!(await store.load(gid))?.nodes[0]?.attempts[0]?.runId) await new Promise((r) => setTimeout(r, 5));
    // The restart's reconcile ghost-swept a's run (its jail was gone).
    const aRun = [...sup.runs.values()][0]!;
    const swept = { ...aRun.rec, status: 'ended', endReason: 'ghost_sweep', callerId: aRun.ctx.callerId! } as RunRecord;
    const sup2 = new TwinSupervisor(() => 'completed', true, undefined, 'next');
    const after = restarted(store, sup2, async () => [swept], { rec: swept, ended: Promise.resolve() });
    await after.g.recover();
    assert.deepEqual(after.events[0], { type: 'graph.resumed', graphId: gid, reattached: 0, lost: 1, respawned: 0, gates: 0 });
    const w = await after.g.wait(gid);
    assert.ok(w.ok);
    const a = w.value.nodes[0]!;
    assert.deepEqual([a.attempts[0]!.result, a.attempts[0]!.endReason], ['failed', 'supervisor_restart']);
    if (idempotent) {
      assert.equal(w.value.state, 'completed');
      assert.deepEqual(a.attempts.map((x) => [x.n, x.key.endsWith(':2'), x.result]), [[1, false, 'failed'], [2, true, 'succeeded']]);
    } else {
      assert.equal(w.value.state, 'failed', 'not idempotent: no retry after a restart, though retry.max is 1');
      assert.equal(a.attempts.length, 1);
      assert.equal(sup2.log.length, 0, 'nothing spawned');
    }
  }
  // A run id on the record that no run answers to (its record gone): lost as well, not retried without idempotent.
  {
    const sup = new TwinSupervisor(() => 'completed', false);
    const { g, store } = service(sup);
    const started = await g.run(spec([node('a')], { on_restart: 'resume' }));
    assert.ok(started.ok);
    while (sup.runs.size === 0) await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 20));
    const sup2 = new TwinSupervisor(() => 'completed', true, undefined, 'next');
    const after = restarted(store, sup2, async () => []);
    await after.g.recover();
    assert.deepEqual(after.events[0], { type: 'graph.resumed', graphId: started.value.graphId, reattached: 0, lost: 1, respawned: 0, gates: 0 });
    const w = await after.g.wait(started.value.graphId);
    assert.ok(w.ok);
    assert.deepEqual([w.value.state, w.value.nodes[0]!.attempts.map((x) => [x.endReason, x.errorCode])], ['failed', [['supervisor_restart', 'run_not_found']]]);
  }
  // An attempt written `starting` whose spawn never made a run: asked again, same attempt, same key.
  const sup = new TwinSupervisor(() => 'completed', false);
  const { g, store } = service(sup);
  const started = await g.run(spec([node('a')], { on_restart: 'resume' }));
  assert.ok(started.ok);
  while (sup.runs.size === 0) await new Promise((r) => setImmediate(r));
  await new Promise((r) => setTimeout(r, 20));
  const rec = (await store.load(started.value.graphId))!;
  rec.nodes[0]!.attempts[0]!.state = 'starting';
  rec.nodes[0]!.attempts[0]!.runId = null;
  await store.save(rec);
  const sup2 = new TwinSupervisor(() => 'completed');
  const after = restarted(store, sup2, async () => []);
  await after.g.recover();
  assert.deepEqual(after.events[0], { type: 'graph.resumed', graphId: started.value.graphId, reattached: 0, lost: 0, respawned: 1, gates: 0 });
  const w = await after.g.wait(started.value.graphId);
  assert.ok(w.ok);
  assert.equal(w.value.state, 'completed');
  assert.deepEqual(w.value.nodes[0]!.attempts.map((x) => [x.n, x.key]), [[1, rec.nodes[0]!.attempts[0]!.key]]);
  assert.deepEqual([...sup2.runs.values()].map((r) => r.ctx.callerId), [rec.nodes[0]!.attempts[0]!.key]);
});

test('the envelope stays ≤ 4 KiB at 200 nodes with long ids, the rest counted (never cut mid-line)', () => {
  const ids = Array.from({ length: 200 }, (_, i) => `node-with-a-rather-long-identifier-${String(i).padStart(3, '0')}`);
  const rec: GraphRecord = {
    v: 1, id: 'g-abcdefgh12', label: null, specHash: 'x', state: 'completed', endReason: 'completed', createdAt: '2026-01-01T00:00:00.000Z', endedAt: '2026-01-01T00:01:00.000Z',
    callerRunId: null, parallel: 4, order: ids, manifestRef: 'ref_m',
    envelope: null,
    nodes: ids.map((id) => ({ id, kind: 'command', state: 'succeeded', skipReason: null, committedRunId: 'r-x', attempts: [{ n: 1, key: 'k', state: 'ended', runId: 'r-abcdefabcdef', result: 'succeeded', endReason: 'completed', errorCode: null, startedAt: '2026-01-01T00:00:00.000Z', endedAt: '2026-01-01T00:00:01.500Z', tokens: 1234, costUsd: null }] })),
  };
  const e = graphEnvelope(rec, { refs: new Map(ids.map((i) => [i, 'ref_0123456789abcdef'])), sinks: [ids.at(-1)!], label: 'big', rows: 200 });
  assert.ok(Buffer.byteLength(e) <= GRAPH_BOUNDS.envelopeBytes, `${Buffer.byteLength(e)} bytes`);
  const shown = e.split('\n').filter((l) => l.startsWith('node-with'));
  const more = /… (\d+) more nodes: see the manifest/.exec(e);
  assert.ok(more);
  assert.equal(shown.length + Number(more[1]), 200);
  assert.ok(shown[0]!.startsWith(ids.at(-1)!), 'sinks lead');
  assert.ok(shown.every((l) => l.endsWith('ref_0123456789abcdef')), 'whole lines only');
  assert.equal(manifestRows(rec).length, 200);
});

// ── properties ──

const RESULTS: NodeResult[] = ['succeeded', 'failed', 'timed_out', 'cancelled', 'skipped'];
const whenArb: fc.Arbitrary<(deps: string[]) => WhenPredicate> = fc.oneof(
  fc.constant(() => 'all_succeeded' as const),
  fc.constant(() => 'all_done' as const),
  fc.constant((d: string[]) => (d.length > 0 ? ('any_succeeded' as const) : ('all_done' as const))),
  fc.nat().map((k) => (d: string[]) => (d.length > 0 ? { quorum: 1 + (k % d.length) } : ('all_done' as const))),
  fc.array(fc.subarray(RESULTS, { minLength: 1 }), { minLength: 8, maxLength: 8 }).map((rs) => (d: string[]) => ({ results: Object.fromEntries(d.slice(0, 3).map((x, i) => [x, rs[i]!])) })),
);

test('property: evaluateWhen says never exactly when no completion of the open dependencies makes it hold', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 4 }), whenArb, fc.array(fc.constantFrom<NodeState>('pending', 'running', ...RESULTS), { minLength: 4, maxLength: 4 }), (n, w, st) => {
      const deps = Array.from({ length: n }, (_, i) => `d${i}`);
      const when = w(deps);
      const state = new Map(deps.map((d, i) => [d, st[i]!]));
      const v = evaluateWhen(when, deps, (d) => state.get(d)!);
      // Brute force: every way the open ones could end.
      const open = deps.filter((d) => !RESULTS.includes(state.get(d) as NodeResult));
      let anyHolds = false;
      const total = RESULTS.length ** open.length;
      for (let k = 0; k < total; k++) {
        const s = new Map(state);
        let x = k;
        for (const d of open) {
          s.set(d, RESULTS[x % RESULTS.length]!);
          x = Math.floor(x / RESULTS.length);
        }
        if (evaluateWhen(when, deps, (d) => s.get(d)!) === 'ready') anyHolds = true;
      }
      assert.equal(v === 'never', !anyHolds);
      if (v === 'ready') assert.equal(open.length, 0, 'ready only when every dependency ended');
    }),
    { numRuns: 500 },
  );
});

const graphArb = fc.integer({ min: 1, max: 12 }).chain((n) =>
  fc.record({
    deps: fc.tuple(...Array.from({ length: n }, (_, i) => (i === 0 ? fc.constant([] as number[]) : fc.uniqueArray(fc.nat({ max: i - 1 }), { maxLength: 3 })))),
    whens: fc.array(whenArb, { minLength: n, maxLength: n }),
    outcomes: fc.array(fc.array(fc.constantFrom<End>('completed', 'completed', 'failed', 'watchdog_timeout'), { minLength: 4, maxLength: 4 }), { minLength: n, maxLength: n }),
    retries: fc.array(fc.record({ max: fc.integer({ min: 0, max: 3 }), on: fc.subarray(['failed', 'timed_out'] as const, { minLength: 1 }) }), { minLength: n, maxLength: n }),
    policy: fc.constantFrom('fail_fast', 'continue'),
    parallel: fc.integer({ min: 1, max: 4 }),
  }),
);

test('property: random DAGs with random outcomes — each attempt ends once, no start before its when holds, skips exactly when unsatisfiable (or fail_fast), running ≤ cap, retries only as declared', async () => {
  await fc.assert(
    fc.asyncProperty(graphArb, async (x) => {
      const ids = x.deps.map((_, i) => `n${i}`);
      const nodes = ids.map((id, i) => {
        const deps = x.deps[i]!.map((d) => ids[d]!);
        return node(id, { depends_on: deps, when: x.whens[i]!(deps), retry: x.retries[i] });
      });
      const sup = new TwinSupervisor((n, attempt) => x.outcomes[Number(n.slice(1))]![attempt - 1]!);
      const { g } = service(sup);
      const rec = await runToEnd(g, spec(nodes, { on_failure: { policy: x.policy }, concurrency: { max_parallel: x.parallel } }));
      assert.ok(sup.maxRunning <= x.parallel);
      // Each spawned run ended exactly once.
      const starts = sup.log.filter((l) => l.event === 'start').length;
      assert.equal(sup.log.filter((l) => l.event === 'end').length, starts);
      assert.equal(rec.nodes.reduce((t, n) => t + n.attempts.length, 0), starts);
      const final = new Map<string, NodeState>(rec.nodes.map((n) => [n.id, n.state]));
      for (const [i, id] of ids.entries()) {
        const n = stateOf(rec, id);
        const deps = x.deps[i]!.map((d) => ids[d]!);
        const when = x.whens[i]!(deps);
        assert.ok(n.state !== 'pending' && n.state !== 'running', `${id} ended`);
        // Started only when every dependency had ended and its when held (on the deps' final states).
        const startAt = sup.log.findIndex((l) => l.node === id && l.event === 'start');
        if (startAt >= 0) {
          for (const d of deps) assert.ok(sup.log.findIndex((l) => l.node === d && l.event === 'end') < startAt || stateOf(rec, d).attempts.length === 0, `${d} ended before ${id} started`);
          assert.equal(evaluateWhen(when, deps, (d) => final.get(d)!), 'ready');
        }
        if (n.state === 'skipped') {
          if (n.skipReason === 'unsatisfiable') assert.equal(evaluateWhen(when, deps, (d) => final.get(d)!), 'never');
          else assert.equal(n.skipReason, 'fail_fast');
        } else {
          assert.notEqual(evaluateWhen(when, deps, (d) => final.get(d)!), 'never', `${id} ran although its when could not hold`);
        }
        // Retries: only on a listed result, at most max.
        assert.ok(n.attempts.length <= x.retries[i]!.max + 1);
        for (const a of n.attempts.slice(0, -1)) assert.ok((x.retries[i]!.on as readonly string[]).includes(a.result!), `retried ${id} after ${a.result}`);
      }
      if (x.policy === 'continue') assert.ok(rec.nodes.every((n) => n.skipReason !== 'fail_fast'));
    }),
    { numRuns: 120 },
  );
});

test('plan starts nothing beyond the free slots and skips pending nodes on cancel', () => {
  const def = { order: ['a', 'b', 'c'], sinks: ['c'], spec: { on_failure: { policy: 'fail_fast' as const }, nodes: [{ id: 'a', depends_on: [], when: 'all_succeeded' as const }, { id: 'b', depends_on: [], when: 'all_succeeded' as const }, { id: 'c', depends_on: ['a'], when: 'all_succeeded' as const }] } };
  assert.deepEqual(plan({ def, states: new Map([['a', 'pending'], ['b', 'pending'], ['c', 'pending']]), parallel: 1 }), [{ kind: 'start', node: 'a' }]);
  assert.deepEqual(plan({ def, states: new Map([['a', 'running'], ['b', 'pending'], ['c', 'pending']]), parallel: 1, cancelled: true }), [{ kind: 'skip', node: 'b', reason: 'cancelled' }, { kind: 'skip', node: 'c', reason: 'cancelled' }]);
});

test("a run that completed without a file its spawn's expected_outputs names fails the node (expected_output_missing): no dependent sees it; retry.on failed runs it again", async () => {
  const sup = new TwinSupervisor(() => 'completed');
  let calls = 0;
  const wait = sup.wait.bind(sup);
  sup.wait = async (id: string) => {
    const w = await wait(id);
    // The first attempt of `a` completes without its expected file; the second with it.
    if (w.ok && w.value.status === 'ended' && sup.runs.get(id)!.req.label!.endsWith('/a') && ++calls === 1) return { ...w, value: { ...w.value, missingOutputs: ['report.md'] } };
    return w;
  };
  const { g } = service(sup);
  const rec = await runToEnd(g, spec([node('a', { spawn: { task: 't', argv: ['true'], expected_outputs: ['report.md'] }, retry: { max: 1, on: ['failed'] } }), node('b', { depends_on: ['a'] })]));
  const a = stateOf(rec, 'a');
  assert.deepEqual(a.attempts.map((x) => [x.result, x.endReason, x.errorCode]), [['failed', 'completed', 'expected_output_missing'], ['succeeded', 'completed', null]]);
  assert.equal(a.committedRunId, a.attempts[1]!.runId, 'only the attempt with its outputs commits');
  assert.equal(rec.state, 'completed');
  assert.deepEqual(sup.log.filter((l) => l.event === 'start').map((l) => l.node), ['a', 'a', 'b'], 'b started only after the attempt that had the file');
});
