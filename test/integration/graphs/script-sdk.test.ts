/**
 * The script SDK's graph calls (`brig.graphRun`, `graphWait`, `graphCancel` → the broker's
 * graph.run, graph.wait, graph.cancel), on real jails: a script child whose lease holds `graph`
 * runs a graph of command nodes as one child of its own, follows it to its end, gets the
 * envelope and the manifest ref back and slices the manifest; it cancels a graph of its own
 * (the sleeping node's run killed, the node after it skipped). A script without `graph` is
 * refused `capability_denied`; one with it cannot wait for or cancel a graph it did not start
 * (the operator's answers `graph_not_found`, and goes on).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { compose, type Composed } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, until } from '../runs/fixture.js';

const ledgerOf = (home: string) =>
  fs.readdirSync(path.join(home, 'ledger')).flatMap((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8').split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>);

/** Two command nodes, the second reading the first's output. */
const PAIR = `graph: brig/v1
label: script-pair
nodes:
  - id: count
    kind: command
    spawn: { task: count, argv: [sh, -c, "echo 3 > /workspace/out/count.txt"] }
  - id: join
    kind: command
    depends_on: [count]
    inputs: [{ from: count, as: count }]
    spawn: { task: add, argv: [sh, -c, "cat /artifacts/count/count.txt > /workspace/out/total.txt"], expected_outputs: [total.txt] }
`;

/** A node that sleeps long past the test, and one after it. */
const SLEEPY = `graph: brig/v1
label: script-sleepy
nodes:
  - id: nap
    kind: command
    spawn: { task: nap, argv: [sh, -c, "sleep 300"] }
  - id: after
    kind: command
    depends_on: [nap]
    spawn: { task: after, argv: [sh, -c, "true"] }
`;

/** Starts PAIR without waiting, waits for its end with graphWait, slices its manifest. */
const RUNNER = `export default async function (brig) {
  const started = await brig.graphRun(${JSON.stringify(PAIR)}, { timeoutMs: 0 });
  let ended = started;
  for (let i = 0; i < 10 && ended.state === 'running'; i++) ended = await brig.graphWait(started.graphId, { timeoutMs: 20000 });
  const rows = await brig.ref(ended.manifestRef).sql('SELECT node, state FROM ref ORDER BY node');
  return { started, ended, rows: rows.rows };
}`;

/** Each call, its answer or its refusal's code. */
const CALLS = `async function tried(f) { try { return { ok: await f() }; } catch (e) { return { code: e.code }; } }`;

/** What a script may do to the graph named in its task: run one, look at it, cancel it. */
const PROBE = `${CALLS}
export default async function (brig) {
  return {
    run: await tried(() => brig.graphRun(${JSON.stringify(PAIR)}, { timeoutMs: 0 })),
    wait: await tried(() => brig.graphWait(brig.task, { timeoutMs: 0 })),
    cancel: await tried(() => brig.graphCancel(brig.task)),
  };
}`;

/** Starts SLEEPY; once steered (the test saw its first node's run started), cancels it. */
const CANCELLER = `export default async function (brig) {
  const started = await brig.graphRun(${JSON.stringify(SLEEPY)}, { timeoutMs: 0 });
  // A step a second, under the default max_steps (50).
  for (let i = 0; i < 45 && (await brig.progress('waiting')).length === 0; i++) await new Promise((r) => setTimeout(r, 1000));
  const seen = await brig.graphWait(started.graphId, { timeoutMs: 0 });
  const cancelled = await brig.graphCancel(started.graphId);
  return { started, seen, cancelled };
}`;

async function composed(home: string): Promise<Composed> {
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: 'http://127.0.0.1:9', BRIG_MODEL: 'unused' }), { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  return c;
}

test('a script holding `graph` runs a graph with brig.graphRun, follows it with brig.graphWait to its end, gets the envelope and the manifest ref and slices the manifest', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await composed(home);
  try {
    // exec for its command nodes and refs.read for the manifest: a node's lease is inside the script's.
    const r = await c.supervisor.spawn({ task: 'run a graph', kind: 'script', script: RUNNER, caps: ['graph', 'exec', 'refs.read', 'artifacts.read'], timeout: 180_000 });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    const s = r.value;
    assert.equal(s.endReason, 'completed', `${s.error?.message} ${s.stderrTail}`);
    type Reply = { graphId: string; state: string; endReason: string | null; counts: Record<string, number>; envelope: string | null; manifestRef: string | null; order?: string[] };
    const got = s.result as { started: Reply; ended: Reply; rows: unknown[][] };
    assert.equal(got.started.state, 'running', 'timeoutMs 0: started, not waited for');
    assert.equal(got.started.envelope, null);
    assert.deepEqual(got.started.order, ['count', 'join']);
    assert.equal(got.ended.graphId, got.started.graphId);
    assert.equal(got.ended.state, 'completed', JSON.stringify(got.ended));
    assert.deepEqual(got.ended.counts, { succeeded: 2 });
    assert.match(got.ended.envelope ?? '', /^\[Graph Result: script-pair\] completed · 2 nodes \(2 succeeded\)/);
    assert.ok(Buffer.byteLength(got.ended.envelope ?? '') <= 4096);
    assert.match(got.ended.manifestRef ?? '', /^ref_/);
    assert.deepEqual(got.rows, [['count', 'succeeded'], ['join', 'succeeded']], 'the manifest, sliced by the script that started the graph');

    // The graph is one child of the script: its nodes are the script's children, a level deeper.
    const g = await c.graphs.status(got.started.graphId);
    assert.ok(g.ok);
    assert.equal(g.value.callerRunId, s.id);
    const kids = await c.supervisor.list({ parentRunId: s.id });
    assert.deepEqual(kids.map((k) => k.id).sort(), g.value.nodes.map((n) => n.attempts[0]!.runId).sort());
    for (const k of kids) assert.equal(k.depth, s.depth + 1);
    const joined = await c.refs.list(g.value.nodes.find((n) => n.id === 'join')!.attempts[0]!.runId!);
    assert.ok(joined.ok && joined.value.some((x) => x.path.endsWith('total.txt')), 'join wrote its output from count’s');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('a script without `graph` is refused capability_denied by graphRun, graphWait and graphCancel; one with it gets graph_not_found for the operator’s graph, which goes on', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await composed(home);
  try {
    const op = await c.graphs.run(SLEEPY);
    assert.ok(op.ok, JSON.stringify(!op.ok && op.error));
    const theirs = op.value.graphId;
    type Tried = { ok?: { state: string }; code?: string };
    type Probe = { run: Tried; wait: Tried; cancel: Tried };

    const without = await c.supervisor.spawn({ task: theirs, kind: 'script', script: PROBE, caps: ['exec', 'spawn', 'refs.read'], timeout: 60_000 });
    assert.ok(without.ok, JSON.stringify(!without.ok && without.error));
    assert.equal(without.value.endReason, 'completed', without.value.stderrTail);
    const denied = without.value.result as Probe;
    assert.deepEqual(denied, { run: { code: 'capability_denied' }, wait: { code: 'capability_denied' }, cancel: { code: 'capability_denied' } });
    const lines = ledgerOf(home).filter((e) => e.type === 'broker.denied' && e.runId === without.value.id);
    assert.deepEqual(lines.map((e) => [e.method, e.code]).sort(), [['graph.cancel', 'capability_denied'], ['graph.run', 'capability_denied'], ['graph.wait', 'capability_denied']]);

    // With `graph` (and exec for its own graph's nodes): it runs its own, the operator's is not there for it.
    const withGraph = await c.supervisor.spawn({ task: theirs, kind: 'script', script: PROBE, caps: ['graph', 'exec', 'artifacts.read'], timeout: 60_000 });
    assert.ok(withGraph.ok, JSON.stringify(!withGraph.ok && withGraph.error));
    assert.equal(withGraph.value.endReason, 'completed', withGraph.value.stderrTail);
    const probed = withGraph.value.result as Probe;
    assert.equal(probed.run.ok?.state, 'running', JSON.stringify(probed.run));
    assert.deepEqual([probed.wait, probed.cancel], [{ code: 'graph_not_found' }, { code: 'graph_not_found' }]);

    const still = await c.graphs.status(theirs);
    assert.ok(still.ok);
    assert.equal(still.value.state, 'running', "the operator's graph was not cancelled");
    assert.ok(!still.value.nodes.some((n) => n.state === 'cancelled'));
    const cancelled = await c.graphs.cancel(theirs, { confirm: true });
    assert.ok(cancelled.ok);
    assert.ok((await c.graphs.wait(theirs, { timeoutMs: 60_000 })).ok);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('a script cancels a graph of its own with brig.graphCancel: the graph ends cancelled, its running node’s run is killed, the node after it skipped', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await composed(home);
  try {
    const r = await c.supervisor.spawn({ task: 'cancel a graph', kind: 'script', script: CANCELLER, caps: ['graph', 'exec'], timeout: 180_000, async: true });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    const id = r.value.id;
    // The script cancels only once the sleeping node's run is up in its jail.
    let napRunId: string | null = null;
    await until(async () => {
      const mine = (await c.graphs.list()).find((x) => x.callerRunId === id);
      napRunId = mine?.nodes.find((n) => n.id === 'nap')?.attempts[0]?.runId ?? null;
      const run = napRunId ? await c.supervisor.get(napRunId) : undefined;
      return run?.status === 'running' && run.startedAt !== null;
    }, "the nap node's run started");
    assert.ok((await c.supervisor.steer(id, 'cancel it', { by: 'operator' })).ok);
    const w = await c.supervisor.wait(id, { timeoutMs: 120_000 });
    assert.ok(w.ok, w.ok ? '' : w.error.message);
    assert.equal(w.value.endReason, 'completed', `${w.value.error?.message} ${w.value.stderrTail}`);
    type Reply = { graphId: string; state: string; endReason: string | null; counts: Record<string, number>; running: string[]; envelope: string | null };
    const got = w.value.result as { started: Reply; seen: Reply; cancelled: Reply };
    assert.deepEqual(got.seen.running, ['nap'], JSON.stringify(got.seen));
    assert.equal(got.cancelled.state, 'cancelled', JSON.stringify(got.cancelled));
    assert.equal(got.cancelled.endReason, 'cancelled');
    assert.deepEqual(got.cancelled.counts, { cancelled: 1, skipped: 1 });
    assert.match(got.cancelled.envelope ?? '', /^\[Graph Result: script-sleepy\] cancelled/);

    const g = await c.graphs.status(got.started.graphId);
    assert.ok(g.ok);
    assert.equal(g.value.state, 'cancelled');
    const nap = g.value.nodes.find((n) => n.id === 'nap')!;
    const after = g.value.nodes.find((n) => n.id === 'after')!;
    assert.equal(nap.state, 'cancelled');
    assert.equal(after.state, 'skipped');
    assert.equal(after.attempts.length, 0, 'never started');
    assert.equal(nap.attempts[0]!.runId, napRunId);
    const napRun = (await c.supervisor.get(napRunId!))!;
    assert.equal(napRun.parentRunId, id, "the node's run is the script's child");
    assert.equal(napRun.status, 'ended');
    assert.equal(napRun.endReason, 'killed', 'the sleeping node did not run out on its own');
    assert.equal(napRun.killedBy, 'parent', 'the kill is the run\'s that started the graph, as its own kills are');
    t.diagnostic(`nap killed by ${napRun.killedBy}, ${Date.parse(napRun.endedAt!) - Date.parse(napRun.startedAt!)} ms after its start`);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
