/**
 * Graph budgets on real jails, with a scripted model server on host loopback (a stand-in, not a
 * real model): each agent node's attempt reserves its budget out of the graph's before it
 * starts, and that reservation is its run's token limit (its lease's budget, which the broker
 * enforces); what it spent is settled at its end; the next node's reservation does not fit in
 * what is left, so the graph stops once — that node skipped `budget_exhausted`, never started,
 * the graph failed `budget_exhausted` — and the manifest rows carry each reservation.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, toolCallTurn } from '../../helpers/model-server.js';
import { freshHome, leftovers } from '../runs/fixture.js';

const SPEC = `graph: brig/v1
label: budgeted
budget: { tokens: 6000 }
nodes:
  - id: a
    kind: agent
    budget: { tokens: 4000 }
    spawn: { task: "NODE a: answer" }
  - id: b
    kind: agent
    depends_on: [a]
    budget: { tokens: 4000 }
    spawn: { task: "NODE b: answer" }
`;

test('a graph budget on real jails: the reservation is the node run\'s token limit, settled at its end; the next reservation that does not fit stops the graph once (budget_exhausted)', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  // Every call finishes at once and reports 3000 tokens spent.
  const m = await startModelServer({ script: () => toolCallTurn('finish', { answer: 'done' }, { usage: { input: 2500, output: 500 } }) });
  t.after(() => m.close());
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '32000' }), { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const s = await c.graphs.run(SPEC);
    assert.ok(s.ok, s.ok ? '' : s.error.message);
    const w = await c.graphs.wait(s.value.graphId, { timeoutMs: 120_000 });
    assert.ok(w.ok);
    const g = w.value;
    const a = g.nodes.find((n) => n.id === 'a')!;
    const b = g.nodes.find((n) => n.id === 'b')!;
    assert.equal(a.state, 'succeeded', JSON.stringify(a.attempts));
    assert.deepEqual(a.attempts[0]!.reserved, { tokens: 4000 });
    assert.equal(a.attempts[0]!.tokens, 3000, 'settled with what its run spent');
    // The reservation is the run's own budget: its lease's token limit, what the broker enforces.
    const run = await c.supervisor.get(a.attempts[0]!.runId!);
    assert.equal(run?.budget?.tokens, 4000);
    const lease = await c.operator.leases.show(run!.leaseId!);
    assert.ok(lease.ok);
    assert.equal(lease.value.lease.limits.tokens, 4000);
    // b wants 4000 of the 3000 left: it never starts, the graph stops once.
    assert.equal(b.state, 'skipped');
    assert.equal(b.skipReason, 'budget_exhausted');
    assert.equal(b.attempts.length, 0);
    assert.equal(g.state, 'failed');
    assert.equal(g.endReason, 'budget_exhausted');
    assert.match(g.budgetStop?.why ?? '', /the node's 4000 does not fit in the 3000 left of budget.tokens 6000/);
    assert.match(g.envelope ?? '', /^\[Graph Result: budgeted\] failed \(budget_exhausted\)/);
    assert.equal((await c.supervisor.list({})).length, 1, 'one run: b was never spawned');
    const manifest = await c.brig.refs.read(g.manifestRef!, { offset: 0 });
    assert.ok(manifest.ok);
    const rows = (manifest.value.text ?? '').trim().split('\n').map((l) => JSON.parse(l) as { node: string; reserved_tokens: number | null; tokens: number | null; end_reason: string | null });
    assert.deepEqual(rows.map((r) => [r.node, r.reserved_tokens ?? null, r.tokens, r.end_reason]), [['a', 4000, 3000, 'completed'], ['b', null, null, 'budget_exhausted']]);
    const ended = fs.readdirSync(`${home}/ledger`).flatMap((f) => fs.readFileSync(`${home}/ledger/${f}`, 'utf8').split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.type === 'graph.ended' && e.graphId === g.id);
    assert.deepEqual(ended.map((e) => e.endReason), ['budget_exhausted'], 'one end, one reason');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
