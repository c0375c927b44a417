import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RunStopwatch, renderTiming, splitTiming } from '../../../src/runs/run-timing.js';
import { TIMING_MARKS } from '../../../src/runs/types.js';
import { SCRIPT, setupSup, until } from './setup.js';

test('timing: the split is the differences of consecutive marks in the order they happened, and sums to the whole', () => {
  const s = splitTiming({ marks: { requested: 0, admitted: 1.5, launched: 1.5, leased: 4, jail_ready: 6, started: 10, exit_detected: 40, pending_end_durable: 41, collect_cleared: 42, outputs_read: 43, collected: 45, ended_durable: 50, released: 70, envelope: 71 } });
  assert.deepEqual(
    s.phases.map((p) => [p.phase, p.ms]),
    [['intake', 1.5], ['queue', 0], ['lease', 2.5], ['jail assign/create', 2], ['first instruction', 4], ['run, exit detected', 30], ['pending end durable', 1], ['collect: clear a redo', 1], ['collect: read outputs', 1], ['collect: index refs', 2], ['ended durable', 5], ['release', 20], ['envelope', 1]],
  );
  assert.equal(s.totalMs, 71);
  assert.equal(s.phases.reduce((a, p) => a + p.ms, 0), s.totalMs);
});

test('timing: the envelope before the release splits the same marks into envelope, then release', () => {
  const s = splitTiming({ marks: { requested: 0, ended_durable: 50, envelope: 52, released: 80 } });
  assert.deepEqual(s.phases.map((p) => [p.mark, p.ms]), [['ended_durable', 50], ['envelope', 2], ['released', 28]]);
  assert.equal(s.totalMs, 80);
});

test('timing: a run that never got a jail has only the phases it went through; none has no timing line but says why', () => {
  const s = splitTiming({ marks: { requested: 0, admitted: 2, launched: 2, ended_durable: 9, envelope: 9.5, released: 9.25 } });
  assert.deepEqual(s.phases.map((p) => p.mark), ['admitted', 'launched', 'ended_durable', 'released', 'envelope']);
  assert.equal(s.totalMs, 9.5);
  assert.match(renderTiming(undefined), /^no timing: /);
  assert.match(renderTiming({ marks: { requested: 0, admitted: 2 } }), /intake\s+2\.00 ms\s+100\.0 %\n\s+total\s+2\.00 ms\n$/);
});

test('timing: a stopwatch keeps the first stamp of a mark, on the clock it was given, from its start', () => {
  let now = 100;
  const sw = new RunStopwatch(() => now, 90);
  now = 103.456;
  sw.mark('admitted');
  now = 200;
  sw.mark('admitted');
  sw.mark('leased');
  assert.deepEqual(sw.toJSON(), { marks: { requested: 0, admitted: 13.46, leased: 110 } });
});

test('timing: a run the supervisor ran to its end has every mark on its saved record, and its phases sum to the whole', async () => {
  const { sup, jail, store } = await setupSup();
  try {
    const r = await sup.spawn({ task: 't', script: SCRIPT, async: true });
    assert.ok(r.ok);
    const id = r.value.id;
    await until(() => sup.peek(id)?.status === 'running', 'running');
    jail.jails.get(id)!.exit(0);
    const w = await sup.wait(id);
    assert.ok(w.ok);
    await until(async () => (await store.load(id))?.timing?.marks.envelope !== undefined, 'timing saved');
    const saved = (await store.load(id))!.timing!;
    assert.deepEqual(Object.keys(saved.marks).sort(), [...TIMING_MARKS].sort());
    const s = splitTiming(saved);
    assert.equal(s.phases.length, TIMING_MARKS.length - 1);
    assert.ok(Math.abs(s.phases.reduce((a, p) => a + p.ms, 0) - s.totalMs) < 0.05);
    assert.ok(s.phases.every((p) => p.ms >= 0));
  } finally {
    await sup.close();
  }
});
