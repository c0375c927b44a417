import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { main } from '../../../src/cli/cli.js';
import { loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, SILENT, supervisorAt, until } from './fixture.js';

const INSPECT = `import { readFileSync, statSync } from 'node:fs';
export default async function (brig) {
  // node is execute-only (non-dumpable): its own /proc/self/environ is root's; process.env is the same list.
  const env = Object.keys(process.env).sort();
  const mode = (p) => statSync(p).mode & 0o777;
  return {
    env,
    packetMode: mode('/workspace/.brig/packet.json'),
    tokenMode: mode('/workspace/.brig/token'),
    packet: { task: brig.packet.task, depth: brig.packet.depth, maxDepth: brig.packet.maxDepth, objective: brig.packet.objective, parentSummary: brig.packet.parentSummary, caps: brig.packet.lease.caps },
  };
}`;

const PARENT = (child: string) => `export default async function (brig) {
  const c = await brig.spawn({ task: 'sleepy child', script: ${JSON.stringify(child)}, async: true });
  await brig.progress('spawned');
  let denied = null;
  try { await brig.kill('r-0000000000000000'); } catch (e) { denied = e.code; }
  const k = await brig.kill(c.runId);
  return { child: c.runId, killed: k.endReason, stranger: denied };
}`;

// req: secrets:env-from-nothing
test('[INV-6] inside the jail: the env is built from nothing, the packet is read-only, the token is owner-only', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'look around', script: INSPECT, objective: 'obj', include_parent_history: 'summary', parent_summary: 'ps', caps: ['exec'] });
    assert.ok(r.ok);
    assert.equal(r.value.endReason, 'completed', r.value.stderrTail);
    assert.deepEqual(r.value.result, {
      env: ['BRIG_RUN_ID', 'HOME', 'HOSTNAME', 'PATH'], // HOSTNAME is the engine's own (the container id)
      packetMode: 0o444,
      tokenMode: 0o400,
      packet: { task: 'look around', depth: 1, maxDepth: 3, objective: 'obj', parentSummary: 'ps', caps: ['exec'] },
    });
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('a parent script kills its own child over the broker (killedBy parent), never a stranger', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'parent', script: PARENT(SILENT) });
    assert.ok(r.ok);
    assert.equal(r.value.endReason, 'completed', r.value.stderrTail);
    const res = r.value.result as { child: string; killed: string; stranger: string };
    assert.equal(res.killed, 'killed');
    assert.equal(res.stranger, 'run_not_found');
    const child = await c.supervisor.get(res.child);
    assert.equal(child!.killedBy, 'parent');
    assert.equal(child!.parentRunId, r.value.id);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('brig lease revoke from another process ends the run of the daemon (killed by operator)', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  try {
    const sup = d.composed.supervisor;
    const r = await sup.spawn({ task: 'revoke me', script: SILENT, async: true });
    assert.ok(r.ok);
    await until(async () => (await sup.get(r.value.id))?.status === 'running', 'running');
    const leaseId = (await sup.get(r.value.id))!.leaseId!;
    const out = new PassThrough();
    const errS = new PassThrough();
    errS.resume();
    out.resume();
    const code = await main(['lease', 'revoke', leaseId, '--confirm'], { stdout: out, stderr: errS, env: { BRIG_HOME: home }, isTTY: false });
    assert.equal(code, 0);
    const w = await sup.wait(r.value.id);
    assert.ok(w.ok);
    assert.equal(w.value.endReason, 'killed');
    assert.equal(w.value.killedBy, 'operator');
  } finally {
    await d.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

// req: events:bus-no-content
test('[INV-7] progress events on a real child: real step counts, content-free, none after the end', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home, { progressIntervalMs: 100 });
  const script = `export default async function (brig) {
    for (let i = 0; i < 5; i++) { await brig.progress('SECRET-LINE ' + i); await new Promise((r) => setTimeout(r, 150)); }
    return 'done';
  }`;
  try {
    const it = c.supervisor.events();
    const r = await c.supervisor.spawn({ task: 'stepper', script });
    assert.ok(r.ok);
    assert.equal(r.value.stepsExecuted, 5);
    await new Promise((res) => setTimeout(res, 400)); // four more intervals
    await it.return!();
    const seen: import('../../../src/runs/index.js').SupervisorEvent[] = [];
    for (;;) {
      const n = await it.next();
      if (n.done) break;
      seen.push(n.value);
    }
    const mine = seen.filter((e) => e.runId === r.value.id);
    const steps = mine.flatMap((e) => (e.type === 'progress' ? [e.progress.stepsExecuted] : []));
    assert.ok(steps.length >= 3, `progress events: ${steps.length}`);
    assert.ok(steps.some((s) => s > 0) && steps.every((s, i) => i === 0 || s >= steps[i - 1]!), 'real, non-decreasing step counts');
    const endAt = mine.findIndex((e) => e.type === 'lifecycle_ended');
    assert.ok(endAt > 0);
    assert.deepEqual(mine.slice(endAt + 1), [], 'nothing after the end');
    assert.doesNotMatch(JSON.stringify(mine), /SECRET-LINE|stepper/);
  } finally {
    await c.close();
  }
});
