/**
 * Approval gates over the supervisor twin: only the service's decide (an operator face) ends
 * a gate — approved lets its dependents run, rejected fails it (fail_fast skips the rest), the
 * deadline rejects it (`timeout`), prevent_self refuses the submitter, a second decision is
 * refused, a cancel ends a waiting gate; each decision is an event with who and the note's
 * hash, never the note.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defineGraphText, GraphService, GraphStore, renderGraphExplain } from '../../../src/graphs/index.js';
import type { GraphEvent, GraphRecord, RunRecord, SpawnRequestInput } from '../../../src/protocol/index.js';
import { ok } from '../../../src/util/errors.js';
import { tempDir } from '../../helpers/temp-dir.js';

function service(dir = tempDir('brig-gate-')) {
  let n = 0;
  const spawned: string[] = [];
  const events: GraphEvent[] = [];
  const g = new GraphService({
    supervisor: {
      async spawn(req: SpawnRequestInput) {
        spawned.push(req.label!.split('/')[1]!);
        return ok({ id: `r-twin${String(++n).padStart(6, '0')}`, status: 'running' } as unknown as RunRecord);
      },
      wait: async (id: string) => ok({ id, status: 'ended', endReason: 'completed' } as unknown as RunRecord),
      kill: async () => ok({} as RunRecord),
      list: async () => [],
    },
    store: new GraphStore(dir),
    limits: { maxChildren: 5, maxDepth: 3, defaultTimeoutMs: 1000 },
    putManifest: async () => 'ref_m',
    summaryOf: async (runId: string) => `result of ${runId}`,
    onEvent: (e) => events.push(e),
  });
  return { g, spawned, events, dir };
}

const spec = (gate: Record<string, unknown> = {}, head: Record<string, unknown> = {}) =>
  JSON.stringify({
    graph: 'brig/v1',
    ...head,
    nodes: [
      { id: 'plan', kind: 'command', spawn: { task: 'plan', argv: ['true'] } },
      { id: 'go', kind: 'gate', depends_on: ['plan'], gate: { prompt: 'Ship it?', timeout_ms: 60_000, ...gate } },
      { id: 'ship', kind: 'command', depends_on: ['go'], spawn: { task: 'ship', argv: ['true'] } },
    ],
  });

async function waiting(g: GraphService, id: string): Promise<GraphRecord> {
  for (;;) {
    const s = await g.status(id);
    assert.ok(s.ok);
    if (s.value.nodes.find((n) => n.id === 'go')!.state === 'running') return s.value;
    await new Promise((r) => setTimeout(r, 5));
  }
}

test('a gate waits for an operator; approve lets its dependent run; the decision is ledgered with who and the note\'s hash only', async () => {
  const { g, spawned, events } = service();
  const s = await g.run(spec(), { by: 'alice' });
  assert.ok(s.ok);
  const rec = await waiting(g, s.value.graphId);
  const go = rec.nodes.find((n) => n.id === 'go')!;
  assert.ok(go.gate && go.gate.decision === null && Date.parse(go.gate.deadline) > Date.now());
  assert.deepEqual(spawned, ['plan'], 'nothing after the gate starts before the decision');
  const other = await g.decide(s.value.graphId, 'plan', { decision: 'approve', by: 'bob' });
  assert.ok(!other.ok && other.error.code === 'invalid_input', 'only a gate is decided');
  const d = await g.decide(s.value.graphId, 'go', { decision: 'approve', by: 'bob', note: 'the panel looked right' });
  assert.ok(d.ok, d.ok ? '' : d.error.message);
  const twice = await g.decide(s.value.graphId, 'go', { decision: 'reject', by: 'carol' });
  assert.ok(!twice.ok && twice.error.code === 'not_running', 'one decision');
  const w = await g.wait(s.value.graphId);
  assert.ok(w.ok);
  assert.equal(w.value.state, 'completed');
  assert.deepEqual(spawned, ['plan', 'ship']);
  const decided = events.find((e) => e.type === 'graph.gate_decided')!;
  assert.ok(decided.type === 'graph.gate_decided');
  assert.deepEqual({ ...decided, noteHash: null }, { type: 'graph.gate_decided', graphId: s.value.graphId, node: 'go', decision: 'approved', by: 'bob', noteHash: null });
  assert.equal(decided.noteHash, createHash('sha256').update('the panel looked right').digest('hex'));
  assert.ok(!JSON.stringify(events).includes('panel looked right'), 'the note is not in any event');
  assert.ok(!JSON.stringify(w.value).includes('panel looked right'), 'nor on the record');
  assert.match(w.value.envelope!, /^go\s+gate\s+succeeded\s+a1\s+.*approved by bob$/m);
});

test('reject fails the gate; under fail_fast what follows is skipped', async () => {
  const { g, spawned } = service();
  const s = await g.run(spec());
  assert.ok(s.ok);
  await waiting(g, s.value.graphId);
  assert.ok((await g.decide(s.value.graphId, 'go', { decision: 'reject', by: 'bob' })).ok);
  const w = await g.wait(s.value.graphId);
  assert.ok(w.ok);
  assert.deepEqual(w.value.nodes.map((n) => [n.id, n.state, n.skipReason]), [['plan', 'succeeded', null], ['go', 'failed', null], ['ship', 'skipped', 'fail_fast']]);
  assert.deepEqual(spawned, ['plan']);
});

test('past its deadline a gate is rejected by timeout', async () => {
  const { g } = service();
  const s = await g.run(spec({ timeout_ms: 30 }));
  assert.ok(s.ok);
  const w = await g.wait(s.value.graphId);
  assert.ok(w.ok);
  const go = w.value.nodes.find((n) => n.id === 'go')!;
  assert.deepEqual([go.state, go.gate!.decision, go.gate!.by, go.attempts[0]!.endReason], ['failed', 'rejected', 'timeout', 'gate_timeout']);
});

test('prevent_self: the submitter may not approve (another operator may); anyone may reject', async () => {
  const { g } = service();
  const s = await g.run(spec({ prevent_self: true }), { by: 'alice' });
  assert.ok(s.ok);
  await waiting(g, s.value.graphId);
  const self = await g.decide(s.value.graphId, 'go', { decision: 'approve', by: 'alice' });
  assert.ok(!self.ok && self.error.code === 'capability_denied');
  assert.ok((await g.decide(s.value.graphId, 'go', { decision: 'approve', by: 'bob' })).ok);
  const w = await g.wait(s.value.graphId);
  assert.ok(w.ok);
  assert.equal(w.value.state, 'completed');
});

test('approvers: only a listed name decides (approve or reject); the deadline rejects whoever is listed', async () => {
  const { g, events } = service();
  const s = await g.run(spec({ approvers: ['alice', 'bob'] }), { by: 'carol' });
  assert.ok(s.ok);
  await waiting(g, s.value.graphId);
  for (const decision of ['approve', 'reject'] as const) {
    const mallory = await g.decide(s.value.graphId, 'go', { decision, by: 'mallory' });
    assert.ok(!mallory.ok && mallory.error.code === 'capability_denied' && /decided only by its approvers \(alice, bob\); mallory is not one of them/.test(mallory.error.message), mallory.ok ? '' : mallory.error.message);
  }
  assert.equal((await g.status(s.value.graphId)).ok && events.filter((e) => e.type === 'graph.gate_decided').length, 0, 'a refused decision decides nothing');
  assert.ok((await g.decide(s.value.graphId, 'go', { decision: 'approve', by: 'bob' })).ok);
  const w = await g.wait(s.value.graphId);
  assert.ok(w.ok && w.value.state === 'completed');
  const timed = await g.run(spec({ approvers: ['alice'], timeout_ms: 30 }));
  assert.ok(timed.ok);
  const t = await g.wait(timed.value.graphId);
  assert.ok(t.ok);
  assert.deepEqual([t.value.nodes.find((n) => n.id === 'go')!.gate!.by, t.value.state], ['timeout', 'failed']);
});

test('a waiting gate explains itself to the person deciding: its prompt and what it shows (a run\'s result head), rendered by explain', async () => {
  const { g } = service();
  const s = await g.run(spec({ show: ['plan'] }));
  assert.ok(s.ok);
  await waiting(g, s.value.graphId);
  const x = await g.explain(s.value.graphId);
  assert.ok(x.ok);
  const go = x.value.nodes.find((n) => n.id === 'go')!;
  const plan = (await g.status(s.value.graphId)).ok ? x.value.nodes.find((n) => n.id === 'plan')!.attempts[0]!.runId : null;
  assert.equal(go.prompt, 'Ship it?');
  assert.deepEqual(go.shown, [{ node: 'plan', text: `result of ${plan}` }]);
  assert.equal(x.value.nodes.find((n) => n.id === 'ship')!.shown, undefined, 'only a gate shows');
  const text = renderGraphExplain(x.value);
  assert.match(text, /^ {2}prompt: Ship it\?$/m);
  assert.match(text, new RegExp(`^  shows plan: result of ${plan}$`, 'm'));
  await g.cancel(s.value.graphId, { confirm: true });
});

test('define refuses a gate showing a node it does not wait for, or one with no single result', () => {
  const bad = (nodes: unknown[]) => defineGraphText(JSON.stringify({ graph: 'brig/v1', nodes }));
  const a = { id: 'a', kind: 'command', spawn: { task: 't', argv: ['x'] } };
  const outside = bad([a, { id: 'b', kind: 'command', spawn: { task: 't', argv: ['x'] } }, { id: 'go', kind: 'gate', depends_on: ['a'], gate: { prompt: 'p', timeout_ms: 10, show: ['b'] } }]);
  assert.ok(!outside.ok && /node go: gate.show names b, which is not in its depends_on/.test(outside.error.message));
  const map = bad([{ id: 'm', kind: 'map', map: { over: { items: [1] }, item_kind: 'command' }, spawn: { task: 'x {{item}}', argv: ['x'] } }, { id: 'go', kind: 'gate', depends_on: ['m'], gate: { prompt: 'p', timeout_ms: 10, show: ['m'] } }]);
  assert.ok(!map.ok && /gate.show names m, a macro with several parts with no single result to show/.test(map.error.message), map.ok ? '' : map.error.message);
});

test('a cancel ends a waiting gate cancelled and the graph cancelled', async () => {
  const { g } = service();
  const s = await g.run(spec());
  assert.ok(s.ok);
  await waiting(g, s.value.graphId);
  assert.ok((await g.cancel(s.value.graphId, { confirm: true })).ok);
  const w = await g.wait(s.value.graphId);
  assert.ok(w.ok);
  assert.equal(w.value.state, 'cancelled');
  assert.deepEqual(w.value.nodes.map((n) => n.state), ['succeeded', 'cancelled', 'skipped']);
});

test('define refuses gates that cannot be: a spawn on a gate, an input from a gate, a timeout over 30 days, a retry', () => {
  const bad = (nodes: unknown[]) => defineGraphText(JSON.stringify({ graph: 'brig/v1', nodes }));
  const a = { id: 'a', kind: 'command', spawn: { task: 't', argv: ['x'] } };
  const cases: [unknown[], RegExp][] = [
    [[a, { id: 'go', kind: 'gate', depends_on: ['a'], spawn: { task: 't' }, gate: { prompt: 'p', timeout_ms: 10 } }], /a gate node runs nothing: it takes no spawn/],
    [[a, { id: 'go', kind: 'gate', depends_on: ['a'], gate: { prompt: 'p', timeout_ms: 10 } }, { id: 'b', kind: 'command', depends_on: ['go'], inputs: [{ from: 'go', as: 'g' }], spawn: { task: 't', argv: ['x'] } }], /a gate: it commits no out\//],
    [[{ id: 'go', kind: 'gate', gate: { prompt: 'p', timeout_ms: 31 * 24 * 3600_000 } }], /timeout_ms/],
    [[{ id: 'go', kind: 'gate', retry: { max: 1 }, gate: { prompt: 'p', timeout_ms: 10 } }], /a gate takes no retry/],
    [[{ id: 'go', kind: 'gate' }], /a gate node needs gate/],
  ];
  for (const [nodes, re] of cases) {
    const d = bad(nodes);
    assert.ok(!d.ok, JSON.stringify(nodes));
    assert.match(d.error.message, re);
  }
});

/** The record on disk once it shows the gate waiting (the in-memory state runs a save ahead). */
async function gateOnDisk(dir: string, id: string): Promise<GraphRecord> {
  for (;;) {
    const rec = await new GraphStore(dir).load(id);
    if (rec?.nodes[1]!.gate && rec.nodes[0]!.state === 'succeeded') return rec;
    await new Promise((r) => setTimeout(r, 5));
  }
}

test('on_restart resume: a waiting gate survives a restart with the deadline on its record; one that passed while no supervisor ran rejects at once', async () => {
  const first = service();
  const started = await first.g.run(spec({}, { on_restart: 'resume' }));
  assert.ok(started.ok);
  await waiting(first.g, started.value.graphId);
  const before = (await gateOnDisk(first.dir, started.value.graphId)).nodes[1]!.gate!.deadline;
  // The supervisor after a crash: a second service over the same store.
  const second = service(first.dir);
  assert.deepEqual(await second.g.recover(), [{ graphId: started.value.graphId, action: 'resumed' }]);
  assert.deepEqual(second.events[0], { type: 'graph.resumed', graphId: started.value.graphId, reattached: 0, lost: 0, respawned: 0, gates: 1 });
  const w = await waiting(second.g, started.value.graphId);
  assert.equal(w.nodes[1]!.gate!.deadline, before, 'the deadline is kept, never extended');
  const d = await second.g.decide(started.value.graphId, 'go', { decision: 'approve', by: 'bob' });
  assert.ok(d.ok, d.ok ? '' : d.error.message);
  const end = await second.g.wait(started.value.graphId);
  assert.ok(end.ok);
  assert.equal(end.value.state, 'completed');
  assert.deepEqual(second.spawned, ['ship'], 'plan did not run again');
  await first.g.cancel(started.value.graphId, { confirm: true }); // the dead supervisor's copy (its timer) goes

  // A deadline that passed while no supervisor ran: the gate is rejected by timeout at the resume.
  const third = service();
  const s2 = await third.g.run(spec({}, { on_restart: 'resume' }));
  assert.ok(s2.ok);
  await waiting(third.g, s2.value.graphId);
  const store = new GraphStore(third.dir);
  const rec = await gateOnDisk(third.dir, s2.value.graphId);
  // The dead supervisor's copy goes (its timer with it); the disk is left as the crash left it, the deadline past.
  await third.g.cancel(s2.value.graphId, { confirm: true });
  await third.g.wait(s2.value.graphId);
  rec.nodes[1]!.gate!.deadline = new Date(Date.now() - 1000).toISOString();
  await store.save(rec);
  const fourth = service(third.dir);
  await fourth.g.recover();
  const late = await fourth.g.wait(s2.value.graphId);
  assert.ok(late.ok);
  assert.deepEqual([late.value.nodes[1]!.state, late.value.nodes[1]!.gate!.decision, late.value.nodes[1]!.gate!.by, late.value.nodes[1]!.attempts[0]!.endReason], ['failed', 'rejected', 'timeout', 'gate_timeout']);
  assert.equal(late.value.state, 'failed');
});
