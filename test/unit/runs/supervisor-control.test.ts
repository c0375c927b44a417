import { childCall } from '../../helpers/child-call.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RunStore } from '../../../src/runs/run-store.js';
import { RunTable } from '../../../src/runs/run-table.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { ManualClock } from '../../helpers/fakes/manual-time.js';
import { MemoryLeases } from '../../helpers/fakes/memory-leases.js';
import { SCRIPT, setupSup, until } from './setup.js';

test('the step past max_steps is refused with `timeout` and the run ends failed; its jail is stopped before its out/ is read', async () => {
  // A configured default of 2 is the cap (and the floor: it never passes the cap).
  const { sup, jail } = await setupSup({ settings: { defaultMaxSteps: 2 } });
  const r = await sup.spawn({ task: 'steps', script: SCRIPT, async: true, max_steps: 2 });
  assert.ok(r.ok);
  await until(() => sup.peek(r.value.id)?.status === 'running', 'running');
  const fake = jail.jails.get(r.value.id)!;
  await childCall(sup, r.value.id, 'progress', {});
  await childCall(sup, r.value.id, 'progress', {});
  const third = (await childCall(sup, r.value.id, 'progress', {}).catch((e: unknown) => e)) as { code: string };
  assert.equal(third.code, 'timeout');
  const w = await sup.wait(r.value.id);
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'failed');
  assert.equal(w.value.error?.code, 'timeout');
  assert.equal(fake.killed, true, 'the child that ignored the refusal was stopped');
  assert.equal(fake.collectedRunning, false, 'nothing was collected while it could still write');
  await sup.idle(); // the release follows the envelope (issue 26)
  assert.ok(jail.jails.get(r.value.id) === undefined, 'container destroyed');
  await sup.close();
});

test('a parent kills and steers only its own children over the broker; identity comes from the caller', async () => {
  const { sup, jail } = await setupSup();
  const p = await sup.spawn({ task: 'parent', script: SCRIPT, async: true });
  const other = await sup.spawn({ task: 'stranger', script: SCRIPT, async: true });
  assert.ok(p.ok && other.ok);
  await until(() => sup.peek(p.value.id)?.status === 'running', 'parent running');
  const kid = (await childCall(sup, p.value.id, 'spawn', { request: { task: 'kid', script: SCRIPT, async: true } })) as { runId: string };
  await until(() => sup.peek(kid.runId)?.status === 'running', 'kid running');
  const s = (await childCall(sup, p.value.id, 'child.steer', { child: kid.runId, message: 'faster' })) as { mode: string };
  assert.equal(s.mode, 'inject');
  const stranger = (await childCall(sup, p.value.id, 'child.kill', { child: other.value.id }).catch((e: unknown) => e)) as { code: string };
  assert.equal(stranger.code, 'run_not_found');
  assert.equal(sup.peek(other.value.id)!.status !== 'ended', true);
  const k = (await childCall(sup, p.value.id, 'child.kill', { child: kid.runId })) as { endReason: string };
  assert.equal(k.endReason, 'killed');
  assert.equal(sup.peek(kid.runId)!.killedBy, 'parent');
  jail.jails.get(p.value.id)!.exit(0);
  jail.jails.get(other.value.id)!.exit(0);
  await sup.wait(other.value.id);
  await sup.close();
});

test('a queued run past the queue timeout ends failed with queue_timeout', async () => {
  const { sup, jail } = await setupSup({ settings: { maxConcurrent: 1, queueTimeoutMs: 30 } });
  const a = await sup.spawn({ task: 'a', script: SCRIPT, async: true });
  const b = await sup.spawn({ task: 'b', script: SCRIPT, async: true });
  assert.ok(a.ok && b.ok);
  assert.equal(b.value.status, 'queued');
  const w = await sup.wait(b.value.id);
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'failed');
  assert.equal(w.value.error?.code, 'queue_timeout');
  assert.equal(w.value.startedAt, null);
  jail.jails.get(a.value.id)!.exit(0);
  await sup.close();
});

test('hooks: prepareSpawn runs before the run starts; a failing one is ledgered and never blocks the run; onEnded gets the content-free end', async () => {
  const ended: unknown[] = [];
  const prepared: string[] = [];
  const { sup, jail, ledger } = await setupSup({
    hooks: {
      prepareSpawn: async (run) => {
        prepared.push(run.status);
        if (run.label === 'doomed') throw Object.assign(new Error('no room'), { code: 'internal' });
        return { rollback: async () => {} };
      },
      onEnded: (end) => void ended.push(end),
    },
  });
  const bad = await sup.spawn({ task: 'SECRET-TASK x', script: SCRIPT, label: 'doomed', async: true });
  assert.ok(bad.ok, 'a failing prepareSpawn degrades: the spawn goes on');
  assert.ok(ledger.events.some((e) => e.type === 'run.hook_failed' && e.hook === 'prepareSpawn' && e.runId === bad.value.id));
  await until(() => sup.peek(bad.value.id)?.status === 'running', 'running');
  jail.jails.get(bad.value.id)!.exit(0);
  await sup.wait(bad.value.id);
  await sup.idle();
  assert.ok(prepared.length === 1 && prepared[0] !== 'running', 'before the child starts');
  assert.equal(ended.length, 1);
  const e = ended[0] as Record<string, unknown>;
  assert.equal(e.runId, bad.value.id);
  assert.equal(e.endReason, 'completed');
  assert.doesNotMatch(JSON.stringify(e), /SECRET-TASK|doomed/, '[INV-7] no task, label or output in the end metadata');
  await sup.close();
});

test('retention: outputs of runs ended past resultRetentionMs are removed; the end reason stays the one it was', async () => {
  const now = { t: Date.now() };
  const { sup, jail, ledger } = await setupSup({ clock: { now: () => new Date(now.t) } });
  const r = await sup.spawn({ task: 'old', script: SCRIPT, async: true });
  assert.ok(r.ok);
  await until(() => sup.peek(r.value.id)?.status === 'running', 'running');
  jail.jails.get(r.value.id)!.outFiles = { 'a.txt': 'x' };
  jail.jails.get(r.value.id)!.exit(0);
  const w = await sup.wait(r.value.id);
  assert.ok(w.ok && w.value.resultDir);
  assert.ok(await fs.stat(w.value.resultDir!).then(() => true));
  now.t += sup.settings.resultRetentionMs + 1;
  const swept = await sup.retentionSweep();
  assert.deepEqual(swept.removed, [r.value.id]);
  const after = sup.peek(r.value.id)!;
  assert.equal(after.endReason, 'completed');
  assert.equal(after.resultDir, null);
  assert.equal(await fs.stat(w.value.resultDir!).then(() => true, () => false), false);
  assert.equal(ledger.events.filter((e) => e.type === 'run.results_swept').length, 1);
  await sup.close();
});

test('100 concurrent spawns see each other: exactly 5 admitted, 10 queued, 85 refused queue_full', async () => {
  const { sup, jail } = await setupSup();
  const res = await Promise.all(Array.from({ length: 100 }, (_, i) => sup.spawn({ task: `c${i}`, script: SCRIPT, async: true })));
  const ok = res.filter((r) => r.ok);
  assert.equal(ok.length, 15);
  for (const r of res) if (!r.ok) assert.equal(r.error.code, 'queue_full');
  await until(() => sup.peekAll().filter((r) => r.status === 'running').length === 5, 'five running');
  assert.equal(sup.peekAll().filter((r) => r.status === 'queued').length, 10);
  for (let round = 1; round <= 3; round++) {
    for (const j of [...jail.jails.values()]) if (j.started) j.exit(0);
    await until(() => sup.peekAll().filter((r) => r.endReason === 'completed').length === 5 * round, `round ${round} ended`);
    if (round < 3) await until(() => sup.peekAll().filter((r) => r.status === 'running').length === 5, `round ${round + 1} running`);
  }
  assert.equal(sup.peekAll().filter((r) => r.endReason === 'completed').length, 15);
  await sup.close();
});

// req: end:released
test('[INV-8] a kill while the jail is being created releases the jail, broker socket and lease anyway', async () => {
  const { sup, jail, leases } = await setupSup();
  let open!: () => void;
  jail.createGate = new Promise((r) => (open = r));
  const r = await sup.spawn({ task: 'mid-start', script: SCRIPT, async: true });
  assert.ok(r.ok);
  await until(() => sup.peek(r.value.id)?.leaseId !== null, 'lease issued');
  const k = await sup.kill(r.value.id, { confirm: true });
  assert.ok(k.ok);
  assert.equal(k.value.endReason, 'killed');
  open();
  await sup.idle();
  const j = jail.created.find((s) => s.runId === r.value.id) ? [...jail.jails.values()].find((x) => x.runId === r.value.id) : undefined;
  assert.equal(j, undefined, 'the late jail was destroyed');
  assert.ok([...leases.leases.values()].every((l) => l.revoked), 'its lease is revoked');
  assert.equal(sup.peek(r.value.id)!.status, 'ended');
  await sup.close();
});

test('resume says honestly when the checkpoint of a resumable run is gone', async () => {
  const { sup, store } = await setupSup({ settings: { perStepTimeoutMs: 40, defaultMaxSteps: 1 } });
  const r = await sup.spawn({ task: 'cp', script: SCRIPT, async: true });
  assert.ok(r.ok);
  await until(() => sup.peek(r.value.id)?.status === 'running', 'running');
  await childCall(sup, r.value.id, 'checkpoint', { state: { n: 1 } });
  const w = await sup.wait(r.value.id);
  assert.ok(w.ok && w.value.resumable);
  await fs.rm(store.file(r.value.id, 'checkpoint'));
  const res = await sup.resume(r.value.id);
  assert.equal(res.ok, false);
  if (!res.ok) {
    assert.equal(res.error.code, 'resume_unavailable');
    assert.equal(res.error.data.reason, 'checkpoint_missing');
  }
  await sup.close();
});

test('after a restart a resumable run is verified on disk; one that lost its checkpoint is an honest orphan', async () => {
  const first = await setupSup({ settings: { perStepTimeoutMs: 40, defaultMaxSteps: 1 } });
  const ids: string[] = [];
  for (const task of ['keeps', 'loses']) {
    const r = await first.sup.spawn({ task, script: SCRIPT, async: true });
    assert.ok(r.ok);
    ids.push(r.value.id);
    await until(() => first.sup.peek(r.value.id)?.status === 'running', 'running');
    await childCall(first.sup, r.value.id, 'checkpoint', { state: { task } });
  }
  for (const id of ids) await first.sup.wait(id);
  await first.sup.close();
  await fs.rm(first.store.file(ids[1]!, 'checkpoint'));
  const second = await setupSup({ home: first.home, jail: first.jail, leases: first.leases });
  assert.deepEqual(second.report.resumable, [ids[0]]);
  assert.deepEqual(second.report.orphaned, [{ runId: ids[1], reason: 'checkpoint_missing' }]);
  const lost = await second.sup.resume(ids[1]!);
  assert.equal(lost.ok, false);
  if (!lost.ok) assert.equal(lost.error.data.reason, 'checkpoint_missing');
  const kept = await second.sup.resume(ids[0]!);
  assert.ok(kept.ok);
  await until(() => second.sup.peek(kept.value.id)?.status === 'running', 'resumed');
  assert.deepEqual(await childCall(second.sup, kept.value.id, 'resume', {}), { checkpoint: { task: 'keeps' }, untrusted: true });
  second.jail.jails.get(kept.value.id)!.exit(0);
  await second.sup.wait(kept.value.id);
  await second.sup.close();
});

// req: lease:posture-never-loosens lease:enforced
test('[INV-1] a child cannot hand host paths or choose an image for its grandchild, nor spawn without the capability', async () => {
  const { sup, jail, leases } = await setupSup();
  const p = await sup.spawn({ task: 'p', script: SCRIPT, async: true });
  assert.ok(p.ok);
  await until(() => sup.peek(p.value.id)?.status === 'running', 'running');
  for (const extra of [{ artifact_refs: ['/etc/shadow'] }, { image: 'alpine' }]) {
    const e = (await childCall(sup, p.value.id, 'spawn', { request: { task: 'g', script: SCRIPT, ...extra } }).catch((x: unknown) => x)) as { code: string };
    assert.equal(e.code, 'capability_denied');
  }
  leases.rootCaps = ['exec'];
  const q = await sup.spawn({ task: 'q', script: SCRIPT, async: true });
  assert.ok(q.ok);
  await until(() => sup.peek(q.value.id)?.status === 'running', 'running');
  const e = (await childCall(sup, q.value.id, 'spawn', { request: { task: 'g', script: SCRIPT } }).catch((x: unknown) => x)) as { code: string };
  assert.equal(e.code, 'capability_denied');
  assert.equal(sup.peekAll().length, 2, 'nothing was spawned');
  for (const id of [p.value.id, q.value.id]) jail.jails.get(id)!.exit(0);
  await sup.wait(q.value.id);
  await sup.close();
});

test('[INV-8] a run reattached after a restart keeps its lease: it can still spawn a child (and no more than it could)', async () => {
  const first = await setupSup();
  const withSpawn = await first.sup.spawn({ task: 'parent', script: SCRIPT, async: true });
  const without = await first.sup.spawn({ task: 'no spawn', script: SCRIPT, async: true, caps: ['exec'] });
  assert.ok(withSpawn.ok && without.ok);
  const onDisk = async (id: string) => (await first.store.load(id))?.status === 'running';
  await until(async () => (await onDisk(withSpawn.value.id)) && (await onDisk(without.value.id)), 'running, on disk');
  await first.sup.close(); // the containers outlive the supervisor
  const second = await setupSup({ home: first.home, jail: first.jail, leases: first.leases });
  assert.deepEqual([...second.report.reattached].sort(), [withSpawn.value.id, without.value.id].sort());
  const child = (await childCall(second.sup, withSpawn.value.id, 'spawn', { request: { task: 'grandchild', script: SCRIPT, async: true } })) as { runId: string };
  assert.equal(second.sup.peek(child.runId)?.parentRunId, withSpawn.value.id);
  const denied = (await childCall(second.sup, without.value.id, 'spawn', { request: { task: 'nope', script: SCRIPT, async: true } }).catch((e: unknown) => e)) as { code: string };
  assert.equal(denied.code, 'capability_denied', '[INV-1] a reattached run gets no capability it did not have');
  await second.sup.kill(withSpawn.value.id, { confirm: true });
  await second.sup.kill(without.value.id, { confirm: true });
  await second.sup.idle();
  await second.sup.close();
});

test('a parent blocked on its stepping child is not killed by health_monitor; the silent one is', async () => {
  // The health monitor judges by the supervisor's clock: time moves when the test says.
  const clock = new ManualClock();
  const leases = new MemoryLeases();
  leases.now = clock.ms; // the leases' expiry on the same clock: a run's deadline is what its lease has left
  const { sup } = await setupSup({ settings: { stuckKillThresholdMs: 150 }, clock, leases });
  const p = await sup.spawn({ task: 'waits on a child', script: SCRIPT, async: true });
  const lone = await sup.spawn({ task: 'silent', script: SCRIPT, async: true });
  assert.ok(p.ok && lone.ok);
  await until(() => sup.peek(p.value.id)?.status === 'running' && sup.peek(lone.value.id)?.status === 'running', 'parent and the silent one running');
  const child = (await childCall(sup, p.value.id, 'spawn', { request: { task: 'steps', script: SCRIPT, async: true } })) as { runId: string };
  await until(() => sup.peek(child.runId)?.status === 'running', 'child running');
  for (let i = 0; i < 8; i++) {
    await childCall(sup, child.runId, 'progress', {});
    clock.advance(50);
  }
  await until(() => sup.peek(lone.value.id)?.status === 'ended', 'the silent run ended');
  assert.equal(sup.peek(lone.value.id)!.killedBy, 'health_monitor');
  assert.equal(sup.peek(p.value.id)!.status, 'running', 'the parent was waiting, not stuck');
  await sup.kill(p.value.id, { confirm: true });
  await sup.idle();
  await sup.close();
});

test('a respawn-mode steer of a child is attributed to whoever steered: the parent over the broker, else the operator', async () => {
  const { sup } = await setupSup({ settings: { steerInject: false } });
  const p = await sup.spawn({ task: 'parent', script: SCRIPT, async: true });
  assert.ok(p.ok);
  await until(() => sup.peek(p.value.id)?.status === 'running', 'parent running');
  const kid = (await childCall(sup, p.value.id, 'spawn', { request: { task: 'kid', script: SCRIPT, async: true } })) as { runId: string };
  await until(() => sup.peek(kid.runId)?.status === 'running', 'kid running');
  const byParent = (await childCall(sup, p.value.id, 'child.steer', { child: kid.runId, message: 'other way' })) as { mode: string; newRunId: string };
  assert.equal(byParent.mode, 'respawn');
  assert.equal(sup.peek(kid.runId)!.killedBy, 'parent');
  await until(() => sup.peek(byParent.newRunId)?.status === 'running', 'respawned kid running');
  assert.equal(sup.peek(byParent.newRunId)!.parentRunId, p.value.id, 'the respawn stays in the parent\'s tree');
  const byOperator = await sup.steer(byParent.newRunId, 'operator says');
  assert.ok(byOperator.ok);
  assert.equal(sup.peek(byParent.newRunId)!.killedBy, 'operator');
  await sup.kill(p.value.id, { confirm: true });
  await sup.idle();
  await sup.close();
});

// req: envelope:history-opt-in
test('[INV-3] a parent summary over parentSummaryMaxTokens is refused, not cut; within it, it reaches the packet only when asked for', async () => {
  const { sup, jail } = await setupSup({ settings: { parentSummaryMaxTokens: 10 } });
  const over = await sup.spawn({ task: 'too much history', script: SCRIPT, include_parent_history: 'summary', parent_summary: 'x'.repeat(41) });
  assert.equal(over.ok, false);
  if (!over.ok) {
    assert.equal(over.error.code, 'invalid_input');
    assert.deepEqual(over.error.data, { limit: 40, current: 41 });
    assert.match(over.error.hint, /include_parent_history/);
  }
  assert.equal(jail.created.length, 0, 'nothing was started');
  const fits = await sup.spawn({ task: 'short history', script: SCRIPT, include_parent_history: 'summary', parent_summary: 'y'.repeat(40), async: true });
  const none = await sup.spawn({ task: 'no history', script: SCRIPT, async: true });
  assert.ok(fits.ok && none.ok);
  await until(() => jail.created.length === 2, 'both created');
  const packetOf = (id: string) => JSON.parse(String(jail.created.find((s) => s.runId === id)!.inputs![0]!.data)) as { parentSummary: string | null };
  assert.equal(packetOf(fits.value.id).parentSummary, 'y'.repeat(40));
  assert.equal(packetOf(none.value.id).parentSummary, null);
  for (const id of [fits.value.id, none.value.id]) await sup.kill(id, { confirm: true });
  await sup.close();
});

test('a child whose first broker call beats the supervisor recording its start is served, and its step counts', async () => {
  const { sup, jail } = await setupSup();
  let early: unknown;
  jail.onCreate = (j) => {
    const start = j.start.bind(j);
    // The container runs and calls before start() has returned to the supervisor.
    j.start = async () => {
      await start();
      early = await childCall(sup, j.runId, 'progress', { line: 'first' }).catch((e: unknown) => e);
    };
  };
  const r = await sup.spawn({ task: 'quick child', script: SCRIPT, async: true });
  assert.ok(r.ok);
  await until(() => sup.peek(r.value.id)?.status === 'running', 'running');
  assert.deepEqual(early, { steers: [], stepsExecuted: 1 });
  assert.equal(sup.peek(r.value.id)!.stepsExecuted, 1);
  jail.jails.get(r.value.id)!.exit(0);
  const w = await sup.wait(r.value.id);
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'completed');
  await sup.close();
});

// req: envelope:no-transcript
test('[INV-3] a child result over the summary bound stays on disk: the parent gets its size, not its content', async () => {
  const { boundedResult, MAX_SUMMARY_RESULT_CHARS } = await import('../../../src/runs/child-calls.js');
  assert.deepEqual(boundedResult({ n: 1 }), { result: { n: 1 } });
  assert.deepEqual(boundedResult(undefined), { result: null });
  const big = { rows: 'x'.repeat(MAX_SUMMARY_RESULT_CHARS) };
  const b = boundedResult(big);
  assert.equal(b.result, null);
  assert.equal(b.resultCut?.chars, JSON.stringify(big).length);
  assert.match(b.resultCut!.hint, /result\.json/);
  // Through the supervisor: a synchronous spawn whose child sets a big result.
  const { sup, jail } = await setupSup();
  const p = await sup.spawn({ task: 'parent', script: SCRIPT, async: true });
  assert.ok(p.ok);
  await until(() => sup.peek(p.value.id)?.status === 'running', 'parent running');
  const pending = childCall(sup, p.value.id, 'spawn', { request: { task: 'big kid', script: SCRIPT } }) as Promise<{ runId: string; result: unknown; resultCut?: { chars: number } }>;
  await until(() => sup.peekAll().some((r) => r.parentRunId === p.value.id && r.status === 'running'), 'kid running');
  const kid = sup.peekAll().find((r) => r.parentRunId === p.value.id)!;
  await childCall(sup, kid.id, 'result', { value: big });
  jail.jails.get(kid.id)!.exit(0);
  const summary = await pending;
  assert.equal(summary.result, null);
  assert.ok(summary.resultCut!.chars > MAX_SUMMARY_RESULT_CHARS);
  assert.doesNotMatch(JSON.stringify(summary), /xxxxxxxx/);
  jail.jails.get(p.value.id)!.exit(0);
  await sup.wait(p.value.id);
  await sup.close();
});

test('a child has at most 16 steers waiting: the 17th is refused rate_limited until it takes them', async () => {
  const { sup, jail } = await setupSup();
  const r = await sup.spawn({ task: 'busy', script: SCRIPT, async: true });
  assert.ok(r.ok);
  await until(() => sup.peek(r.value.id)?.status === 'running', 'running');
  for (let i = 0; i < 16; i++) assert.ok((await sup.steer(r.value.id, `steer ${i}`)).ok, `steer ${i}`);
  const over = await sup.steer(r.value.id, 'one too many');
  assert.ok(!over.ok && over.error.code === 'rate_limited', JSON.stringify(over));
  const taken = (await childCall(sup, r.value.id, 'steer.poll', {})) as { steers: string[] };
  assert.equal(taken.steers.length, 16, 'the child takes them all at once');
  assert.ok((await sup.steer(r.value.id, 'room again')).ok);
  jail.jails.get(r.value.id)!.exit(0);
  const w = await sup.wait(r.value.id);
  assert.ok(w.ok);
  await sup.close();
});

test('a listener for a run\'s end can be taken back: waits that time out leave nothing on a run that goes on', async () => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-waiters-'));
  const table = new RunTable(new RunStore(path.join(home, 'runs')), new MemoryLedger(), { now: () => new Date() });
  const offs = Array.from({ length: 200 }, () => table.onEnded('r-1', () => assert.fail('taken back')));
  let ended = 0;
  table.onEnded('r-1', () => ended++);
  assert.equal(table.waiterCount('r-1'), 201);
  for (const off of offs) off();
  offs[0]!();
  assert.equal(table.waiterCount('r-1'), 1);
  table.notifyEnded('r-1');
  assert.equal(ended, 1);
  assert.equal(table.waiterCount('r-1'), 0);
  await fs.rm(home, { recursive: true, force: true });
});
