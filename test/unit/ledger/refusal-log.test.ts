import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_KINDS, RefusalLog, type LedgerEvent } from '../../../src/ledger/index.js';
import { setupSup, SCRIPT } from '../runs/setup.js';

function log(windowMs = 1000) {
  const lines: LedgerEvent[] = [];
  const clock = { t: 0 };
  const l = new RefusalLog({ type: 'run.refused', write: (ev) => lines.push(ev), windowMs, now: () => clock.t });
  return { l, lines, clock };
}

const total = (lines: LedgerEvent[]) => lines.reduce((n, e) => n + (typeof e.count === 'number' ? e.count : 1), 0);

test('the first refusal of a kind is a line at once; repeats are one counted line per window; Σ count is every refusal', () => {
  const { l, lines, clock } = log();
  for (let i = 0; i < 500; i++) l.note({ code: 'queue_full', parentRunId: null, depth: 1 });
  assert.equal(lines.length, 1, 'one line at once, the repeats held as a count');
  assert.deepEqual(lines[0], { type: 'run.refused', code: 'queue_full', parentRunId: null, depth: 1 });
  clock.t = 800;
  l.flush();
  assert.equal(lines.length, 2);
  assert.deepEqual(lines[1], { type: 'run.refused', code: 'queue_full', parentRunId: null, depth: 1, count: 499, windowMs: 800 });
  assert.equal(total(lines), 500);
  l.flush();
  assert.equal(lines.length, 2, 'an empty window writes nothing');
});

test('kinds are their fields, whatever their order: another caller or another code is its own line', () => {
  const { l, lines } = log();
  l.note({ code: 'queue_full', parentRunId: 'r-0000000000000001', depth: 2 });
  l.note({ depth: 2, parentRunId: 'r-0000000000000001', code: 'queue_full' });
  l.note({ code: 'queue_full', parentRunId: 'r-0000000000000002', depth: 2 });
  l.note({ code: 'storage_full', parentRunId: 'r-0000000000000001', depth: 2 });
  assert.equal(lines.length, 3);
  l.flush();
  assert.equal(lines.length, 4);
  assert.equal(lines[3]!.count, 1);
  assert.equal(total(lines), 4);
});

test('memory is bounded: past MAX_KINDS kinds the log starts over, writing more lines but losing no refusal', () => {
  const { l, lines } = log();
  for (let i = 0; i <= MAX_KINDS; i++) l.note({ code: 'queue_full', parentRunId: `r-${i}`, depth: 2 });
  l.note({ code: 'queue_full', parentRunId: 'r-0', depth: 2 });
  l.flush();
  assert.equal(total(lines), MAX_KINDS + 2);
  assert.equal(lines.filter((e) => e.parentRunId === 'r-0').length, 2, 'forgotten, then written at once again');
});

test('a supervisor refusing 300 spawns of one caller writes a handful of run.refused lines whose counts add up to 300', async () => {
  const { sup, ledger } = await setupSup({ settings: { maxChildrenPerAgent: 1, maxConcurrent: 1, maxQueued: 1 } });
  assert.ok((await sup.spawn({ task: 'a', script: SCRIPT, async: true })).ok);
  assert.ok((await sup.spawn({ task: 'b', script: SCRIPT, async: true })).ok);
  for (let i = 0; i < 300; i++) {
    const r = await sup.spawn({ task: `c${i}`, script: SCRIPT, async: true });
    assert.equal(r.ok ? 'admitted' : r.error.code, 'queue_full');
  }
  const before = ledger.events.filter((e) => e.type === 'run.refused');
  assert.equal(before.length, 1, 'the first at once; the rest held as a count');
  await sup.close();
  const lines = ledger.events.filter((e) => e.type === 'run.refused');
  assert.equal(lines.length, 2, 'closing writes the count');
  assert.equal(total(lines), 300);
  assert.deepEqual(Object.keys(lines[1]!).sort(), ['code', 'count', 'depth', 'parentRunId', 'type', 'windowMs'], 'content-free: ids, codes, counts');
});
