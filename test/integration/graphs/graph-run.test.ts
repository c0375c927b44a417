/**
 * The agent tool `graph_run` (capability `graph`), on real jails with a scripted model server on
 * host loopback (a stand-in, not a real model): a lead whose lease holds `graph` runs a graph of
 * command children through its broker, gets the bounded envelope and the manifest ref back, and
 * slices the manifest with ref_sql as a child's ref. Every node is a child of the lead, its lease
 * attenuated from the lead's (a node asking for a capability the lead lacks does not get it). A
 * lead without `graph` is not offered the tool, and a run without it calling the broker method
 * anyway is refused `capability_denied`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, toolCallTurn, type RecordedRequest } from '../../helpers/model-server.js';
import { freshHome, leftovers } from '../runs/fixture.js';

type Msg = { role: string; content: unknown };
const msgs = (r: RecordedRequest) => r.body.messages as Msg[];
const lastTool = (r: RecordedRequest) => String([...msgs(r)].reverse().find((m) => m.role === 'tool')?.content ?? '');
const offered = (r: RecordedRequest) => ((r.body.tools ?? []) as { function: { name: string } }[]).map((x) => x.function.name);
const turnsOf = (r: RecordedRequest) => msgs(r).filter((x) => x.role === 'assistant').length;
const ledgerOf = (home: string) =>
  fs.readdirSync(path.join(home, 'ledger')).flatMap((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8').split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>);

/** Three command nodes: two in parallel (one asking for `kill` and `spawn`, which the lead does not hold), then a join reading one read-only. */
const SPEC = `graph: brig/v1
label: lead-fanout
concurrency: { max_parallel: 8 }
nodes:
  - id: count
    kind: command
    spawn: { task: count, argv: [sh, -c, "echo 3 > /workspace/out/count.txt"] }
  - id: wide
    kind: command
    spawn: { task: ask wider, argv: [sh, -c, "echo hi > /workspace/out/wide.txt"], caps: [exec, kill, spawn, refs.read] }
  - id: join
    kind: command
    depends_on: [count, wide]
    inputs: [{ from: count, as: count }]
    spawn: { task: add, argv: [sh, -c, "cat /artifacts/count/count.txt > /workspace/out/total.txt"], expected_outputs: [total.txt] }
`;

// req: lease:caps-intersect lease:graph-nodes-within-caller envelope:bounded slice:descendants-only
test('[INV-1] [INV-3] [INV-5] a lead holding `graph` runs a graph with graph_run: nodes are its children with leases inside its own, it gets the envelope and slices the manifest ref', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const m = await startModelServer({
    script: (req) => {
      switch (turnsOf(req)) {
        case 0:
          return toolCallTurn('graph_run', { spec: SPEC });
        case 1: {
          const ref = /"manifestRef":"(ref_[a-z2-7]+)"/.exec(lastTool(req))?.[1] ?? 'ref_missing';
          return toolCallTurn('ref_sql', { ref, sql: 'SELECT node, state, run_id FROM ref ORDER BY node' });
        }
        default:
          return toolCallTurn('finish', { answer: 'graph done' });
      }
    },
  });
  t.after(() => m.close());
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '32000' }), { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    // The lead holds graph, llm, refs.read and exec and artifacts.read (a command node needs exec, a node with inputs artifacts.read, and a node's lease is inside its lead's) — not spawn, not kill.
    const r = await c.supervisor.spawn({ task: 'LEAD: run the graph', kind: 'agent', agent: 'coordinator', caps: ['llm', 'refs.read', 'graph', 'exec', 'artifacts.read'], timeout: 300_000 });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    const lead = r.value;
    assert.equal(lead.endReason, 'completed', `${lead.error?.message} ${lead.stderrTail}`);
    assert.deepEqual(m.problems, []);
    const first = m.requests[0]!;
    assert.ok(offered(first).includes('graph_run'), `offered: ${offered(first).join(', ')}`);
    assert.ok(!offered(first).includes('spawn'), 'the lease has no spawn: the tool surface follows the lease');

    // 1. The envelope came back whole (≤ 4 KiB), then the ids; the graph completed.
    const got = lastTool(m.requests.find((q) => turnsOf(q) === 1)!);
    const env = got.slice(0, got.lastIndexOf('\n{'));
    const meta = JSON.parse(got.slice(got.lastIndexOf('\n{') + 1)) as { graphId: string; state: string; manifestRef: string; order: string[] };
    if (meta.state !== 'completed') for (const k of await c.supervisor.list({ parentRunId: lead.id })) t.diagnostic(`${k.id} ${k.endReason} ${JSON.stringify(k.error)} ${k.stderrTail}`);
    assert.equal(meta.state, 'completed', got);
    assert.match(env, /count/);
    assert.match(env, /join/);
    assert.ok(Buffer.byteLength(env) <= 4096, `envelope ${Buffer.byteLength(env)} bytes`);
    assert.deepEqual(meta.order.slice(-1), ['join']);
    t.diagnostic(`graph_run's tool result: ${Buffer.byteLength(got)} bytes`);

    // 2. The manifest ref is readable by the lead as a child's ref: ref_sql answered rows, not ref_not_found.
    const sliced = lastTool(m.requests.find((q) => turnsOf(q) === 2)!);
    assert.doesNotMatch(sliced, /^error/, sliced);
    for (const node of ['count', 'join', 'wide']) assert.match(sliced, new RegExp(`"${node}","succeeded"`), sliced);

    // 3. The graph is one child of the lead: every node run is the lead's child at its depth + 1.
    const g = await c.graphs.status(meta.graphId);
    assert.ok(g.ok);
    assert.equal(g.value.callerRunId, lead.id);
    assert.equal(g.value.parallel, 5, "min(max_parallel 8, the lead's children cap — root's maxChildren 5)");
    const kids = await c.supervisor.list({ parentRunId: lead.id });
    assert.equal(kids.length, 3, 'one run per node, each a child of the lead');
    for (const k of kids) assert.equal(k.depth, lead.depth + 1);

    // 4. No widening: each node's lease is attenuated from the lead's, never the operator's.
    const leadLease = await c.operator.leases.show(lead.leaseId!);
    assert.ok(leadLease.ok);
    const leadCaps = leadLease.value.lease.caps;
    assert.deepEqual([...leadCaps].sort(), ['artifacts.read', 'exec', 'graph', 'llm', 'refs.read']);
    const wideRun = g.value.nodes.find((n) => n.id === 'wide')!.attempts[0]!.runId!;
    const wide = await c.operator.leases.show((await c.supervisor.get(wideRun))!.leaseId!);
    assert.ok(wide.ok);
    assert.equal(wide.value.lease.parentLeaseId, lead.leaseId, "the node's lease is the lead's child lease");
    assert.deepEqual([...wide.value.lease.caps].sort(), ['exec', 'refs.read'], 'asked exec, kill, spawn, refs.read: only what the lead holds');
    assert.deepEqual(wide.value.lease.refused.filter((x) => x.code === 'capability_denied').map((x) => x.what).sort(), ['kill', 'spawn']);
    for (const k of kids) {
      const l = await c.operator.leases.show(k.leaseId!);
      assert.ok(l.ok);
      for (const cap of l.value.lease.caps) assert.ok(leadCaps.includes(cap), `${k.id} holds ${cap}, which the lead does not`);
    }

    // 5. The ledger: graph.started carries the calling run.
    const started = ledgerOf(home).find((e) => e.type === 'graph.started' && e.graphId === meta.graphId);
    assert.equal(started?.runId, lead.id);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

/** A command run that forges a graph.run call on its own broker socket with its own bearer. */
const FORGE = `const net=require('net'),fs=require('fs');
const tok=fs.readFileSync('/workspace/.brig/token','utf8').trim();
const s=net.connect('/run/brig/broker.sock',()=>s.write(JSON.stringify({v:1,id:1,method:'graph.run',token:tok,params:{spec:'graph: brig/v1'}})+'\\n'));
let b='';s.on('data',(d)=>{b+=d;if(b.includes('\\n')){console.log('REPLY '+b.split('\\n')[0]);s.end();}});`;

// req: lease:enforced lease:tool-surface-binds
test('[INV-1] without `graph`: a lead is not offered graph_run, and a forged graph.run call on the broker is refused capability_denied', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const m = await startModelServer({ script: () => toolCallTurn('finish', { answer: 'nothing to run' }) });
  t.after(() => m.close());
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '32000' }), { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    // The researcher profile does not grant `graph` (only root and coordinator do).
    const r = await c.supervisor.spawn({ task: 'LEAD: no graphs', kind: 'agent', agent: 'coordinator', profile: 'researcher', timeout: 120_000 });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    assert.equal(r.value.endReason, 'completed', r.value.stderrTail);
    const tools = offered(m.requests[0]!);
    assert.ok(tools.includes('spawn') && tools.includes('ref_sql'), `offered: ${tools.join(', ')}`);
    assert.ok(!tools.includes('graph_run'), 'no graph in the lease: no graph_run');

    const f = await c.supervisor.spawn({ task: 'forge', kind: 'command', argv: ['node', '-e', FORGE], caps: ['exec', 'spawn'], timeout: 60_000 });
    assert.ok(f.ok, JSON.stringify(!f.ok && f.error));
    const line = f.value.stdoutTail.split('\n').find((l) => l.startsWith('REPLY '));
    assert.ok(line, f.value.stdoutTail + f.value.stderrTail);
    const reply = JSON.parse(line.slice('REPLY '.length)) as { ok: boolean; error?: { code: string } };
    assert.equal(reply.ok, false);
    assert.equal(reply.error?.code, 'capability_denied');
    assert.equal((await c.graphs.list()).length, 0, 'no graph was made');
    const denied = ledgerOf(home).find((e) => e.type === 'broker.denied' && e.runId === f.value.id && e.method === 'graph.run');
    assert.equal(denied?.code, 'capability_denied');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

/** Two command nodes in parallel, each a few seconds long. */
const PAIR = `graph: brig/v1
label: lead-pair
concurrency: { max_parallel: 8 }
nodes:
  - id: a
    kind: command
    spawn: { task: a, argv: [sh, -c, "sleep 4; echo a > /workspace/out/a.txt"] }
  - id: b
    kind: command
    spawn: { task: b, argv: [sh, -c, "sleep 4; echo b > /workspace/out/b.txt"] }
`;

// req: lease:graph-nodes-within-caller
test('[INV-1] a lead starts a graph (graph_run, timeoutMs 0), polls and waits for it with graph_wait; the graph is one child of the lead: with maxChildren 2 both nodes and a plain child run at once', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  // The lead's conversation starts from its task; the plain child's from its own (SLEEPER).
  const isLead = (req: RecordedRequest) => JSON.stringify(msgs(req).slice(0, 2)).includes('LEAD: run the pair');
  const graphIdOf = (req: RecordedRequest) => /"graphId":\s*"(g-[a-z0-9]+)"/.exec(lastTool(req))?.[1] ?? 'g-missing0000';
  const m = await startModelServer({
    script: (req) => {
      if (!isLead(req)) return toolCallTurn('finish', { answer: 'slept' });
      switch (turnsOf(req)) {
        case 0:
          return toolCallTurn('graph_run', { spec: PAIR, timeoutMs: 0 });
        case 1:
          return toolCallTurn('spawn', { task: 'SLEEPER: finish at once', async: true });
        case 2: {
          const first = msgs(req).find((x) => x.role === 'tool');
          return toolCallTurn('graph_wait', { graphId: /"graphId":\s*"(g-[a-z0-9]+)"/.exec(String(first?.content))?.[1] ?? 'g-missing0000', timeoutMs: 0 });
        }
        case 3:
          return toolCallTurn('graph_wait', { graphId: graphIdOf(req), timeoutMs: 45_000 });
        default:
          return toolCallTurn('finish', { answer: 'graph done' });
      }
    },
  });
  t.after(() => m.close());
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '32000' }), { tickMs: 200, reconcile: true, settings: { maxChildrenPerAgent: 2 } });
  await c.supervisor.start();
  try {
    const r = await c.supervisor.spawn({ task: 'LEAD: run the pair', kind: 'agent', agent: 'coordinator', caps: ['llm', 'refs.read', 'graph', 'exec', 'spawn'], timeout: 300_000 });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    const lead = r.value;
    assert.equal(lead.endReason, 'completed', `${lead.error?.message} ${lead.stderrTail}`);
    assert.deepEqual(m.problems, []);
    const leadReqs = m.requests.filter(isLead);
    assert.ok(offered(leadReqs[0]!).includes('graph_wait'), `offered: ${offered(leadReqs[0]!).join(', ')}`);

    // graph_run with timeoutMs 0 answered at once: running, no envelope yet.
    const ran = JSON.parse(lastTool(leadReqs.find((q) => turnsOf(q) === 1)!)) as { graphId: string; state: string; envelope: string | null; order: string[] };
    assert.equal(ran.state, 'running');
    assert.equal(ran.envelope, undefined);
    assert.deepEqual([...ran.order].sort(), ['a', 'b']);
    // graph_wait with timeoutMs 0 looked without waiting: still running, the nodes counted.
    const polled = JSON.parse(lastTool(leadReqs.find((q) => turnsOf(q) === 3)!)) as { state: string; counts: Record<string, number>; running: string[] };
    assert.equal(polled.state, 'running', JSON.stringify(polled));
    assert.equal((polled.counts.running ?? 0) + (polled.counts.succeeded ?? 0), 2);
    // graph_wait waited for the end: the envelope, then the ids.
    const end = lastTool(leadReqs.find((q) => turnsOf(q) === 4)!);
    assert.match(end, /^\[Graph Result: lead-pair\] completed · 2 nodes \(2 succeeded\)/);
    assert.match(end, /"manifestRef":"ref_/);

    // One child of the lead: the graph holds one of its 2 slots, its nodes run as the graph's group.
    const g = await c.graphs.status(ran.graphId);
    assert.ok(g.ok);
    assert.equal(g.value.parallel, 2, 'min(max_parallel 8, the lead’s children cap 2)');
    const kids = await c.supervisor.list({ parentRunId: lead.id });
    const nodeRuns = g.value.nodes.map((n) => kids.find((k) => k.id === n.attempts[0]!.runId)!);
    const sleeper = kids.find((k) => !nodeRuns.includes(k))!;
    assert.equal(kids.length, 3, 'two node runs and the plain child');
    const at = (s: string | null) => Date.parse(s ?? '');
    const [na, nb] = nodeRuns as [typeof lead, typeof lead];
    assert.ok(at(na.startedAt) < at(nb.endedAt) && at(nb.startedAt) < at(na.endedAt), 'both nodes ran at once');
    assert.ok(at(sleeper.startedAt) < Math.min(at(na.endedAt), at(nb.endedAt)), `the plain child started while both nodes ran (the graph is one child, not two): ${sleeper.startedAt} vs ${na.endedAt}, ${nb.endedAt}`);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
