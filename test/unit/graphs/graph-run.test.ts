/**
 * The capability `graph` and its tool `graph_run` without an engine: the vocabulary and the
 * shipped policies, the tool surface, a graph node's lease (made `via: graph` — the parent must
 * hold `graph`, its caps are the parent's ∩ the node's request), the graph run as one child of
 * its caller (parent, depth, parallel cap), the broker handler's own refusals and who may slice
 * a graph's manifest.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AGENT_TOOLS, agentMethodSurface, toolSurface } from '../../../src/agents/index.js';
import { METHOD_NAMES, requiredCapability } from '../../../src/broker/index.js';
import { graphCancelHandler, graphManifestReader, graphRunHandler, graphWaitHandler } from '../../../src/daemon/graphs.js';
import { GraphService, GraphStore } from '../../../src/graphs/index.js';
import { CAPABILITIES, LeaseStore, loadPolicyFile, shippedPoliciesDir, type Policy } from '../../../src/lease/index.js';
import { isGraphAttemptKey, type GraphEvent, type LeaseRecord, type RunRecord, type SpawnContext } from '../../../src/protocol/index.js';
import { BrigError, err, ok } from '../../../src/util/errors.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';

const shipped = (name: string): Policy => {
  const r = loadPolicyFile(path.join(shippedPoliciesDir(), name));
  assert.ok(r.ok);
  return r.value;
};

async function withStore(fn: (s: LeaseStore, ledger: MemoryLedger) => void | Promise<void>): Promise<void> {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-graphcap-'));
  const ledger = new MemoryLedger();
  try {
    await fn(new LeaseStore({ dir: path.join(home, 'leases'), policy: shipped('default.yaml'), ledger }), ledger);
  } finally {
    await fs.promises.rm(home, { recursive: true, force: true });
  }
}

// req: lease:graph-nodes-within-caller
test('[INV-1] `graph` is a capability; graph.run needs it; the shipped policies grant it to root and coordinator only, strict denylists it', () => {
  assert.ok((CAPABILITIES as readonly string[]).includes('graph'));
  assert.equal(requiredCapability('graph.run'), 'graph');
  // A gate is an operator's: no broker method decides one, whatever the lease.
  assert.deepEqual(METHOD_NAMES.filter((m) => /gate|approve|reject|decide/.test(m)), []);
  const d = shipped('default.yaml');
  const holds = Object.fromEntries(Object.entries(d.profiles).map(([n, p]) => [n, p.grant.caps.includes('graph')]));
  assert.deepEqual(holds, { root: true, worker: false, researcher: false, coordinator: true });
  const strict = shipped('strict.yaml');
  assert.ok(strict.denylist.caps.includes('graph'));
  assert.ok(Object.values(strict.profiles).every((p) => !p.grant.caps.includes('graph')));
});

// req: lease:tool-surface-binds
test('[INV-1] the tool surface follows the lease: graph_run only with `graph` (a coordinator keeps it); its bearer reaches graph.run only when offered', () => {
  assert.equal(AGENT_TOOLS.graph_run, 'graph');
  const base = ['llm', 'refs.read', 'spawn'];
  assert.ok(!toolSurface({ caps: base, role: 'coordinator' }).includes('graph_run'));
  assert.ok(!toolSurface({ caps: base, role: 'worker' }).includes('graph_run'));
  assert.ok(toolSurface({ caps: [...base, 'graph'], role: 'coordinator' }).includes('graph_run'));
  assert.ok(toolSurface({ caps: ['graph'], role: 'worker' }).includes('graph_run'));
  assert.ok(!toolSurface({ caps: ['graph'], role: 'worker', denied: ['graph_run'] }).includes('graph_run'), 'the denylist still wins');
  assert.ok(!toolSurface({ caps: ['graph'], role: 'worker', wanted: ['ref_read'] }).includes('graph_run'), "a spec's tool list narrows it");
  assert.ok(agentMethodSurface(['graph_run']).includes('graph.run'));
  assert.ok(!agentMethodSurface(['spawn', 'ref_sql']).includes('graph.run'));
  // graph_wait, its companion, goes with it: the same capability, the same narrowing.
  assert.equal(AGENT_TOOLS.graph_wait, 'graph');
  assert.ok(toolSurface({ caps: [...base, 'graph'], role: 'coordinator' }).includes('graph_wait'));
  assert.ok(!toolSurface({ caps: base, role: 'coordinator' }).includes('graph_wait'));
  assert.ok(agentMethodSurface(['graph_wait']).includes('graph.wait'));
  assert.ok(!agentMethodSurface(['graph_run']).includes('graph.wait'));
  // graph_cancel, its stop, too; and the shipped `graphs` tool group keeps all three.
  assert.equal(AGENT_TOOLS.graph_cancel, 'graph');
  assert.ok(toolSurface({ caps: [...base, 'graph'], role: 'coordinator' }).includes('graph_cancel'));
  assert.ok(!toolSurface({ caps: base, role: 'coordinator' }).includes('graph_cancel'));
  assert.ok(agentMethodSurface(['graph_cancel']).includes('graph.cancel'));
  assert.ok(!agentMethodSurface(['graph_run', 'graph_wait']).includes('graph.cancel'));
  const grouped = toolSurface({ caps: [...base, 'graph'], role: 'coordinator', groupTools: shipped('default.yaml').groups.graphs!.tools });
  assert.deepEqual(grouped.filter((x) => x.startsWith('graph_')), ['graph_run', 'graph_wait', 'graph_cancel']);
});

// req: lease:caps-intersect lease:graph-nodes-within-caller
test("[INV-1] a graph node's lease: made via graph, the parent must hold graph (not spawn); its caps are the parent's ∩ the node's request, never wider", () =>
  withStore((s, ledger) => {
    const lead = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000, request: { caps: ['graph', 'llm', 'refs.read'] } });
    assert.ok(lead.ok);
    assert.deepEqual([...lead.value.record.caps].sort(), ['graph', 'llm', 'refs.read']);
    const base = { parentLeaseId: lead.value.record.id, profile: 'coordinator', rootRunId: 'r0', timeoutMs: 1000 };
    const node = s.issueChild({ ...base, via: 'graph', request: { caps: ['refs.read', 'spawn', 'kill', 'exec', 'graph'] }, runId: 'n1' });
    assert.ok(node.ok, node.ok ? '' : node.error.message);
    assert.deepEqual([...node.value.record.caps].sort(), ['graph', 'refs.read'], 'only what the lead holds');
    assert.deepEqual(node.value.record.refused.filter((r) => r.code === 'capability_denied').map((r) => r.what).sort(), ['exec', 'kill', 'spawn']);
    assert.equal(node.value.record.parentLeaseId, lead.value.record.id);
    assert.equal(node.value.record.depth, lead.value.record.depth + 1);
    const plain = s.issueChild({ ...base, request: undefined, runId: 'n2' });
    assert.ok(!plain.ok && plain.error.code === 'capability_denied' && /does not hold spawn/.test(plain.error.message), 'a broker spawn still needs spawn');
    // A lease without graph cannot make graph nodes (the researcher has spawn, not graph).
    const researcher = s.issueRoot({ profile: 'researcher', runId: 'q0', rootRunId: 'q0', timeoutMs: 600_000 });
    assert.ok(researcher.ok);
    const denied = s.issueChild({ ...base, parentLeaseId: researcher.value.record.id, rootRunId: 'q0', via: 'graph', request: undefined, runId: 'q1' });
    assert.ok(!denied.ok && denied.error.code === 'capability_denied' && /does not hold graph/.test(denied.error.message));
    assert.deepEqual(ledger.events.filter((e) => e.type === 'lease.refused').map((e) => e.code), ['capability_denied', 'capability_denied']);
  }));

test('a graph attempt key is recognised only in its own shape', () => {
  assert.ok(isGraphAttemptKey('graph:g-mx790lvg4303ea88f60a:join:1'));
  for (const k of ['operator', 'r-abcdef123456', 'graph:', 'graph:nope:a:1', 'xgraph:g-mx790lvg4303ea88f60a:a:1']) assert.ok(!isGraphAttemptKey(k), k);
});

/** A supervisor twin that records each spawn's context and ends each run completed at once. */
function twin() {
  const spawned: SpawnContext[] = [];
  let n = 0;
  const runs = new Map<string, RunRecord>();
  return {
    spawned,
    sup: {
      async spawn(_req: unknown, ctx: SpawnContext = {}) {
        spawned.push(ctx);
        const rec = { id: `r-twin${String(++n).padStart(6, '0')}`, status: 'ended', endReason: 'completed', tokens: null, costUsd: null } as unknown as RunRecord;
        runs.set(rec.id, rec);
        return ok(rec);
      },
      async wait(id: string) {
        return ok(runs.get(id)!);
      },
      async kill(id: string) {
        return ok(runs.get(id)!);
      },
      async list() {
        return [...runs.values()];
      },
    },
  };
}

const SPEC = JSON.stringify({
  graph: 'brig/v1',
  concurrency: { max_parallel: 8 },
  nodes: [
    { id: 'a', kind: 'command', spawn: { task: 't', argv: ['true'] } },
    { id: 'b', kind: 'command', depends_on: ['a'], spawn: { task: 't', argv: ['true'] } },
  ],
});

function graphService(t: { after: (fn: () => void) => void }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-graphrun-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const tw = twin();
  const events: GraphEvent[] = [];
  const store = new GraphStore(dir);
  const g = new GraphService({ supervisor: tw.sup, store, limits: { maxChildren: 10, maxDepth: 3, defaultTimeoutMs: 60_000 }, putManifest: async (id) => `ref_manifest_${id}`, onEvent: (e) => events.push(e) });
  return { g, tw, events, store };
}

// req: lease:graph-nodes-within-caller
test("[INV-1] a graph run by a caller is one child of it: every node spawned with it as parent, running ≤ min(max_parallel, its children cap), its depth + 1 under its maxDepth; graph.started names it", async (t) => {
  const { g, tw, events } = graphService(t);
  const started = await g.run(SPEC, { by: 'run:r-lead000001', caller: { runId: 'r-lead000001', depth: 1, maxChildren: 2, maxDepth: 3 } });
  assert.ok(started.ok, started.ok ? '' : started.error.message);
  assert.equal(started.value.parallel, 2, 'min(8, the caller’s 2)');
  const done = await g.wait(started.value.graphId);
  assert.ok(done.ok);
  assert.equal(done.value.state, 'completed');
  assert.equal(done.value.callerRunId, 'r-lead000001');
  assert.deepEqual(tw.spawned.map((c) => c.parentRunId), ['r-lead000001', 'r-lead000001']);
  assert.ok(tw.spawned.every((c) => isGraphAttemptKey(c.callerId!)), 'each spawn under its attempt key: the lease is made via graph');
  assert.deepEqual(events.find((e) => e.type === 'graph.started'), { type: 'graph.started', graphId: started.value.graphId, nodes: 2, parallel: 2, runId: 'r-lead000001' });
  // An operator's graph names no caller run.
  const op = await g.run(SPEC);
  assert.ok(op.ok);
  assert.equal((events.filter((e) => e.type === 'graph.started').at(-1) as { runId?: string }).runId, undefined);
  // At the caller's maxDepth its nodes would sit one deeper: refused at define, nothing spawned.
  await g.wait(op.value.graphId);
  const before = tw.spawned.length;
  const deep = await g.run(SPEC, { caller: { runId: 'r-lead000001', depth: 3, maxDepth: 3, maxChildren: 2 } });
  assert.ok(!deep.ok && deep.error.code === 'depth_exceeded');
  const none = await g.run(SPEC, { caller: { runId: 'r-lead000001', depth: 1, maxDepth: 3, maxChildren: 0 } });
  assert.ok(!none.ok && none.error.code === 'children_exceeded');
  assert.equal(tw.spawned.length, before, 'no spawn for a refused graph');
});

// req: lease:graph-nodes-within-caller
test('[INV-1] a graph takes one child slot of its caller while it runs and gives it back once at its end; no free slot refuses it children_exceeded before anything is written or spawned', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-graphslot-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const tw = twin();
  const held: string[] = [];
  let released = 0;
  let free = true;
  const g = new GraphService({
    supervisor: tw.sup,
    store: new GraphStore(dir),
    limits: { maxChildren: 10, maxDepth: 3, defaultTimeoutMs: 60_000 },
    putManifest: async (id) => `ref_manifest_${id}`,
    holdSlot: (caller, graphId) => {
      if (!free) return err(new BrigError('children_exceeded', `run ${caller} has no free slot`, { data: { limit: 1, current: 1 } }));
      held.push(`${caller}:${graphId}`);
      return ok(() => void released++);
    },
  });
  const caller = { runId: 'r-lead000001', depth: 1, maxChildren: 2, maxDepth: 3 };
  const s1 = await g.run(SPEC, { caller });
  assert.ok(s1.ok);
  assert.deepEqual(held, [`r-lead000001:${s1.value.graphId}`], 'held under the graph id, for the caller run');
  await g.wait(s1.value.graphId);
  await new Promise((r) => setImmediate(r));
  assert.equal(released, 1, 'given back once the graph ended');
  // The operator's graph holds nothing (the operator is no run with a children cap).
  const op = await g.run(SPEC);
  assert.ok(op.ok);
  await g.wait(op.value.graphId);
  assert.equal(held.length, 1);
  free = false;
  const spawnsBefore = tw.spawned.length;
  const full = await g.run(SPEC, { caller });
  assert.ok(!full.ok && full.error.code === 'children_exceeded', 'no free slot: refused');
  assert.equal(tw.spawned.length, spawnsBefore, 'nothing spawned');
  assert.equal((await g.list()).length, 2, 'nothing written');
});

const lease = (caps: string[]): LeaseRecord => ({ id: 'ls_x', depth: 1, caps, limits: { maxChildren: 3, maxDepth: 3 } }) as unknown as LeaseRecord;
const call = (caps: string[]) => ({ runId: 'r-lead000001', rootRunId: 'r-lead000001', leaseId: 'ls_x', lease: lease(caps), method: 'graph.run' as const, params: { spec: SPEC }, callId: 1, resent: false });

// req: lease:enforced
test('[INV-1] graph.run: the handler itself refuses a lease without graph and a caller that is not running; it answers the envelope and the manifest ref', async (t) => {
  const { g } = graphService(t);
  let status = 'running';
  const sup = { get: async () => ({ status }) as RunRecord, whileBlocked: <T>(_id: string, fn: () => Promise<T>) => fn() };
  const h = graphRunHandler(g, sup);
  await assert.rejects(async () => h(call(['llm', 'spawn'])), (e: unknown) => e instanceof BrigError && e.code === 'capability_denied');
  assert.equal((await g.list()).length, 0, 'no graph made');
  const r = (await h(call(['graph']))) as { state: string; envelope: string; manifestRef: string; graphId: string };
  assert.equal(r.state, 'completed');
  assert.equal(r.manifestRef, `ref_manifest_${r.graphId}`);
  assert.ok(r.envelope.length > 0 && Buffer.byteLength(r.envelope) <= 4096);
  status = 'ended';
  await assert.rejects(async () => h(call(['graph'])), (e: unknown) => e instanceof BrigError && e.code === 'not_running');
});

// req: lease:enforced
test('[INV-1] graph.run with timeoutMs 0 answers at once; graph.wait polls (0) or waits bounded for a graph the caller started — another run\'s graph or the operator\'s is graph_not_found, a lease without graph is refused', async (t) => {
  const { g } = graphService(t);
  let status = 'running';
  const sup = { get: async () => ({ status }) as RunRecord, whileBlocked: <T>(_id: string, fn: () => Promise<T>) => fn(), holdChildSlot: () => ok(() => {}) };
  const run = graphRunHandler(g, sup);
  const wait = graphWaitHandler(g, sup);
  const started = (await run({ ...call(['graph']), params: { spec: SPEC, timeoutMs: 0 } })) as { graphId: string; state: string; envelope: string | null };
  assert.equal(started.state, 'running', 'timeoutMs 0: the graph was started, not waited for');
  assert.equal(started.envelope, null);
  const waitCall = (graphId: string, caps = ['graph'], runId = 'r-lead000001', timeoutMs = 5_000) => ({ ...call(caps), runId, method: 'graph.wait' as const, params: { graphId, timeoutMs } });
  const done = (await wait(waitCall(started.graphId))) as { state: string; envelope: string; manifestRef: string; counts: Record<string, number> };
  assert.equal(done.state, 'completed');
  assert.deepEqual(done.counts, { succeeded: 2 });
  assert.match(done.envelope, /^\[Graph Result: g-[a-z0-9]+\] completed/);
  assert.equal(done.manifestRef, `ref_manifest_${started.graphId}`);
  const polled = (await wait(waitCall(started.graphId, ['graph'], 'r-lead000001', 0))) as { state: string };
  assert.equal(polled.state, 'completed');
  await assert.rejects(async () => wait(waitCall(started.graphId, ['graph'], 'r-other00001')), (e: unknown) => e instanceof BrigError && e.code === 'graph_not_found', "another run's graph is not there for it");
  const op = await g.run(SPEC);
  assert.ok(op.ok);
  await assert.rejects(async () => wait(waitCall(op.value.graphId)), (e: unknown) => e instanceof BrigError && e.code === 'graph_not_found', "the operator's graph is not the lead's");
  await assert.rejects(async () => wait(waitCall(started.graphId, ['llm', 'spawn'])), (e: unknown) => e instanceof BrigError && e.code === 'capability_denied');
  status = 'ended';
  await assert.rejects(async () => wait(waitCall(started.graphId)), (e: unknown) => e instanceof BrigError && e.code === 'not_running');
});

/** A supervisor twin whose runs go on until killed: a kill ends one `killed`. */
function heldTwin() {
  const runs = new Map<string, { rec: RunRecord; end: () => void; ended: Promise<void> }>();
  const killed: string[] = [];
  let n = 0;
  return {
    killed,
    sup: {
      async spawn() {
        const rec = { id: `r-held${String(++n).padStart(6, '0')}`, status: 'running', endReason: null, tokens: null, costUsd: null } as unknown as RunRecord;
        let end!: () => void;
        const ended = new Promise<void>((r) => (end = r));
        runs.set(rec.id, { rec, end, ended });
        return ok(rec);
      },
      async wait(id: string) {
        await runs.get(id)!.ended;
        return ok(runs.get(id)!.rec);
      },
      async kill(id: string, o: { by?: string }) {
        const r = runs.get(id)!;
        killed.push(id);
        Object.assign(r.rec, { status: 'ended', endReason: 'killed', killedBy: o.by ?? 'operator' });
        r.end();
        return ok(r.rec);
      },
      async list() {
        return [...runs.values()].map((r) => r.rec);
      },
    },
  };
}

test('graph.cancel: the caller cancels a graph it started — its running node killed, the rest skipped, answered as graph.wait answers; another run\'s graph or the operator\'s is graph_not_found and goes on; an ended one is answered as it ended', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-graphcancel-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const tw = heldTwin();
  const g = new GraphService({ supervisor: tw.sup as never, store: new GraphStore(dir), limits: { maxChildren: 10, maxDepth: 3, defaultTimeoutMs: 60_000 }, putManifest: async (id) => `ref_manifest_${id}` });
  let status = 'running';
  const sup = { get: async () => ({ status }) as RunRecord, whileBlocked: <T>(_id: string, fn: () => Promise<T>) => fn() };
  const cancel = graphCancelHandler(g, sup);
  const cancelCall = (graphId: string, runId = 'r-lead000001', caps = ['graph']) => ({ ...call(caps), runId, method: 'graph.cancel' as const, params: { graphId } });
  const caller = { runId: 'r-lead000001', depth: 1, maxChildren: 2, maxDepth: 3 };
  const mine = await g.run(SPEC, { caller });
  const op = await g.run(SPEC);
  assert.ok(mine.ok && op.ok);
  await new Promise((r) => setTimeout(r, 50));
  await assert.rejects(async () => cancel(cancelCall(mine.value.graphId, 'r-other00001')), (e: unknown) => e instanceof BrigError && e.code === 'graph_not_found', "another run's graph is not there for it");
  await assert.rejects(async () => cancel(cancelCall(op.value.graphId)), (e: unknown) => e instanceof BrigError && e.code === 'graph_not_found', "the operator's graph is not the lead's");
  await assert.rejects(async () => cancel(cancelCall(mine.value.graphId, 'r-lead000001', ['llm', 'spawn'])), (e: unknown) => e instanceof BrigError && e.code === 'capability_denied');
  assert.equal(tw.killed.length, 0, 'nothing killed by a refused cancel');
  const r = (await cancel(cancelCall(mine.value.graphId))) as { state: string; endReason: string; counts: Record<string, number>; envelope: string; manifestRef: string };
  assert.equal(r.state, 'cancelled');
  assert.equal(r.endReason, 'cancelled');
  assert.deepEqual(r.counts, { cancelled: 1, skipped: 1 }, 'a (running) cancelled, b (waiting on a) skipped');
  assert.match(r.envelope, /cancelled/);
  assert.equal(r.manifestRef, `ref_manifest_${mine.value.graphId}`);
  const rec = await g.status(mine.value.graphId);
  assert.ok(rec.ok);
  assert.deepEqual(tw.killed, [rec.value.nodes[0]!.attempts[0]!.runId], "only the cancelled graph's running node was killed");
  const other = await g.status(op.value.graphId);
  assert.ok(other.ok && other.value.state === 'running', "the operator's graph goes on");
  const again = (await cancel(cancelCall(mine.value.graphId))) as { state: string };
  assert.equal(again.state, 'cancelled', 'an ended graph is answered as it ended');
  assert.equal(tw.killed.length, 1);
  status = 'ended';
  await assert.rejects(async () => cancel(cancelCall(mine.value.graphId)), (e: unknown) => e instanceof BrigError && e.code === 'not_running');
  status = 'running';
  await g.cancel(op.value.graphId, { confirm: true });
  await g.wait(op.value.graphId);
});

// req: slice:descendants-only
test("[INV-5] a graph's manifest is sliceable by the run that started it only", async (t) => {
  const { g, store } = graphService(t);
  const started = await g.run(SPEC, { caller: { runId: 'r-lead000001', depth: 1, maxDepth: 3, maxChildren: 2 } });
  assert.ok(started.ok);
  await g.wait(started.value.graphId);
  const op = await g.run(SPEC);
  assert.ok(op.ok);
  await g.wait(op.value.graphId);
  const may = graphManifestReader(store);
  assert.equal(await may(started.value.graphId, 'r-lead000001'), true);
  assert.equal(await may(started.value.graphId, 'r-other00001'), false);
  assert.equal(await may(op.value.graphId, 'r-lead000001'), false, "an operator's graph is no run's child");
  assert.equal(await may('r-lead000001', 'r-lead000001'), false, 'a run id is not a graph');
});
