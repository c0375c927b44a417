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
    assert.deepEqual(await leftovers(home), []);
  } finally {
    await client.close();
    await server.close();
    await c.close();
  }
});
