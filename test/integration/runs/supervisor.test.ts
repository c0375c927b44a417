import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, RECURSE, RESUMABLE, SILENT, STEERABLE, supervisorAt, until } from './fixture.js';

test('depth 4 is refused: a script spawning itself through the broker stops at depth 3 with depth_exceeded', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'recurse', script: RECURSE, timeout: 120_000 });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', JSON.stringify(r.value.error) + r.value.stderrTail);
    const all = await c.supervisor.list({ rootRunId: r.value.id });
    const why = JSON.stringify(all.map((x) => ({ depth: x.depth, end: x.endReason, error: x.error, stderr: x.stderrTail.slice(-300) })));
    assert.deepEqual(r.value.result, { depth: 1, childEnd: 'completed', child: { depth: 2, childEnd: 'completed', child: { depth: 3, refused: 'depth_exceeded' } } }, why);
    assert.deepEqual(all.map((x) => x.depth).sort(), [1, 2, 3]);
    assert.deepEqual(all.map((x) => x.path.length).sort(), [1, 2, 3]);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

// req: end:released
test('[INV-8] the 6th child is queued then run; a full queue is refused; kill mid-run leaves no container or volume', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home, { maxQueued: 1 });
  const sup = c.supervisor;
  try {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await sup.spawn({ task: `sleeper ${i}`, kind: 'command', argv: ['sleep', '60'], async: true });
      assert.ok(r.ok, r.ok ? '' : r.error.message);
      ids.push(r.value.id);
    }
    await until(async () => (await sup.list({ status: ['running'] })).length === 5, 'five running');
    assert.equal((await sup.get(ids[5]!))!.status, 'queued');
    const full = await sup.spawn({ task: 'one too many', kind: 'command', argv: ['true'], async: true });
    assert.equal(full.ok, false);
    if (!full.ok) {
      assert.equal(full.error.code, 'queue_full');
      assert.deepEqual(full.error.data, { limit: 1, current: 1 });
    }
    const k = await sup.kill(ids[0]!, { confirm: true });
    assert.ok(k.ok);
    assert.equal(k.value.endReason, 'killed');
    assert.equal(k.value.killedBy, 'operator');
    assert.ok(!(await leftovers(home)).some((x) => x.endsWith(ids[0]!)), 'the killed run has no container or volume');
    await until(async () => (await sup.get(ids[5]!))!.status === 'running', 'the queued one runs');
    for (const id of ids.slice(1)) await sup.kill(id, { confirm: true });
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('the watchdog fires (watchdog_timeout) and a silent child is killed by health_monitor', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home, { stuckKillThresholdMs: 1500 });
  try {
    const [wd, silent] = await Promise.all([
      c.supervisor.spawn({ task: 'too long', kind: 'command', argv: ['sleep', '60'], timeout: 1000 }),
      c.supervisor.spawn({ task: 'silent', script: SILENT }),
    ]);
    assert.ok(wd.ok && silent.ok);
    assert.equal(wd.value.endReason, 'watchdog_timeout');
    assert.equal(wd.value.terminalStatus, 'timeout');
    assert.equal(silent.value.endReason, 'killed');
    assert.equal(silent.value.killedBy, 'health_monitor');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('steer: inject reaches the running child; kill + respawn gives a new run; an ended run fails fast with not_running', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  const sup = c.supervisor;
  try {
    const r = await sup.spawn({ task: 'steer me', script: STEERABLE, async: true });
    assert.ok(r.ok);
    await until(async () => ((await sup.get(r.value.id))?.stepsExecuted ?? 0) > 0, 'stepping');
    const s = await sup.steer(r.value.id, 'turn left');
    assert.ok(s.ok);
    assert.equal(s.value.mode, 'inject');
    const w = await sup.wait(r.value.id);
    assert.ok(w.ok);
    assert.equal(w.value.endReason, 'completed');
    assert.deepEqual((w.value.result as { steered: string[] }).steered, ['turn left']);
    const late = await sup.steer(r.value.id, 'too late');
    assert.equal(late.ok, false);
    if (!late.ok) {
      assert.equal(late.error.code, 'not_running');
      assert.equal(late.error.data.status, 'ended');
    }
  } finally {
    await c.close();
  }
  // Respawn mode is a setting: the same home under a supervisor with steerInject off.
  const c2 = await supervisorAt(home, { steerInject: false });
  const sup2 = c2.supervisor;
  try {
    const r2 = await sup2.spawn({ task: 'respawn me', script: STEERABLE, async: true });
    assert.ok(r2.ok);
    await until(async () => ((await sup2.get(r2.value.id))?.stepsExecuted ?? 0) > 0, 'stepping');
    const s2 = await sup2.steer(r2.value.id, 'new task');
    assert.ok(s2.ok);
    assert.equal(s2.value.mode, 'respawn');
    assert.notEqual(s2.value.newRunId, r2.value.id);
    const old = await sup2.get(r2.value.id);
    assert.equal(old!.endReason, 'killed');
    assert.equal(old!.steeredTo, s2.value.newRunId);
    await until(async () => (await sup2.get(s2.value.newRunId!))?.status === 'running', 'respawned runs');
    await sup2.kill(s2.value.newRunId!, { confirm: true });
  } finally {
    await c2.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('checkpoint → timeout → resume continues from the checkpoint, across a supervisor restart', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const first = await supervisorAt(home, { stuckKillThresholdMs: 60_000 });
  let id: string;
  try {
    const r = await first.supervisor.spawn({ task: 'long job', script: RESUMABLE, timeout: 3000 });
    assert.ok(r.ok);
    id = r.value.id;
    assert.equal(r.value.endReason, 'watchdog_timeout');
    assert.equal(r.value.resumable, true);
  } finally {
    await first.close();
  }
  const second = await supervisorAt(home);
  try {
    const again = await second.supervisor.resume(id);
    assert.ok(again.ok, again.ok ? '' : again.error.message);
    assert.equal(again.value.resumeOf, id);
    const w = await second.supervisor.wait(again.value.id);
    assert.ok(w.ok);
    assert.equal(w.value.endReason, 'completed', w.value.stderrTail);
    assert.deepEqual(w.value.result, { resumedFrom: { i: 5 }, untrusted: true });
    const twice = await second.supervisor.resume(id);
    assert.equal(twice.ok, false);
    if (!twice.ok) assert.equal(twice.error.code, 'resume_unavailable');
  } finally {
    await second.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('100 concurrent spawn requests with a cap of 5: none lost — each ends or is refused with a code', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const res = await Promise.all(Array.from({ length: 100 }, (_, i) => c.supervisor.spawn({ task: `n${i}`, kind: 'command', argv: ['true'] })));
    const ended = res.filter((r) => r.ok);
    const refused = res.filter((r) => !r.ok);
    assert.equal(ended.length + refused.length, 100);
    assert.equal(ended.length, 15, 'exactly 5 running + 10 queued admitted, whatever the interleaving');
    for (const r of ended) if (r.ok) assert.equal(r.value.endReason, 'completed');
    for (const r of refused) if (!r.ok) assert.equal(r.error.code, 'queue_full');
    const all = await c.supervisor.list();
    assert.equal(all.length, ended.length);
    assert.ok(all.every((r) => r.status === 'ended' && r.endReason !== null));
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
