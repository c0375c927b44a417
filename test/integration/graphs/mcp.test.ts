/**
 * The graph tools of the MCP face on a real supervisor and real jails, through the SDK's real
 * Client: graph_define answers the expanded nodes (a map's slots), a refusal comes back as a
 * tool result with its line, graph_run answers at once, graph_wait returns the one envelope
 * and the manifest ref, which ref_jq drills into; no tool decides a gate.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createMcpServer } from '../../../src/mcp/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, supervisorAt } from '../runs/fixture.js';

const SPEC = JSON.stringify({
  graph: 'brig/v1',
  label: 'mcp-map',
  nodes: [
    { id: 'shout', kind: 'map', map: { over: { items: ['a', 'b'] }, item_kind: 'command' }, spawn: { task: 'shout {{item}}', argv: ['sh', '-c', 'tr a-z A-Z < /workspace/.brig/packet.json | grep -o "SHOUT [^,]*" > /workspace/out/said.txt'] } },
  ],
});

test('graph tools over MCP on real jails: define answers the expanded nodes, a refusal is a tool result, run answers at once, wait returns the envelope and the manifest ref', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  const server = createMcpServer(c.brig, { version: '0.0.0-test' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'graph-test', version: '1' });
  await Promise.all([server.connect(a), client.connect(b)]);
  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 })) as CallToolResult & { structuredContent: Record<string, unknown> };
  try {
    const names = (await client.listTools()).tools.map((x) => x.name);
    assert.ok(['graph_define', 'graph_run', 'graph_status', 'graph_wait', 'graph_explain', 'graph_cancel'].every((n) => names.includes(n)));
    assert.ok(!names.some((n) => /approve|decide|reject/.test(n)), 'no tool decides a gate');
    const d = await call('graph_define', { spec: SPEC });
    assert.ok(!d.isError);
    assert.deepEqual(d.structuredContent.order, ['shout.items', 'shout.0', 'shout.1', 'shout']);
    const bad = await call('graph_define', { spec: SPEC.replace('"item_kind":"command"', '"item_kind":"command","max_items":1') });
    assert.equal(bad.isError, true);
    assert.match((bad.structuredContent.error as { message: string }).message, /node shout: map lists 2 items; max_items is 1/);
    const r = await call('graph_run', { spec: SPEC });
    assert.ok(!r.isError, JSON.stringify(r.structuredContent));
    const graphId = r.structuredContent.graphId as string;
    let w: CallToolResult & { structuredContent: Record<string, unknown> };
    for (let i = 0; ; i++) {
      w = await call('graph_wait', { graphId, timeoutMs: 20_000 });
      if (w.structuredContent.timedOut === false || i > 15) break;
    }
    assert.equal(w.structuredContent.state, 'completed', JSON.stringify(w.structuredContent.nodes));
    assert.match(String(w.structuredContent.envelope), /^\[Graph Result: mcp-map\] completed/);
    const manifest = w.structuredContent.manifestRef as string;
    const rows = await call('ref_jq', { ref: manifest, filter: 'select(.kind == "command") | .state' });
    assert.ok(!rows.isError, JSON.stringify(rows.structuredContent));
    assert.deepEqual(String(rows.structuredContent.text).trim().split('\n'), ['"succeeded"', '"succeeded"']);
    const st = await call('graph_status', { graphId });
    assert.deepEqual((st.structuredContent.nodes as { id: string; state: string }[]).map((n) => `${n.id}:${n.state}`), ['shout.items:succeeded', 'shout.0:succeeded', 'shout.1:succeeded', 'shout:succeeded']);
    // graph_explain: the operator's view over MCP, the same structure as `brig graph explain --json`
    const x = await call('graph_explain', { graphId });
    assert.ok(!x.isError, JSON.stringify(x.structuredContent));
    const xs = x.structuredContent as { state: string; nodes: { id: string; dependsOn: string[]; attempts: { why: string; runId: string | null; lease: { caps: string[] } | null }[] }[] };
    assert.equal(xs.state, 'completed');
    const slot = xs.nodes.find((n) => n.id === 'shout.0')!;
    assert.deepEqual(slot.dependsOn, ['shout.items']);
    assert.equal(slot.attempts[0]!.why, 'first');
    assert.match(String(slot.attempts[0]!.runId), /^r-/);
    assert.ok(slot.attempts[0]!.lease?.caps.includes('exec'), 'each attempt shows the lease its run got');
    assert.match(String((x.content as { text: string }[])[0]!.text), /shout\.0  command \(of shout\)  succeeded\n  depends on shout\.items/);
    const none = await call('graph_explain', { graphId: 'g-nosuchgraph00' });
    assert.equal((none.structuredContent.error as { code: string }).code, 'graph_not_found');
    const gone = await call('graph_cancel', { graphId, confirm: true });
    assert.equal(gone.isError, true, 'an ended graph is not_running');
    assert.equal((gone.structuredContent.error as { code: string }).code, 'not_running');
    assert.deepEqual(await leftovers(home, { released: true }), []);
  } finally {
    await client.close();
    await server.close();
    await c.close();
  }
});

const GATED = (preventSelf: boolean) =>
  JSON.stringify({
    graph: 'brig/v1',
    label: 'mcp-gate',
    nodes: [
      { id: 'a', kind: 'command', spawn: { task: 'a', argv: ['sh', '-c', 'echo a > /workspace/out/a.txt'] } },
      { id: 'go', kind: 'gate', depends_on: ['a'], gate: { prompt: 'ship?', timeout_ms: 600_000, prevent_self: preventSelf } },
      { id: 'b', kind: 'command', depends_on: ['go'], spawn: { task: 'b', argv: ['true'] } },
    ],
  });

test('gate decisions over MCP only when the operator turns them on: graph_decide approves (by mcp, the note as its hash); prevent_self refuses it on a graph MCP submitted', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  const connect = async (gateDecisions: boolean) => {
    const server = createMcpServer(c.brig, { version: '0.0.0-test', gateDecisions });
    const [a, b] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'gate-test', version: '1' });
    await Promise.all([server.connect(a), client.connect(b)]);
    const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 })) as CallToolResult & { structuredContent: Record<string, unknown> };
    return { call, names: (await client.listTools()).tools.map((x) => x.name), close: async () => (await client.close(), await server.close()) };
  };
  const off = await connect(false);
  const on = await connect(true);
  const gateWaits = async (graphId: string) => {
    for (let i = 0; i < 300; i++) {
      const s = await c.graphs.status(graphId);
      if (s.ok && s.value.nodes.find((n) => n.id === 'go')!.state === 'running') return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the gate never waited');
  };
  try {
    assert.ok(!off.names.includes('graph_decide'), 'off by default');
    assert.ok(on.names.includes('graph_decide'));
    // An operator's graph: MCP may decide it once turned on.
    const s = await c.graphs.run(GATED(true), { by: 'alice' });
    assert.ok(s.ok);
    await gateWaits(s.value.graphId);
    const d = await on.call('graph_decide', { graphId: s.value.graphId, node: 'go', decision: 'approve', note: 'the count is fine' });
    assert.ok(!d.isError, JSON.stringify(d.structuredContent));
    const w = await c.graphs.wait(s.value.graphId, { timeoutMs: 60_000 });
    assert.ok(w.ok);
    assert.equal(w.value.state, 'completed');
    const gate = w.value.nodes.find((n) => n.id === 'go')!.gate!;
    assert.deepEqual([gate.decision, gate.by], ['approved', 'mcp']);
    assert.match(String(gate.noteHash), /^[0-9a-f]{64}$/);
    // A graph MCP submitted, with prevent_self: MCP may not approve its own.
    const mine = await on.call('graph_run', { spec: GATED(true) });
    const mineId = mine.structuredContent.graphId as string;
    await gateWaits(mineId);
    const self = await on.call('graph_decide', { graphId: mineId, node: 'go', decision: 'approve' });
    assert.equal(self.isError, true);
    assert.equal((self.structuredContent.error as { code: string }).code, 'capability_denied');
    const rej = await on.call('graph_decide', { graphId: mineId, node: 'go', decision: 'reject' });
    assert.ok(!rej.isError, 'rejecting is not approving');
    const w2 = await c.graphs.wait(mineId, { timeoutMs: 60_000 });
    assert.ok(w2.ok);
    assert.equal(w2.value.state, 'failed');
  } finally {
    await off.close();
    await on.close();
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
