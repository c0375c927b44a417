import { childCall } from '../../helpers/child-call.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSupervisor, type SupervisorCore } from '../../../src/runs/supervisor.js';
import type { SupervisorSettings } from '../../../src/runs/types.js';
import type { Timers } from '../../../src/runs/progress-fork.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { FakeJailDriver, type FakeJail } from '../../helpers/fakes/fake-jail.js';
import { ManualTimers } from '../../helpers/fakes/manual-time.js';
import { MemoryLeases, NullBroker } from '../../helpers/fakes/memory-leases.js';
import { tempDir } from '../../helpers/temp-dir.js';

const SCRIPT = 'export default async function (brig) { return 1 }';

async function setup(settings: Partial<SupervisorSettings> = {}, home?: string, jail = new FakeJailDriver(), leases = new MemoryLeases(), timers?: Timers) {
  home ??= tempDir('brig-sup-');
  const ledger = new MemoryLedger();
  const broker = new NullBroker();
  const sup = createSupervisor({
    jail, leases, broker, ledger, tickMs: 10,
    paths: { runs: path.join(home, 'runs'), brokers: path.join(home, 'brokers') },
    settings: { progressIntervalMs: 5, ...settings },
    ...(timers ? { timers } : {}),
  });
  const report = await sup.start();
  return { sup, jail, leases, ledger, broker, home, report };
}

async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`never happened: ${what}`);
}

const running = (sup: SupervisorCore, id: string) => () => sup.peek(id)?.status === 'running';
/** The record on disk says running: memory says so before the (non-durable) save lands, and a close does not wait for it. */
const savedRunning = (home: string, id: string) => async () =>
  fs.readFile(path.join(home, 'runs', id, 'run.json'), 'utf8').then((t) => (JSON.parse(t) as { status: string }).status === 'running', () => false);

// A one-shot CLI closes its supervisor as soon as its envelope is printed (issue 34).
test('a close right after a run\'s end starts its deferred release and returns only after the record\'s last writes: released, flag gone, timing kept', async () => {
  const { sup, jail, home } = await setup();
  const r = await sup.spawn({ task: 't', script: SCRIPT, async: true });
  assert.ok(r.ok);
  const id = r.value.id;
  await until(running(sup, id), 'running');
  const j = jail.jails.get(id)!;
  // The release takes a while (an engine removing a container): it ends well after close's first look.
  const destroy = j.destroy.bind(j);
  j.destroy = async () => {
    await new Promise((res) => setTimeout(res, 60));
    await destroy();
  };
  j.exit(0);
  const w = await sup.wait(id);
  assert.ok(w.ok);
  assert.equal(j.destroyed, false, 'the envelope came before the release (issue 26)');
  // The record's writes after the release land slowly (a busy disk): a close that returned when
  // the jail was gone, not when they landed, would leave the flag for the read below to see.
  const rename = fs.rename;
  fs.rename = (async (from: Parameters<typeof rename>[0], to: Parameters<typeof rename>[1]) => {
    if (j.destroyed && String(to).endsWith(`${id}/run.json`)) await new Promise((res) => setTimeout(res, 80));
    return rename(from, to);
  }) as typeof rename;
  try {
    await sup.close();
  } finally {
    fs.rename = rename;
  }
  assert.ok(j.destroyed, 'the close released the jail');
  // Read as another process would, at once (synchronously: no write still queued may land first).
  const rec = JSON.parse(readFileSync(path.join(home, 'runs', id, 'run.json'), 'utf8')) as { status: string; unreleased?: boolean; timing?: unknown };
  assert.equal(rec.status, 'ended');
  assert.equal(rec.unreleased, undefined, 'the release flag went before the close returned');
  assert.ok(rec.timing, 'the run\'s timing was saved before the close returned');
});

// req: events:ledger-no-content end:one-reason end:released
test('[INV-8] [INV-7] a run goes queued → running → ended completed, releases everything, events are content-free', async () => {
  const { sup, jail, leases, ledger, broker } = await setup();
  const r = await sup.spawn({ task: 'SECRET-TASK-TEXT', script: SCRIPT, async: true, expected_outputs: ['report.txt', 'missing.txt'] });
  assert.ok(r.ok);
  const id = r.value.id;
  await until(running(sup, id), 'running');
  const j = jail.jails.get(id)!;
  j.outFiles = { 'report.txt': 'done' };
  await childCall(sup, id, 'run.progress', { line: 'step one' });
  j.exit(0);
  const w = await sup.wait(id);
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'completed');
  assert.equal(w.value.stepsExecuted, 1);
  assert.deepEqual(w.value.missingOutputs, ['missing.txt']);
  assert.equal(w.value.outputFiles, 1);
  // Before the envelope: the channels closed and the lease revoked. After it (issue 26): the jail.
  assert.equal(broker.open.size, 0, 'broker socket closed');
  assert.ok(leases.leases.get(w.value.leaseId!)!.revoked, 'lease revoked at the end');
  await sup.idle();
  assert.ok(j.destroyed, 'container and volume removed');
  const types = ledger.events.filter((e) => e.runId === id).map((e) => e.type);
  assert.deepEqual(types.filter((t) => t !== 'run.progress'), ['run.spawned', 'run.started', 'run.completed', 'run.lifecycle_ended']);
  assert.doesNotMatch(JSON.stringify(ledger.events), /SECRET-TASK-TEXT|step one/);
  const packet = JSON.parse(String(jail.created[0]!.inputs!.find((i) => i.path === '.brig/packet.json')!.data));
  assert.equal(packet.task, 'SECRET-TASK-TEXT');
  assert.deepEqual(Object.keys(jail.created[0]!.env).sort(), ['BRIG_RUN_ID', 'HOME'], '[INV-6] env built from nothing');
  await sup.close();
});

test('the 6th child is queued and starts when a slot frees; a full queue is refused', async () => {
  const { sup, jail } = await setup({ maxQueued: 2 });
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await sup.spawn({ task: `t${i}`, script: SCRIPT, async: true });
    assert.ok(r.ok);
    ids.push(r.value.id);
  }
  await until(() => ids.slice(0, 5).every((id) => sup.peek(id)!.status === 'running'), 'five running');
  assert.equal(sup.peek(ids[5]!)!.status, 'queued');
  assert.ok((await sup.spawn({ task: 't6', script: SCRIPT, async: true })).ok);
  const full = await sup.spawn({ task: 't7', script: SCRIPT, async: true });
  assert.equal(full.ok, false);
  if (!full.ok) assert.equal(full.error.code, 'queue_full');
  jail.jails.get(ids[0]!)!.exit(0);
  await until(running(sup, ids[5]!), 'queued one started');
  for (const id of ids) jail.jails.get(id)?.exit(0);
  await sup.close();
});

// req: end:one-reason end:released
test('[INV-8] kill mid-run: killed by operator, container gone; a racing exit does not add a second end', async () => {
  const { sup, jail, ledger } = await setup();
  const r = await sup.spawn({ task: 'k', script: SCRIPT, async: true });
  assert.ok(r.ok);
  await until(running(sup, r.value.id), 'running');
  const noConfirm = await sup.kill(r.value.id, { confirm: false });
  assert.equal(noConfirm.ok, false);
  const j = jail.jails.get(r.value.id)!;
  const [k] = await Promise.all([sup.kill(r.value.id, { confirm: true }), Promise.resolve(j.exit(0))]);
  await sup.idle();
  const rec = sup.peek(r.value.id)!;
  // Whichever wins the race, there is exactly one end.
  if (k.ok) {
    assert.equal(rec.endReason, 'killed');
    assert.equal(rec.killedBy, 'operator');
  } else {
    assert.equal(k.error.code, 'not_running');
    assert.equal(rec.endReason, 'completed');
  }
  assert.ok(j.destroyed);
  assert.equal(ledger.events.filter((e) => e.type === 'run.lifecycle_ended' && e.runId === r.value.id).length, 1);
  const r2 = await sup.spawn({ task: 'k2', script: SCRIPT, async: true });
  assert.ok(r2.ok);
  await until(running(sup, r2.value.id), 'running');
  const k2 = await sup.kill(r2.value.id, { confirm: true });
  assert.ok(k2.ok);
  assert.equal(k2.value.endReason, 'killed');
  assert.equal(k2.value.killedBy, 'operator');
  assert.ok(jail.jails.get(r2.value.id) === undefined, 'container and volume gone');
  const again = await sup.kill(r.value.id, { confirm: true });
  assert.equal(again.ok, false);
  if (!again.ok) assert.equal(again.error.code, 'not_running');
  await sup.close();
});

test('watchdog fires; after a checkpoint the run is resumable and resume re-spawns the pinned bytes with the checkpoint', async () => {
  const { sup, jail } = await setup({ perStepTimeoutMs: 50, defaultMaxSteps: 1 });
  const r = await sup.spawn({ task: 'long', script: SCRIPT, async: true });
  assert.ok(r.ok);
  await until(running(sup, r.value.id), 'running');
  await childCall(sup, r.value.id, 'run.checkpoint', { state: { i: 7 } });
  await until(() => sup.peek(r.value.id)!.status === 'ended', 'watchdog');
  const ended = sup.peek(r.value.id)!;
  assert.equal(ended.endReason, 'watchdog_timeout');
  assert.equal(ended.terminalStatus, 'timeout');
  assert.equal(ended.resumable, true);
  const again = await sup.resume(r.value.id);
  assert.ok(again.ok);
  await until(running(sup, again.value.id), 'resumed running');
  const spec = jail.created.find((s) => s.runId === again.value.id)!;
  assert.equal(String(spec.inputs!.find((i) => i.path === '.brig/script.mjs')!.data), SCRIPT);
  assert.deepEqual(await childCall(sup, again.value.id, 'run.resume', {}), { checkpoint: { i: 7 }, untrusted: true });
  const twice = await sup.resume(r.value.id);
  assert.equal(twice.ok, false);
  if (!twice.ok) assert.equal(twice.error.data.reason, 'already_resumed');
  jail.jails.get(again.value.id)!.exit(0);
  await sup.close();
});

test('a timed-out run without a checkpoint is not resumable, with an honest reason', async () => {
  const { sup } = await setup({ perStepTimeoutMs: 30, defaultMaxSteps: 1 });
  const r = await sup.spawn({ task: 'nock', script: SCRIPT, async: true });
  assert.ok(r.ok);
  await until(() => sup.peek(r.value.id)!.status === 'ended', 'watchdog');
  const res = await sup.resume(r.value.id);
  assert.equal(res.ok, false);
  if (!res.ok) {
    assert.equal(res.error.code, 'resume_unavailable');
    assert.equal(res.error.data.reason, 'not_resumable');
  }
  await sup.close();
});

test('a silent child is killed by health_monitor', async () => {
  const { sup } = await setup({ stuckKillThresholdMs: 40 });
  const r = await sup.spawn({ task: 'silent', script: SCRIPT, async: true });
  assert.ok(r.ok);
  const w = await sup.wait(r.value.id);
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'killed');
  assert.equal(w.value.killedBy, 'health_monitor');
  await sup.close();
});

// req: lease:steer-not-grant
test('[INV-1] steer: inject reaches the child at its next step; respawn mode kills and starts a new run; ended run fails fast', async () => {
  const { sup, jail } = await setup();
  const r = await sup.spawn({ task: 'a', script: SCRIPT, async: true });
  assert.ok(r.ok);
  await until(running(sup, r.value.id), 'running');
  const s = await sup.steer(r.value.id, 'go left');
  assert.deepEqual(s.ok && s.value, { mode: 'inject', runId: r.value.id, newRunId: null });
  const p = (await childCall(sup, r.value.id, 'run.progress', {})) as { steers: string[] };
  assert.deepEqual(p.steers, ['go left']);
  jail.jails.get(r.value.id)!.exit(0);
  await sup.wait(r.value.id);
  const late = await sup.steer(r.value.id, 'too late');
  assert.equal(late.ok, false);
  if (!late.ok) {
    assert.equal(late.error.code, 'not_running');
    assert.match(late.error.message, /status: ended/);
  }
  await sup.close();
  // Respawn mode is a setting: a supervisor built with steerInject off.
  const off = await setup({ steerInject: false }, undefined, jail);
  const r2 = await off.sup.spawn({ task: 'b', script: SCRIPT, async: true });
  assert.ok(r2.ok);
  await until(running(off.sup, r2.value.id), 'running');
  const leaseOf = (id: string) => [...off.leases.leases.values()].find((l) => l.leaseId === off.sup.peek(id)!.leaseId)!.caps;
  const leaseBefore = leaseOf(r2.value.id);
  const s2 = await off.sup.steer(r2.value.id, 'new direction');
  assert.ok(s2.ok);
  assert.equal(s2.value.mode, 'respawn');
  assert.equal(off.sup.peek(r2.value.id)!.endReason, 'killed');
  await until(running(off.sup, s2.value.newRunId!), 'respawned');
  assert.deepEqual(leaseOf(s2.value.newRunId!), leaseBefore, '[INV-1] a steer never changes the lease');
  const spec = jail.created.find((x) => x.runId === s2.value.newRunId)!;
  assert.equal(JSON.parse(String(spec.inputs![0]!.data)).task, 'new direction');
  jail.jails.get(s2.value.newRunId!)!.exit(0);
  await off.sup.close();
});

test('depth 4 is refused through grandchild spawns; spawn needs the capability', async () => {
  const { sup } = await setup();
  const a = await sup.spawn({ task: 'd1', script: SCRIPT, async: true });
  assert.ok(a.ok);
  await until(running(sup, a.value.id), 'd1');
  let parent = a.value.id;
  for (const d of [2, 3]) {
    const c = (await sup.spawn({ task: `d${d}`, script: SCRIPT, async: true }, { parentRunId: parent }));
    assert.ok(c.ok);
    assert.equal(c.value.depth, d);
    await until(running(sup, c.value.id), `d${d}`);
    parent = c.value.id;
  }
  const deep = (await childCall(sup, parent, 'run.spawn', { request: { task: 'd4', script: SCRIPT, async: true } }).catch((e: unknown) => e)) as { code: string; data: { limit: number } };
  assert.equal(deep.code, 'depth_exceeded');
  assert.equal(deep.data.limit, 3);
  await sup.kill(a.value.id, { confirm: true });
  await sup.idle();
  assert.ok(sup.peekAll().every((r) => r.status === 'ended'), 'killing a parent ends its subtree');
  assert.ok(sup.peekAll().filter((r) => r.id !== a.value.id).every((r) => r.killedBy === 'parent'));
  await sup.close();
});

test('[INV-8] restart: a live container is reattached, a vanished one ends ghost_sweep', async () => {
  const jail = new FakeJailDriver();
  const leases = new MemoryLeases();
  const first = await setup({}, undefined, jail, leases);
  const a = await first.sup.spawn({ task: 'stays', script: SCRIPT, async: true });
  const b = await first.sup.spawn({ task: 'vanishes', script: SCRIPT, async: true });
  assert.ok(a.ok && b.ok);
  await until(() => running(first.sup, a.value.id)() && running(first.sup, b.value.id)(), 'both running');
  // A vanished container of a run saved `starting` is a launch cut short (relaunched), not a ghost.
  await until(async () => (await savedRunning(first.home, a.value.id)()) && (await savedRunning(first.home, b.value.id)()), 'both saved running');
  await first.sup.close(); // the containers outlive the supervisor
  jail.jails.delete(b.value.id);
  const second = await setup({}, first.home, jail, leases);
  assert.deepEqual(second.report.reattached, [a.value.id]);
  assert.deepEqual(second.report.ghostSwept, [b.value.id]);
  assert.equal(second.sup.peek(b.value.id)!.endReason, 'ghost_sweep');
  jail.jails.get(a.value.id)!.exit(0);
  const w = await second.sup.wait(a.value.id);
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'completed');
  await second.sup.close();
});

test('[INV-8] restart: a run whose container was started but whose record still says `starting` (the supervisor died between the two) is reattached, not swept', async () => {
  const jail = new FakeJailDriver();
  const leases = new MemoryLeases();
  const first = await setup({}, undefined, jail, leases);
  const a = await first.sup.spawn({ task: 'started, not yet recorded', script: SCRIPT, async: true });
  assert.ok(a.ok);
  await until(running(first.sup, a.value.id), 'running');
  await first.sup.close();
  // What the disk holds when the SIGKILL lands after start() but before the record's save.
  const { RunStore } = await import('../../../src/runs/run-store.js');
  const store = new RunStore(path.join(first.home, 'runs'));
  const rec = (await store.loadAll()).records.find((r) => r.id === a.value.id)!;
  await store.save({ ...rec, status: 'starting', startedAt: null });
  const second = await setup({}, first.home, jail, leases);
  assert.deepEqual(second.report.reattached, [a.value.id]);
  assert.deepEqual(second.report.ghostSwept, []);
  assert.equal(second.sup.peek(a.value.id)!.status, 'running');
  jail.jails.get(a.value.id)!.exit(0);
  const w = await second.sup.wait(a.value.id);
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'completed');
  await second.sup.close();
});

test('a start failure ends the run failed and releases its lease; lease revoke ends a run killed by system', async () => {
  const { sup, jail, leases } = await setup();
  jail.failStart = true;
  const r = await sup.spawn({ task: 'boom', script: SCRIPT });
  assert.ok(r.ok);
  assert.equal(r.value.endReason, 'failed');
  assert.equal(r.value.error?.code, 'jail_failed');
  jail.failStart = false;
  const r2 = await sup.spawn({ task: 'rev', script: SCRIPT, async: true });
  assert.ok(r2.ok);
  await until(running(sup, r2.value.id), 'running');
  await leases.revoke(sup.peek(r2.value.id)!.leaseId!);
  const w = await sup.wait(r2.value.id);
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'killed');
  assert.equal(w.value.killedBy, 'system');
  await sup.close();
});

test('progress events carry real step counts and stop at the end', async () => {
  const timers = new ManualTimers();
  const { sup, jail, ledger } = await setup({}, undefined, undefined, undefined, timers);
  const r = await sup.spawn({ task: 'p', script: SCRIPT, async: true });
  assert.ok(r.ok);
  const it = sup.events({ runId: r.value.id });
  await until(running(sup, r.value.id), 'running');
  await childCall(sup, r.value.id, 'run.progress', {});
  await childCall(sup, r.value.id, 'run.progress', {});
  timers.fire(); // the run's progress interval comes round
  let seen: { stepsExecuted: number; progressLine: string | null } | undefined;
  for (;;) {
    const { value } = await it.next();
    if (value?.type === 'progress' && value.progress.stepsExecuted === 2) {
      seen = value.progress;
      break;
    }
  }
  assert.equal(seen!.progressLine, 'running, step 2');
  jail.jails.get(r.value.id)!.exit(0);
  await sup.wait(r.value.id);
  await it.return!();
  for (let i = 0; i < 8; i++) timers.fire(); // eight progress intervals after the end
  assert.equal(timers.live, 0, 'the run\'s progress timer was cleared at its end');
  const mine = ledger.events.filter((e) => e.runId === r.value.id).map((e) => e.type);
  const endAt = mine.indexOf('run.lifecycle_ended');
  assert.ok(endAt > 0);
  assert.deepEqual(mine.slice(endAt + 1), [], 'no progress after the end');
  await sup.close();
});

// req: lease:enforced
test('[INV-1] the lease bounds the run: maxSteps 0 stays 0, and collection is capped by the lease resultBytes', async () => {
  const leases = new MemoryLeases();
  leases.rootLimits = { ...leases.rootLimits, maxSteps: 0, resultBytes: 1000 };
  const { sup, jail } = await setup({ resultPerRunBytes: 1 << 30, resultPerFileBytes: 1 << 30 }, undefined, new FakeJailDriver(), leases);
  const r = await sup.spawn({ task: 'bounded', script: SCRIPT, async: true });
  assert.ok(r.ok);
  const id = r.value.id;
  await until(running(sup, id), 'running');
  assert.equal(sup.peek(id)!.maxSteps, 0, 'a lease of 0 steps is not read as unbounded');
  const j = jail.jails.get(id)!;
  j.exit(0);
  const w = await sup.wait(id);
  assert.ok(w.ok);
  assert.deepEqual(j.collectCaps, { perFileBytes: 1000, perRunBytes: 1000, maxEntries: 10_000 });
  await sup.close();
});

test('collection caps come from the settings when the lease allows more', async () => {
  const { sup, jail } = await setup({ resultPerRunBytes: 5000, resultPerFileBytes: 700, resultMaxEntries: 3 });
  const r = await sup.spawn({ task: 'settings caps', script: SCRIPT, async: true });
  assert.ok(r.ok);
  await until(running(sup, r.value.id), 'running');
  const j = jail.jails.get(r.value.id)!;
  j.exit(0);
  assert.ok((await sup.wait(r.value.id)).ok);
  assert.deepEqual(j.collectCaps, { perFileBytes: 700, perRunBytes: 5000, maxEntries: 3 });
  await sup.close();
});

test('an OOM kill the engine reports is carried onto the run record (oomKilled), not only into the error text', async () => {
  const { sup, jail } = await setup();
  const oom = await sup.spawn({ task: 'oom', script: SCRIPT, async: true });
  const plain = await sup.spawn({ task: 'plain', script: SCRIPT, async: true });
  assert.ok(oom.ok && plain.ok);
  await until(running(sup, oom.value.id), 'running');
  await until(running(sup, plain.value.id), 'running');
  jail.jails.get(oom.value.id)!.exit(137, { oomKilled: true });
  jail.jails.get(plain.value.id)!.exit(137);
  const a = await sup.wait(oom.value.id);
  const b = await sup.wait(plain.value.id);
  assert.ok(a.ok && b.ok);
  assert.equal(a.value.oomKilled, true);
  assert.equal(a.value.endReason, 'failed');
  assert.deepEqual(a.value.error, { code: 'child_failed', message: 'the child ran out of memory' });
  assert.equal(b.value.oomKilled, undefined, 'a plain non-zero exit says nothing of memory');
  assert.equal(b.value.error?.code, 'child_failed');
  await sup.close();
});

test('[INV-8] restart: a run caught `starting` with no started container is queued again (its created jail swept, its lease revoked) and starts afresh', async () => {
  const jail = new FakeJailDriver();
  const leases = new MemoryLeases();
  const first = await setup({}, undefined, jail, leases);
  const a = await first.sup.spawn({ task: 'caught starting', script: SCRIPT, async: true });
  assert.ok(a.ok);
  await until(running(first.sup, a.value.id), 'running');
  const oldLease = first.sup.peek(a.value.id)!.leaseId!;
  await first.sup.close();
  // What the disk holds when the SIGKILL lands while the jail is made: intake's `starting`
  // save; the lease was issued, but the launch had not saved it on the record yet.
  const { RunStore } = await import('../../../src/runs/run-store.js');
  const store = new RunStore(path.join(first.home, 'runs'));
  const rec = (await store.loadAll()).records.find((r) => r.id === a.value.id)!;
  await store.save({ ...rec, status: 'starting', startedAt: null, leaseId: null });
  const made = jail.jails.get(a.value.id)!;
  made.started = false;
  const second = await setup({}, first.home, jail, leases);
  assert.deepEqual(second.report.ghostSwept, []);
  assert.deepEqual(second.report.requeued, [a.value.id]);
  assert.equal(made.destroyed, true, 'the jail the dead launch created was swept');
  assert.equal(leases.leases.get(oldLease)?.revoked, true, 'the dead launch\'s lease is revoked');
  await until(running(second.sup, a.value.id), 'started again');
  assert.notEqual(second.sup.peek(a.value.id)!.leaseId, oldLease, 'a fresh lease');
  assert.ok(second.ledger.events.some((e) => e.type === 'run.requeued' && e.runId === a.value.id));
  jail.jails.get(a.value.id)!.exit(0);
  const w = await second.sup.wait(a.value.id);
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'completed');
  await second.sup.close();
});

test('[INV-8] shutdown keeps the operator\'s queued runs queued on disk (queue: kill ends them); the next start runs the kept ones', async () => {
  const jail = new FakeJailDriver();
  const leases = new MemoryLeases();
  const first = await setup({ maxConcurrent: 1 }, undefined, jail, leases);
  const a = await first.sup.spawn({ task: 'running', script: SCRIPT, async: true });
  const q1 = await first.sup.spawn({ task: 'queued 1', script: SCRIPT, async: true });
  const q2 = await first.sup.spawn({ task: 'queued 2', script: SCRIPT, async: true });
  assert.ok(a.ok && q1.ok && q2.ok);
  assert.deepEqual([q1.value.status, q2.value.status], ['queued', 'queued']);
  await until(running(first.sup, a.value.id), 'running');
  const shutting = first.sup.shutdown({ drainMs: 2000 });
  // While it drains, the slot the running one frees does not start a kept run.
  jail.jails.get(a.value.id)!.exit(0);
  const rep = await shutting;
  assert.deepEqual(rep.drained, [a.value.id]);
  assert.deepEqual(rep.killed, []);
  assert.deepEqual(rep.kept.sort(), [q1.value.id, q2.value.id].sort());
  assert.ok(first.ledger.events.some((e) => e.type === 'supervisor.shutdown' && e.kept === 2));
  const second = await setup({ maxConcurrent: 1 }, first.home, jail, leases);
  await until(running(second.sup, q1.value.id), 'the first kept run starts (FIFO)');
  assert.equal(second.sup.peek(q2.value.id)!.status, 'queued');
  jail.jails.get(q1.value.id)!.exit(0);
  await until(running(second.sup, q2.value.id), 'the second kept run starts');
  // Asked otherwise, a drain ends the queue.
  const q3 = await second.sup.spawn({ task: 'queued 3', script: SCRIPT, async: true });
  assert.ok(q3.ok);
  assert.equal(q3.value.status, 'queued');
  const rep2 = await second.sup.shutdown({ drainMs: 10, queue: 'kill' });
  assert.deepEqual(rep2.kept, []);
  assert.ok(rep2.killed.includes(q3.value.id));
  const killed = second.sup.peek(q3.value.id)!;
  assert.deepEqual([killed.endReason, killed.killedBy], ['killed', 'system']);
});

test('a progress call re-sent with the id of the step counted last is answered without counting it again, also after a restart; a naive client reusing an id unmarked still counts', async () => {
  const jail = new FakeJailDriver();
  const leases = new MemoryLeases();
  const first = await setup({}, undefined, jail, leases);
  const a = await first.sup.spawn({ task: 'steps', script: SCRIPT, async: true });
  assert.ok(a.ok);
  await until(running(first.sup, a.value.id), 'running');
  const id = a.value.id;
  const steps = (r: unknown) => (r as { stepsExecuted: number }).stepsExecuted;
  assert.equal(steps(await childCall(first.sup, id, 'progress', { line: 'one' }, { callId: 5 })), 1);
  assert.equal(steps(await childCall(first.sup, id, 'progress', { line: 'one' }, { callId: 5, resent: true })), 1, 're-sent: answered, not counted');
  assert.equal(steps(await childCall(first.sup, id, 'progress', { line: 'two' }, { callId: 5 })), 2, 'not marked resent: a new step');
  assert.equal(steps(await childCall(first.sup, id, 'progress', { line: 'three' }, { callId: 6 })), 3);
  assert.equal(steps(await childCall(first.sup, id, 'progress', { line: 'two' }, { callId: 5, resent: true })), 4, 'only the call counted last is matched');
  await first.sup.close();
  const second = await setup({}, first.home, jail, leases);
  assert.deepEqual(second.report.reattached, [id]);
  assert.equal(steps(await childCall(second.sup, id, 'progress', { line: 'two' }, { callId: 5, resent: true })), 4, 'after a restart: the id was saved with the count');
  assert.equal(second.sup.peek(id)!.stepsExecuted, 4);
  jail.jails.get(id)!.exit(0);
  await second.sup.wait(id);
  await second.sup.close();
});

test('a spawn call re-sent after a reconnect returns the child it made, even one that ended since; a child.kill re-sent gets the first answer', async () => {
  const { sup, jail } = await setup();
  const p = await sup.spawn({ task: 'parent', script: SCRIPT, caps: ['spawn', 'kill'], async: true });
  assert.ok(p.ok);
  await until(running(sup, p.value.id), 'parent running');
  const parent = p.value.id;
  const req = { request: { task: 'kid', script: SCRIPT, async: true } };
  const first = (await childCall(sup, parent, 'spawn', req, { callId: 'c-1' })) as { runId: string };
  await until(running(sup, first.runId), 'child running');
  jail.jails.get(first.runId)!.exit(0);
  await sup.wait(first.runId);
  const again = (await childCall(sup, parent, 'spawn', req, { callId: 'c-1', resent: true })) as { runId: string; endReason: string };
  assert.equal(again.runId, first.runId, 'the same child, not a second one');
  assert.equal(again.endReason, 'completed');
  assert.equal(sup.peekAll().filter((r) => r.parentRunId === parent).length, 1);
  // A synchronous spawn re-sent waits for its child like the first one.
  const sync = { request: { task: 'sync kid', script: SCRIPT } };
  const pending = childCall(sup, parent, 'spawn', sync, { callId: 'c-2' });
  await until(() => sup.peekAll().some((r) => r.parentRunId === parent && r.status === 'running'), 'sync child running');
  const kid = sup.peekAll().find((r) => r.parentRunId === parent && r.status === 'running')!;
  const resent = childCall(sup, parent, 'spawn', sync, { callId: 'c-2', resent: true });
  jail.jails.get(kid.id)!.exit(0);
  assert.equal(((await pending) as { runId: string }).runId, kid.id);
  assert.equal(((await resent) as { runId: string; endReason: string }).runId, kid.id);
  assert.equal(sup.peekAll().filter((r) => r.parentRunId === parent).length, 2);
  // child.kill, re-sent once the first one killed it: the first one's answer, not not_running.
  const victim = (await childCall(sup, parent, 'spawn', { request: { task: 'victim', script: SCRIPT, async: true } }, { callId: 'c-3' })) as { runId: string };
  await until(running(sup, victim.runId), 'victim running');
  const k1 = await childCall(sup, parent, 'child.kill', { child: victim.runId }, { callId: 'k-1' });
  const k2 = await childCall(sup, parent, 'child.kill', { child: victim.runId }, { callId: 'k-1', resent: true });
  assert.deepEqual(k2, k1);
  await assert.rejects(childCall(sup, parent, 'child.kill', { child: victim.runId }, { callId: 'k-2' }), (e: { code?: string }) => e.code === 'not_running');
  jail.jails.get(parent)!.exit(0);
  await sup.wait(parent);
  await sup.close();
});

// req: end:released
test('[INV-8] the envelope does not wait for the jail\'s release (issue 26): wait() answers with the lease revoked and the jail still going; the run\'s slot stays taken until the release is done', async () => {
  const { sup, jail, leases } = await setup({ maxConcurrent: 1 });
  const first = await sup.spawn({ task: 'a', script: SCRIPT, async: true });
  assert.ok(first.ok);
  await until(running(sup, first.value.id), 'running');
  const j = jail.jails.get(first.value.id)!;
  let letGo!: () => void;
  const gate = new Promise<void>((r) => (letGo = r));
  const destroy = j.destroy.bind(j);
  j.destroy = async () => {
    await gate;
    await destroy();
  };
  const second = await sup.spawn({ task: 'b', script: SCRIPT, async: true });
  assert.ok(second.ok);
  assert.equal(sup.peek(second.value.id)!.status, 'queued', 'one slot: the second waits');
  j.exit(0);
  const w = await sup.wait(first.value.id);
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'completed');
  assert.ok(leases.leases.get(w.value.leaseId!)!.revoked, 'the lease is revoked before the end is told');
  assert.equal(j.destroyed, false, 'the jail is still being released');
  // The ended run still holds its slot: nothing starts in it while its jail is there.
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(sup.peek(second.value.id)!.status, 'queued', 'the slot is held until the release is done');
  const refused = await sup.spawn({ task: 'c', script: SCRIPT, async: true });
  assert.ok(refused.ok);
  assert.equal(sup.peek(refused.value.id)!.status, 'queued', 'admission counts the releasing run');
  letGo();
  await until(running(sup, second.value.id), 'the queued run starts once the release is done');
  assert.equal(j.destroyed, true);
  assert.equal((await sup.wait(first.value.id)).ok, true);
  jail.jails.get(second.value.id)!.exit(0);
  await until(running(sup, refused.value.id), 'the third runs once the second is released');
  jail.jails.get(refused.value.id)!.exit(0);
  await sup.idle();
  await sup.close();
});
