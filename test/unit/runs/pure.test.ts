import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideAdmission, nextToStart } from '../../../src/runs/admission.js';
import { healthActions, retentionActions } from '../../../src/runs/health.js';
import { exitEnd } from '../../../src/runs/launch.js';
import { createRunRecord } from '../../../src/runs/record.js';
import { end, transition } from '../../../src/runs/state-machine.js';
import { runTimeoutMs, effectiveMaxSteps } from '../../../src/runs/timeouts.js';
import { ProgressFork, type Timers } from '../../../src/runs/progress-fork.js';
import { DEFAULT_SETTINGS, SpawnRequestSchema, type RunRecord, type RunStatus } from '../../../src/runs/types.js';

const T0 = new Date('2026-01-01T00:00:00Z');
let seq = 0;
function run(p: Partial<RunRecord> & { status?: RunStatus } = {}): RunRecord {
  const id = `r-test${String(seq++).padStart(6, '0')}`;
  const base = createRunRecord({
    id, parent: null, callerId: 'operator', agent: 'default', kind: 'script', label: null, task: `task ${id}`,
    requestHash: `h-${id}`, now: T0, timeoutMs: 1000, maxSteps: 10, async: true, expectedOutputs: [], resumeOf: null,
  });
  return { ...base, ...p };
}
const req = (p: Partial<Parameters<typeof decideAdmission>[1]> = {}) => ({
  depth: 1, parentRunId: null, rootRunId: null, callerId: 'operator', agent: 'default', requestHash: 'h-new', ...p,
});

test('admission: depth 4 is refused with depth_exceeded, limit and current value', () => {
  const d = decideAdmission([], req({ depth: 4 }), DEFAULT_SETTINGS);
  assert.equal(d.kind, 'refuse');
  if (d.kind !== 'refuse') return;
  assert.equal(d.error.code, 'depth_exceeded');
  assert.deepEqual(d.error.data, { limit: 3, current: 4 });
  assert.equal(decideAdmission([], req({ depth: 3 }), DEFAULT_SETTINGS).kind, 'admit');
});

test('admission: the 6th child of a parent is queued, queue bounded by maxQueued then queue_full', () => {
  const live = Array.from({ length: 5 }, () => run({ status: 'running' }));
  assert.deepEqual(decideAdmission(live, req(), DEFAULT_SETTINGS), { kind: 'queue', position: 1 });
  const queued = Array.from({ length: 10 }, () => run({ status: 'queued' }));
  const d = decideAdmission([...live, ...queued], req(), DEFAULT_SETTINGS);
  assert.equal(d.kind, 'refuse');
  if (d.kind === 'refuse') assert.equal(d.error.code, 'queue_full');
});

test('admission: a newcomer waits behind queued siblings even when a slot is free (FIFO)', () => {
  const live = [run({ status: 'running' }), run({ status: 'queued' })];
  assert.equal(decideAdmission(live, req(), DEFAULT_SETTINGS).kind, 'queue');
});

test('admission: the tree ceiling is keyed on the root run, whatever the caller', () => {
  const s = { ...DEFAULT_SETTINGS, maxRunsPerTree: 3 };
  const root = run({ status: 'running' });
  const tree = [root, run({ status: 'running', rootRunId: root.id, parentRunId: root.id }), run({ status: 'queued', rootRunId: root.id, parentRunId: 'r-other00' })];
  const d = decideAdmission(tree, req({ rootRunId: root.id, parentRunId: 'r-yetanother', callerId: 'x', depth: 2 }), s);
  assert.equal(d.kind, 'refuse');
  if (d.kind === 'refuse') assert.equal(d.error.code, 'tree_exceeded');
});

test('admission: an in-flight duplicate (same caller, agent, task) returns the existing run', () => {
  const r = run({ status: 'running' });
  assert.deepEqual(decideAdmission([r], req({ requestHash: r.requestHash! }), DEFAULT_SETTINGS), { kind: 'duplicate', runId: r.id });
  const ended = { ...r, status: 'ended' as const };
  assert.equal(decideAdmission([ended], req({ requestHash: r.requestHash! }), DEFAULT_SETTINGS).kind, 'admit');
});

test('nextToStart: oldest queued first, never over the per-parent cap', () => {
  const live = [
    ...Array.from({ length: 4 }, () => run({ status: 'running' })),
    run({ status: 'queued', createdAt: '2026-01-01T00:00:02Z' }),
    run({ status: 'queued', createdAt: '2026-01-01T00:00:01Z' }),
  ];
  assert.deepEqual(nextToStart(live, DEFAULT_SETTINGS), [live[5]!.id]);
});

// req: end:one-reason
test('[INV-8] state machine: exactly one end reason; a second end is refused', () => {
  let r = run();
  for (const s of ['starting', 'running', 'materializing'] as const) {
    const t = transition(r, s, T0);
    assert.ok(t.ok);
    if (t.ok) r = t.value;
  }
  const e1 = end(r, { reason: 'completed', now: T0 });
  assert.ok(e1.ok);
  if (!e1.ok) return;
  assert.equal(e1.value.endReason, 'completed');
  const e2 = end(e1.value, { reason: 'killed', killedBy: 'operator', now: T0 });
  assert.equal(e2.ok, false);
  if (!e2.ok) assert.equal(e2.error.code, 'not_running');
  assert.equal(transition(r, 'queued' as never, T0).ok, false);
  assert.equal(end(run(), { reason: 'killed', now: T0 }).ok, false, 'killed needs killedBy');
});

test('timeouts: min(max_steps × perStep, maxRun, requested, lease)', () => {
  assert.equal(runTimeoutMs(DEFAULT_SETTINGS, 5), 300_000);
  assert.equal(runTimeoutMs(DEFAULT_SETTINGS, 50), 600_000);
  assert.equal(runTimeoutMs(DEFAULT_SETTINGS, 50, 2000), 2000);
  assert.equal(runTimeoutMs(DEFAULT_SETTINGS, 50, 9_000_000, 1500), 1500);
  assert.equal(effectiveMaxSteps(DEFAULT_SETTINGS, 100, 20), 20);
});

test('health: watchdog, stuck-kill by health_monitor, ghost sweep past grace, queue timeout', () => {
  const s = { ...DEFAULT_SETTINGS, stuckKillThresholdMs: 500, ghostGraceMs: 1000, queueTimeoutMs: 100 };
  const started = T0.toISOString();
  const wd = run({ status: 'running', startedAt: started, lastProgressAt: started, timeoutMs: 1000 });
  const stuck = run({ status: 'running', startedAt: started, timeoutMs: 10_000 });
  const ghost = run({ status: 'running', startedAt: started, timeoutMs: 100 });
  const q = run({ status: 'queued' });
  const fresh = run({ status: 'running', startedAt: new Date(T0.getTime() + 1000).toISOString(), timeoutMs: 10_000 });
  const acts = healthActions([wd, stuck, ghost, q, fresh], new Date(T0.getTime() + 1100), s);
  const by = new Map(acts.map((a) => [a.runId, a]));
  assert.equal(by.get(wd.id)?.reason, 'watchdog_timeout');
  assert.deepEqual(by.get(stuck.id), { runId: stuck.id, reason: 'killed', killedBy: 'health_monitor' });
  assert.equal(by.get(ghost.id)?.reason, 'ghost_sweep');
  assert.equal(by.get(q.id)?.code, 'queue_timeout');
  assert.equal(by.has(fresh.id), false);
});

test('health: a parent waiting on its child is not stuck; its last sign of life is its children\'s too', () => {
  const s = { ...DEFAULT_SETTINGS, stuckKillThresholdMs: 500 };
  const started = T0.toISOString();
  const at = (ms: number) => new Date(T0.getTime() + ms).toISOString();
  const waiting = run({ status: 'running', startedAt: started, lastProgressAt: started, timeoutMs: 10_000 });
  const child = run({ status: 'running', parentRunId: waiting.id, startedAt: at(100), lastProgressAt: at(100), timeoutMs: 10_000 });
  const justDone = run({ status: 'running', startedAt: started, lastProgressAt: started, timeoutMs: 10_000 });
  const endedChild = run({ status: 'ended', parentRunId: justDone.id, startedAt: at(100), endedAt: at(900), endReason: 'completed' });
  const lonely = run({ status: 'running', startedAt: started, lastProgressAt: started, timeoutMs: 10_000 });
  const now = new Date(T0.getTime() + 1000);
  const acts = healthActions([waiting, child, justDone, lonely], now, s, [waiting, child, justDone, endedChild, lonely]);
  const by = new Map(acts.map((a) => [a.runId, a]));
  assert.equal(by.has(waiting.id), false, 'blocked in spawn() on a live child');
  assert.equal(by.get(child.id)?.killedBy, 'health_monitor', 'the silent child itself is stuck');
  assert.equal(by.has(justDone.id), false, 'its child ended 100 ms ago');
  assert.equal(by.get(lonely.id)?.killedBy, 'health_monitor');
  // Without the ended runs the decision is the same for live children.
  assert.equal(new Map(healthActions([waiting, child], now, s).map((a) => [a.runId, a])).has(waiting.id), false);
});

test('retention: ended runs past resultRetentionMs lose their results; ancient live runs end swept', () => {
  const old = run({ status: 'ended', endedAt: T0.toISOString(), endReason: 'completed' });
  const young = run({ status: 'ended', endedAt: new Date(T0.getTime() + 10).toISOString(), endReason: 'completed' });
  const stale = run({ status: 'materializing' });
  const r = retentionActions([old, young, stale], new Date(T0.getTime() + DEFAULT_SETTINGS.resultRetentionMs), DEFAULT_SETTINGS);
  assert.deepEqual(r.removeResults, [old.id]);
  assert.deepEqual(r.endSwept, [stale.id]);
});

test('progress fork: one timer per run, cleared at end, never outliving it', () => {
  const live = new Map<number, () => void>();
  let n = 0;
  const timers: Timers = { setInterval: (fn) => (live.set(++n, fn), n), clearInterval: (h) => live.delete(h as number) };
  const f = new ProgressFork(timers);
  let ticks = 0;
  f.start('r-a', 30_000, () => ticks++);
  f.start('r-a', 30_000, () => ticks++); // restart replaces, never doubles
  assert.equal(live.size, 1);
  for (const fn of live.values()) fn();
  assert.equal(ticks, 1);
  f.stop('r-a');
  assert.equal(live.size, 0);
  assert.equal(f.has('r-a'), false);
});

test('SpawnRequest: one schema; kind needs its payload; unknown keys refused; defaults', () => {
  const r = SpawnRequestSchema.parse({ task: 't', script: 'export default async () => 1' });
  assert.equal(r.kind, 'script');
  assert.equal(r.include_parent_history, 'none');
  assert.equal(r.async, false);
  assert.equal(SpawnRequestSchema.safeParse({ task: 't', kind: 'command' }).success, false);
  assert.equal(SpawnRequestSchema.safeParse({ task: 't', script: 'x', nope: 1 }).success, false);
  assert.equal(SpawnRequestSchema.safeParse({ task: 't', kind: 'agent' }).success, true, 'kind agent runs the general spec by default');
  assert.equal(SpawnRequestSchema.safeParse({ task: 't', kind: 'agent', script: 'x' }).success, false);
  assert.equal(SpawnRequestSchema.safeParse({ task: 't', kind: 'script', script: 'x', model: 'm' }).success, false, 'only agents take a model');
  assert.equal(SpawnRequestSchema.safeParse({ task: 't', script: 'x', parent_summary: 's' }).success, false);
});

// req: events:ledger-no-content
test('[INV-7] SpawnRequest: a run\'s name is a name, not text (it is ledgered and on every event)', () => {
  for (const good of ['default', 'general', 'shard-3', 'etl.v2', 'A_b']) assert.equal(SpawnRequestSchema.safeParse({ task: 't', script: 'x', agent: good }).success, true, good);
  for (const bad of ['x y', 'leak: the secret plan', 'a\nb', '-flag', '', 'é', 'a'.repeat(129), '<script>']) {
    assert.equal(SpawnRequestSchema.safeParse({ task: 't', kind: 'command', argv: ['true'], agent: bad }).success, false, JSON.stringify(bad));
  }
});

// req: lease:enforced
test('[INV-1] admission: a parent lease of maxChildren 0 refuses children; maxChildren 2 queues the third', () => {
  const none = run({ status: 'running', childCap: 0 });
  const d = decideAdmission([none], req({ depth: 2, parentRunId: none.id, rootRunId: none.id }), DEFAULT_SETTINGS);
  assert.equal(d.kind, 'refuse');
  if (d.kind === 'refuse') assert.equal(d.error.code, 'children_exceeded');

  const two = run({ status: 'running', childCap: 2 });
  const kids = [1, 2].map(() => run({ status: 'running', parentRunId: two.id, rootRunId: two.id }));
  assert.equal(decideAdmission([two, kids[0]!], req({ depth: 2, parentRunId: two.id, rootRunId: two.id }), DEFAULT_SETTINGS).kind, 'admit');
  assert.deepEqual(decideAdmission([two, ...kids], req({ depth: 2, parentRunId: two.id, rootRunId: two.id }), DEFAULT_SETTINGS), { kind: 'queue', position: 1 });
  // A queued third child does not start while two are active, whatever maxChildrenPerAgent says.
  const third = run({ status: 'queued', parentRunId: two.id, rootRunId: two.id });
  assert.deepEqual(nextToStart([two, ...kids, third], DEFAULT_SETTINGS), []);
  assert.deepEqual(nextToStart([two, kids[0]!, third], DEFAULT_SETTINGS), [third.id]);
});

test('a history page is read in one streamed pass: the same lines and total as reading the whole file, chunk boundaries and empty lines included', async () => {
  const { pageOfLines } = await import('../../../src/runs/sessions.js');
  const fsp = await import('node:fs/promises');
  const os = await import('node:os');
  const pathM = await import('node:path');
  const dir = await fsp.mkdtemp(pathM.join(os.tmpdir(), 'brig-page-'));
  const file = pathM.join(dir, 'transcript.jsonl');
  // ~3.5 MiB of lines of many sizes, multi-byte characters, empty lines between some.
  const lines: string[] = [];
  for (let i = 0; i < 1200; i++) lines.push(JSON.stringify({ i, text: '€ä'.repeat((i * 7919) % 2000) }), ...(i % 13 === 0 ? [''] : []));
  await fsp.writeFile(file, `${lines.join('\n')}\n\n`);
  const whole = lines.filter(Boolean);
  for (const [offset, limit] of [[0, 20], [577, 20], [1190, 20], [1200, 5], [5000, 3]] as const) {
    const page = await pageOfLines(file, offset, limit);
    assert.equal(page.total, whole.length);
    assert.deepEqual(page.lines, whole.slice(offset, offset + limit), `offset ${offset}`);
  }
  await fsp.rm(dir, { recursive: true, force: true });
});

test('exitEnd: a child\'s own exit as an end — exit 0 completes, anything else fails; the engine\'s OOM word is data on the end', () => {
  assert.deepEqual(exitEnd({ exitCode: 0, oomKilled: false }), { reason: 'completed', exitCode: 0 });
  assert.deepEqual(exitEnd({ exitCode: 3, oomKilled: false }), { reason: 'failed', exitCode: 3, error: { code: 'child_failed', message: 'the child exited with code 3' } });
  assert.deepEqual(exitEnd({ exitCode: 137, oomKilled: true }), { reason: 'failed', exitCode: 137, oomKilled: true, error: { code: 'child_failed', message: 'the child ran out of memory' } });
  // A process of the jail OOM-killed while the child still exited 0: said, and the run still completes.
  assert.deepEqual(exitEnd({ exitCode: 0, oomKilled: true }), { reason: 'completed', exitCode: 0, oomKilled: true });
});

// req: lease:graph-nodes-within-caller
test('[INV-1] admission: a graph is one child of its caller — its nodes share the graph\'s slot, not the caller\'s children one by one; a graph holds one of the caller\'s slots while it runs', () => {
  const s = { ...DEFAULT_SETTINGS, maxChildrenPerAgent: 3, maxConcurrent: 50 };
  const lead = run({ status: 'running', depth: 1 });
  const G = 'g-abcdefgh1234';
  const node = (n: string) => run({ status: 'running', parentRunId: lead.id, rootRunId: lead.id, depth: 2, callerId: `graph:${G}:${n}:1` });
  const child = () => run({ status: 'running', parentRunId: lead.id, rootRunId: lead.id, depth: 2, callerId: lead.id });
  const held = new Map([[lead.id, 1]]);
  // The lead has one plain child and runs a graph (holding one slot): 2 of its 3 slots.
  const live = [lead, child(), node('a'), node('b')];
  // A third node of the graph is admitted: its siblings are the graph's nodes (2 < 3), not the lead's 3 children.
  const n3 = decideAdmission(live, req({ depth: 2, parentRunId: lead.id, rootRunId: lead.id, callerId: `graph:${G}:c:1` }), s, new Set(), null, held);
  assert.equal(n3.kind, 'admit');
  // A plain child of the lead: 1 child + 1 graph = 2 < 3 → admitted, whatever the graph's nodes.
  const c2 = decideAdmission(live, req({ depth: 2, parentRunId: lead.id, rootRunId: lead.id, callerId: lead.id }), s, new Set(), null, held);
  assert.equal(c2.kind, 'admit');
  // With two plain children and the graph the lead is full: the next plain child waits.
  const full = decideAdmission([...live, child()], req({ depth: 2, parentRunId: lead.id, rootRunId: lead.id, callerId: lead.id }), s, new Set(), null, held);
  assert.equal(full.kind, 'queue');
  // The graph's own nodes are bounded by the caller's cap too (the scheduler's parallel is ≤ it): the 4th waits.
  const n4 = decideAdmission([...live, node('c')], req({ depth: 2, parentRunId: lead.id, rootRunId: lead.id, callerId: `graph:${G}:d:1` }), s, new Set(), null, held);
  assert.equal(n4.kind, 'queue');
  // The queue: a queued plain child starts when the lead has a slot, counting the graph as one.
  const q = run({ status: 'queued', parentRunId: lead.id, rootRunId: lead.id, depth: 2, callerId: lead.id });
  assert.deepEqual(nextToStart([...live, q], s, new Set(), held), [q.id]);
  assert.deepEqual(nextToStart([...live, child(), q], s, new Set(), held), []);
  const qn = run({ status: 'queued', parentRunId: lead.id, rootRunId: lead.id, depth: 2, callerId: `graph:${G}:e:1` });
  assert.deepEqual(nextToStart([...live, child(), child(), qn], s, new Set(), held), [qn.id], 'a node waits only for its graph\'s own slots');
});
