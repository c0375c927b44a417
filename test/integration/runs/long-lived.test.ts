import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, supervisorAt } from './fixture.js';

/**
 * Long-lived children on a real engine: quiet children keep their broker connection, big
 * results are kept, the watchdog (not an expired lease) ends a busy slow run, parents that
 * wait on their children do not starve them, and dedup keys on the whole request.
 */

const QUIET_THEN_SPAWN = `export default async function (brig) {
  // Silent for longer than the broker's auth / line deadlines (10 s) before the first call.
  await new Promise((r) => setTimeout(r, 11500));
  const child = 'export default async function (brig) { await new Promise((r) => setTimeout(r, 11000)); return "slow child done"; }';
  // The first real call is a synchronous spawn that itself lasts over 10 s.
  const c = await brig.spawn({ task: 'slow child', script: child });
  await brig.progress('after the child');
  return { child: c.result, end: c.endReason };
}`;

test('a child silent for 11 s, then in a synchronous spawn for 11 s, keeps its broker connection', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'quiet parent', script: QUIET_THEN_SPAWN, timeout: 90_000 });
    assert.ok(r.ok);
    assert.equal(r.value.endReason, 'completed', `${r.value.error?.message} ${r.value.stderrTail}`);
    assert.deepEqual(r.value.result, { child: 'slow child done', end: 'completed' });
    assert.equal(r.value.stepsExecuted, 1);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

const BIG_RESULT = `export default async function (brig) {
  let tooBig = null;
  // A call over the broker's 64 KiB line limit is refused by the SDK before a byte is sent.
  try { await brig.checkpoint({ blob: 'y'.repeat(70000) }); } catch (e) { tooBig = { code: e.code, message: e.message }; }
  return { tooBig, text: 'z'.repeat(70000), n: 70000 };
}`;

test('a 70,000-char result is kept whole as the result ref; a call over the line limit is a catchable error', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'big result', script: BIG_RESULT });
    assert.ok(r.ok);
    assert.equal(r.value.endReason, 'completed', `${r.value.error?.message} ${r.value.stderrTail}`);
    assert.equal(r.value.result, null, 'too big for the record: it lives in the ref');
    assert.ok((r.value.resultSpooled ?? 0) > 70_000);
    const refs = await c.refs.list(r.value.id);
    assert.ok(refs.ok);
    const value = refs.value.find((x) => x.source === 'value');
    assert.ok(value, 'the result.json ref');
    assert.equal(value.path, 'result.json');
    const text = await c.refs.jq(value.ref, '.text | length');
    assert.ok(text.ok, JSON.stringify(text));
    assert.match(JSON.stringify(text.value), /70000/);
    const tooBig = await c.refs.jq(value.ref, '.tooBig.code');
    assert.ok(tooBig.ok);
    assert.match(JSON.stringify(tooBig.value), /invalid_input/);
    // The envelope points at the ref instead of carrying 70 KB: a condensed view bounded by
    // maxResultTokens (4,000 ≈ 16,000 chars, head + tail, issue 21) plus its footer.
    const env = await c.refs.result(r.value.id);
    assert.ok(env.ok);
    assert.ok(env.value.envelope.length < 17_500, `envelope is ${env.value.envelope.length} chars`);
    assert.match(env.value.envelope, /result\.json/);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

const BUSY = `export default async function (brig) {
  const prev = await brig.resume();
  if (prev) return { resumedFrom: prev.state };
  for (let i = 0; ; i++) {
    await brig.progress('tick ' + i);
    await brig.checkpoint({ i });
    await new Promise((r) => setTimeout(r, 200));
  }
}`;

test('a busy run past --timeout 4 ends watchdog_timeout (not lease expired) and resumes from its checkpoint', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home, { perStepTimeoutMs: 600_000, defaultMaxSteps: 1000 });
  try {
    const r = await c.supervisor.spawn({ task: 'busy', script: BUSY, timeout: 4000, max_steps: 1000 });
    assert.ok(r.ok);
    assert.equal(r.value.endReason, 'watchdog_timeout', `${r.value.endReason} ${r.value.error?.code} ${r.value.stderrTail}`);
    assert.equal(r.value.resumable, true);
    assert.equal(r.value.partial, true);
    assert.ok(r.value.stepsExecuted >= 5, `steps ${r.value.stepsExecuted}`);
    const again = await c.supervisor.resume(r.value.id);
    assert.ok(again.ok, JSON.stringify(!again.ok && again.error));
    const done = await c.supervisor.wait(again.value.id);
    assert.ok(done.ok);
    assert.equal(done.value.endReason, 'completed', done.value.stderrTail);
    const from = (done.value.result as { resumedFrom: { i: number } }).resumedFrom;
    assert.ok(from.i >= 3, JSON.stringify(done.value.result));
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

const FAN = `export default async function (brig) {
  const child = 'export default async function (brig) { await brig.progress("c"); await new Promise((r) => setTimeout(r, 300)); return brig.task; }';
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await brig.spawn({ task: brig.task + ' child ' + i, script: child, async: true })).runId);
  const ended = await brig.wait(ids);
  return ended.map((e) => [e.endReason, e.result]);
}`;

test('no admission deadlock: at the default caps, 5 parents each waiting on 3 async children all complete', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  // Default admission caps (maxConcurrent 5, maxChildrenPerAgent 5); a short queue timeout
  // makes a starved child fail fast instead of after 120 s.
  const c = await supervisorAt(home, { queueTimeoutMs: 45_000 });
  try {
    const parents = await Promise.all([0, 1, 2, 3, 4].map((i) => c.supervisor.spawn({ task: `parent ${i}`, script: FAN, async: true })));
    const ids = parents.map((p) => (assert.ok(p.ok), p.value.id));
    const ended = await Promise.all(ids.map((id) => c.supervisor.wait(id)));
    for (const [i, e] of ended.entries()) {
      assert.ok(e.ok);
      assert.equal(e.value.endReason, 'completed', `parent ${i}: ${e.value.error?.message} ${e.value.stderrTail}`);
      assert.deepEqual(e.value.result, [0, 1, 2].map((k) => ['completed', `parent ${i} child ${k}`]));
    }
    const children = (await c.supervisor.list()).filter((r) => r.parentRunId !== null);
    assert.equal(children.length, 15);
    assert.deepEqual([...new Set(children.map((r) => r.endReason))], ['completed']);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('spawn dedup keys on the whole request: the same task with another command is another run', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const a = await c.supervisor.spawn({ task: 'same words', kind: 'command', argv: ['sh', '-c', 'sleep 1; echo A > /workspace/out/a.txt'], async: true });
    const b = await c.supervisor.spawn({ task: 'same words', kind: 'command', argv: ['sh', '-c', 'sleep 1; echo B > /workspace/out/b.txt'], async: true });
    const again = await c.supervisor.spawn({ task: 'same words', kind: 'command', argv: ['sh', '-c', 'sleep 1; echo A > /workspace/out/a.txt'], async: true });
    assert.ok(a.ok && b.ok && again.ok);
    assert.notEqual(a.value.id, b.value.id, 'another command is another run');
    assert.equal(again.value.id, a.value.id, 'the very same request in flight is a duplicate');
    const [ea, eb] = await Promise.all([c.supervisor.wait(a.value.id), c.supervisor.wait(b.value.id)]);
    assert.ok(ea.ok && eb.ok);
    assert.deepEqual(ea.value.outputs.map((o) => o.path), ['a.txt']);
    assert.deepEqual(eb.value.outputs.map((o) => o.path), ['b.txt']);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
