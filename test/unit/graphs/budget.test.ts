/**
 * Graph budgets without an engine: the pure reservation (a node's budget, else an equal share
 * of what is left; refused when it cannot fit; node runs counted), a property over random
 * spends (reservations held plus what ended attempts spent never exceed the budget when a
 * reservation is made), and the scheduler over a supervisor twin whose runs spend tokens: each
 * attempt's reservation is its spawn's token limit, settled at its end, and a reservation that
 * cannot be made stops the graph once with `budget_exhausted`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { budgetState, reserve } from '../../../src/graphs/budget.js';
import { explainGraph, GraphService, GraphStore, definitionOf, renderGraphExplain } from '../../../src/graphs/index.js';
import type { GraphAttempt, GraphNodeRecord, RunRecord, SpawnContext, SpawnRequestInput } from '../../../src/protocol/index.js';
import { ok } from '../../../src/util/errors.js';

const attempt = (p: Partial<GraphAttempt>): GraphAttempt => ({ n: 1, key: 'k', state: 'ended', runId: null, result: 'succeeded', endReason: null, errorCode: null, startedAt: '', endedAt: null, tokens: null, costUsd: null, ...p });
const rec = (kind: GraphNodeRecord['kind'], attempts: GraphAttempt[]): GraphNodeRecord => ({ id: 'x', kind, state: 'succeeded', skipReason: null, attempts, committedRunId: null });

test('reserve: a node budget or an equal share of what is left; refused when it cannot fit or the graph may start no more runs', () => {
  const none = budgetState([]);
  assert.deepEqual(reserve({ tokens: 1000 }, none, undefined, 4), { ok: true, reserved: { tokens: 250 } }, 'a share over the 4 run nodes not yet started');
  assert.deepEqual(reserve({ tokens: 1000 }, none, { tokens: 700 }, 4), { ok: true, reserved: { tokens: 700 } }, "the node's own budget");
  assert.deepEqual(reserve({}, none, { tokens: 70, cost_usd: 0.5 }, 1), { ok: true, reserved: { tokens: 70, costUsd: 0.5 } }, 'no graph budget: the node budget is its reservation');
  assert.deepEqual(reserve({}, none, undefined, 1), { ok: true, reserved: {} }, 'no budget at all: no reservation');
  // What ended attempts spent and open ones hold is not there to reserve.
  const used = budgetState([rec('agent', [attempt({ tokens: 600, costUsd: 0.2 }), attempt({ n: 2, state: 'running', result: null, reserved: { tokens: 300, costUsd: 0.3 } })]), rec('gate', [attempt({})])]);
  assert.deepEqual(used, { runs: 2, spent: { tokens: 600, costUsd: 0.2 }, reserved: { tokens: 300, costUsd: 0.3 } }, 'a gate is no run');
  assert.deepEqual(reserve({ tokens: 1000 }, used, undefined, 2), { ok: true, reserved: { tokens: 50 } });
  const over = reserve({ tokens: 1000 }, used, { tokens: 101 }, 1);
  assert.ok(!over.ok && /the node's 101 does not fit in the 100 left of budget.tokens 1000/.test(over.why), JSON.stringify(over));
  const cost = reserve({ cost_usd: 0.5 }, used, undefined, 1);
  assert.ok(!cost.ok && /cost: a share does not fit in the \$0\.0000 left/.test(cost.why), JSON.stringify(cost));
  const runs = reserve({ children: 2 }, used, undefined, 1);
  assert.ok(!runs.ok && /budget.children 2: 2 node runs started/.test(runs.why));
});

test('property: whatever the runs spend (within their reservation), the reservations held plus the spend never exceed the budget when a reservation is made', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 100_000 }),
      fc.array(fc.record({ own: fc.option(fc.integer({ min: 1, max: 50_000 }), { nil: undefined }), spendPct: fc.integer({ min: 0, max: 100 }), endFirst: fc.boolean() }), { minLength: 1, maxLength: 30 }),
      (limit, steps) => {
        const nodes: GraphNodeRecord[] = [];
        let waiting = steps.length;
        for (const s of steps) {
          const st = budgetState(nodes);
          const r = reserve({ tokens: limit }, st, s.own === undefined ? undefined : { tokens: s.own }, waiting);
          waiting--;
          if (!r.ok) continue;
          const t = r.reserved.tokens!;
          assert.ok(t >= 1);
          assert.ok(st.spent.tokens + st.reserved.tokens + t <= limit, 'never beyond the budget');
          // Open for a while, then (or at once) it ends, spending at most its reservation (the broker's bound).
          const a = attempt({ state: s.endFirst ? 'ended' : 'running', tokens: s.endFirst ? Math.floor((t * s.spendPct) / 100) : null, reserved: { tokens: t } });
          nodes.push(rec('agent', [a]));
          // An open one ends before the next step with what it spent.
          for (const n of nodes) for (const x of n.attempts) if (x.state !== 'ended' && !s.endFirst) Object.assign(x, { state: 'ended', tokens: Math.floor((x.reserved!.tokens! * s.spendPct) / 100) });
        }
        const end = budgetState(nodes);
        assert.ok(end.spent.tokens <= limit);
      },
    ),
    { numRuns: 500 },
  );
});

/** A supervisor twin whose runs spend tokens: each run spends `spend(node)` tokens, at most its token limit (as the broker bounds it). */
function twin(spend: (node: string) => number) {
  const reqs: { node: string; req: SpawnRequestInput }[] = [];
  const runs = new Map<string, RunRecord>();
  let n = 0;
  return {
    reqs,
    sup: {
      async spawn(req: SpawnRequestInput, _ctx: SpawnContext = {}) {
        const node = req.label!.split('/')[1]!;
        reqs.push({ node, req });
        const tokens = Math.min(spend(node), req.limits?.tokens ?? Infinity);
        const r = { id: `r-budget${String(++n).padStart(6, '0')}`, status: 'ended', endReason: spend(node) > (req.limits?.tokens ?? Infinity) ? 'failed' : 'completed', tokens, costUsd: null } as unknown as RunRecord;
        runs.set(r.id, r);
        return ok(r);
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

function service(t: { after: (fn: () => void) => void }, spend: (node: string) => number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-graphbudget-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const tw = twin(spend);
  const manifests = new Map<string, string>();
  const store = new GraphStore(dir);
  const g = new GraphService({ supervisor: tw.sup, store, limits: { maxChildren: 5, maxDepth: 3, defaultTimeoutMs: 60_000 }, putManifest: async (id, text) => (manifests.set(id, text), `ref_m_${id}`) });
  return { g, tw, manifests, store };
}

const agent = (id: string, extra: Record<string, unknown> = {}) => ({ id, kind: 'agent', spawn: { task: `do ${id}` }, ...extra });
const spec = (nodes: unknown[], budget: Record<string, unknown>) => JSON.stringify({ graph: 'brig/v1', budget, nodes });

test("each attempt's reservation is its run's token limit (the smaller of the spawn's and the reservation), settled at its end: the next share is of what is left", async (t) => {
  const { g, tw, manifests } = service(t, (node) => (node === 'c' ? 100 : 300));
  const s = await g.run(spec([agent('a'), agent('b', { depends_on: ['a'] }), agent('c', { depends_on: ['b'], spawn: { task: 'c', limits: { tokens: 100 } } })], { tokens: 3000 }));
  assert.ok(s.ok, s.ok ? '' : s.error.message);
  const done = await g.wait(s.value.graphId);
  assert.ok(done.ok);
  assert.equal(done.value.state, 'completed');
  // a: 3000 / 3 waiting; b: (3000 − 300 spent) / 2; c: its own spawn limit 100 is smaller than its share (2400).
  assert.deepEqual(tw.reqs.map((r) => [r.node, r.req.limits?.tokens]), [['a', 1000], ['b', 1350], ['c', 100]]);
  assert.deepEqual(done.value.nodes.map((n) => n.attempts[0]!.reserved), [{ tokens: 1000 }, { tokens: 1350 }, { tokens: 2400 }]);
  const rows = manifests.get(s.value.graphId)!.trim().split('\n').map((l) => JSON.parse(l) as { node: string; reserved_tokens: number; tokens: number });
  assert.deepEqual(rows.map((r) => [r.node, r.reserved_tokens, r.tokens]), [['a', 1000, 300], ['b', 1350, 300], ['c', 2400, 100]]);
});

test('a reservation that cannot be made stops the graph once: that node and every pending one skipped budget_exhausted, the graph failed (budget_exhausted); explain says which and why', async (t) => {
  const { g, tw, store } = service(t, (node) => (node === 'side' ? 200 : 700));
  const s = await g.run(spec([agent('a', { budget: { tokens: 800 } }), agent('b', { depends_on: ['a'], budget: { tokens: 800 } }), agent('c', { depends_on: ['b'] }), agent('side')], { tokens: 1500 }));
  assert.ok(s.ok, s.ok ? '' : s.error.message);
  const done = await g.wait(s.value.graphId);
  assert.ok(done.ok);
  const r = done.value;
  assert.equal(r.state, 'failed');
  assert.equal(r.endReason, 'budget_exhausted');
  const by = Object.fromEntries(r.nodes.map((n) => [n.id, `${n.state}${n.skipReason ? `:${n.skipReason}` : ''}`]));
  // a reserved 800 and spent 700; side (its share of the 700 left over b, c and itself: 233) spent 200 beside it; b wants 800 of the 600 left.
  assert.equal(by.a, 'succeeded');
  assert.equal(by.b, 'skipped:budget_exhausted');
  assert.equal(by.c, 'skipped:budget_exhausted');
  assert.deepEqual(tw.reqs.map((x) => x.node).sort(), ['a', 'side'], 'nothing started on credit');
  assert.equal(r.budgetStop?.node, 'b');
  assert.match(r.budgetStop!.why, /tokens: the node's 800 does not fit in the 600 left of budget.tokens 1500/);
  const def = await definitionOf(store, r.id);
  assert.ok(def.ok);
  const x = explainGraph(r, def.value);
  assert.match(x.nodes.find((n) => n.id === 'b')!.skipped!, /its reservation could not be made/);
  assert.match(x.nodes.find((n) => n.id === 'c')!.skipped!, /the graph stopped: b's reservation could not be made/);
  assert.match(renderGraphExplain(x), /budget: 900 of 1500 tokens · stopped at b:/);
});

test('budget.children counts every node run, retries included: a node that keeps failing stops the graph when the next attempt has no run left', async (t) => {
  const { g, tw } = service(t, (node) => (node === 'flaky' ? 10_000 : 0));
  const s = await g.run(spec([{ id: 'flaky', kind: 'command', spawn: { task: 't', argv: ['false'], limits: { tokens: 1 } }, retry: { max: 3, on: ['failed'] } }], { children: 2 }));
  assert.ok(s.ok, s.ok ? '' : s.error.message);
  const done = await g.wait(s.value.graphId);
  assert.ok(done.ok);
  assert.equal(tw.reqs.length, 2, 'two runs, not four');
  assert.equal(done.value.endReason, 'budget_exhausted');
  assert.equal(done.value.nodes[0]!.skipReason, 'budget_exhausted');
  assert.match(done.value.budgetStop!.why, /budget.children 2: 2 node runs started/);
});

test("the graph's wall budget at run time: once createdAt + wall_ms passes, running attempts are killed (by system), pending nodes skipped budget_exhausted, the graph ends once (budget_exhausted)", async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-graphwall-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  // A twin whose runs never end by themselves (a node stuck past the graph's wall).
  const runs = new Map<string, { rec: RunRecord; end: () => void; ended: Promise<void> }>();
  const kills: { id: string; by: string }[] = [];
  const sup = {
    async spawn() {
      let end!: () => void;
      const ended = new Promise<void>((r) => (end = r));
      const rec = { id: `r-wall${String(runs.size + 1).padStart(8, '0')}`, status: 'running', endReason: null, tokens: null, costUsd: null } as unknown as RunRecord;
      runs.set(rec.id, { rec, end, ended });
      return ok(rec);
    },
    async wait(id: string) {
      await runs.get(id)!.ended;
      return ok(runs.get(id)!.rec);
    },
    async kill(id: string, o: { by?: string } = {}) {
      kills.push({ id, by: o.by ?? '' });
      const r = runs.get(id)!;
      Object.assign(r.rec, { status: 'ended', endReason: 'killed' });
      r.end();
      return ok(r.rec);
    },
    async list() {
      return [...runs.values()].map((r) => r.rec);
    },
  };
  const g = new GraphService({ supervisor: sup, store: new GraphStore(dir), limits: { maxChildren: 5, maxDepth: 3, defaultTimeoutMs: 60_000 }, putManifest: async (id) => `ref_m_${id}` });
  const text = JSON.stringify({ graph: 'brig/v1', budget: { wall_ms: 400 }, nodes: [{ id: 'a', kind: 'command', spawn: { task: 't', argv: ['true'], timeout_ms: 300 } }, { id: 'b', kind: 'command', depends_on: ['a'], when: 'all_done', spawn: { task: 't', argv: ['true'], timeout_ms: 100 } }] });
  // Taken before the graph is made: its wall runs from its createdAt, which is no earlier.
  const t0 = Date.now();
  const s = await g.run(text);
  assert.ok(s.ok, s.ok ? '' : s.error.message);
  const done = await g.wait(s.value.graphId, { timeoutMs: 5_000 });
  assert.ok(done.ok);
  assert.ok(Date.now() - t0 >= 395, `not before the wall (${Date.now() - t0} ms)`);
  assert.equal(done.value.state, 'failed');
  assert.equal(done.value.endReason, 'budget_exhausted');
  assert.deepEqual(done.value.budgetStop, { node: null, why: 'budget.wall_ms 400 passed' });
  assert.deepEqual(kills.map((k) => k.by), ['system'], 'the running attempt killed by system, once');
  assert.deepEqual(done.value.nodes.map((n) => `${n.id}:${n.state}:${n.skipReason ?? ''}`), ['a:failed:', 'b:skipped:budget_exhausted'], 'b (when all_done) never started after the stop');
  assert.equal(runs.size, 1);
});
