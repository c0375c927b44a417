/**
 * [INV-7] The ledger on a file system that fills up (a real ext4 on a loop device, filled by
 * the test): appends never throw ENOSPC, the lines are held in memory in chain order, the
 * chain on disk stays valid while they are (verify passes, naming a torn last line), and
 * when space returns every held line is written where it belongs — the whole chain verifies,
 * seq without a gap, with a `ledger.resumed` line saying how many lines were held. Past the
 * held bound, events are counted (`ledger.unrecorded`), never silently lost. Needs root.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { FileLedger, verifyLedger } from '../../../src/ledger/index.js';
import { isBrigError } from '../../../src/util/errors.js';
import { smallFs } from '../../helpers/small-fs.js';

async function until(cond: () => boolean, what: string, tries: number): Promise<void> {
  for (let i = 0; i < tries * 10; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never happened: ${what}`);
}

type Line = Record<string, unknown> & { seq: number; type: string };

function segmentLines(file: string): Line[] {
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line);
}

const event = (i: number) => ({ type: 'run.progress', runId: `r-${String(i).padStart(16, '0')}`, stepsExecuted: i });

test('[INV-7] a full disk never throws out of the ledger: lines are held in order, the disk keeps a valid chain, and all of it is written once space returns', async (t) => {
  const disk = await smallFs(t, 16);
  if (!disk) return;
  const dir = path.join(disk.dir, 'ledger');
  const l = new FileLedger({ dir, retryMs: 20 });
  for (let i = 0; i < 10; i++) l.append(event(i));
  disk.fill();
  // ~300 KB of lines: far past any block the segment still had room in.
  for (let i = 10; i < 2010; i++) assert.doesNotThrow(() => l.append(event(i)));
  const held = l.backlog();
  assert.ok(held.lines > 0 && held.since !== null, `lines are held while the disk is full: ${JSON.stringify(held)}`);
  const during = verifyLedger(dir);
  assert.equal(during.ok, true, `the chain on disk is valid while lines are held: ${JSON.stringify(during.bad)}`);
  assert.ok(during.lines < 2010, 'not every line reached the disk');

  disk.unfill();
  await until(() => l.backlog().lines === 0, 'the held lines written once space returned', 30);
  await l.close();
  const after = verifyLedger(dir);
  assert.equal(after.ok, true, JSON.stringify(after.bad));
  assert.deepEqual(after.torn, []);
  const lines = segmentLines(l.segment);
  assert.deepEqual(lines.map((x) => x.seq), lines.map((_, i) => i), 'one chain, no gap');
  const progress = lines.filter((x) => x.type === 'run.progress').map((x) => x.stepsExecuted);
  assert.deepEqual(progress, Array.from({ length: 2010 }, (_, i) => i), 'every event, once, in the order appended');
  const resumed = lines.find((x) => x.type === 'ledger.resumed');
  assert.ok(resumed && typeof resumed.heldLines === 'number' && resumed.heldLines > 0 && resumed.unrecorded === 0, JSON.stringify(resumed));
  assert.equal(lines.at(-1)?.type, 'ledger.closed');
});

test('[INV-7] past the held bound the ledger counts what it cannot hold, and says so by type once space returns', async (t) => {
  const disk = await smallFs(t, 16);
  if (!disk) return;
  const dir = path.join(disk.dir, 'ledger');
  const l = new FileLedger({ dir, retryMs: 20, maxHeldBytes: 16 * 1024 });
  l.append(event(0));
  disk.fill();
  for (let i = 1; i <= 1000; i++) l.append(event(i));
  const b = l.backlog();
  assert.ok(b.bytes <= 16 * 1024 + 512, `memory stays bounded: ${JSON.stringify(b)}`);
  assert.ok(b.unrecorded > 0, 'events past the bound are counted');
  disk.unfill();
  await until(() => l.backlog().lines === 0 && l.backlog().unrecorded === 0, 'held lines and counts written', 30);
  await l.close();
  assert.equal(verifyLedger(dir).ok, true);
  const lines = segmentLines(l.segment);
  const chained = lines.filter((x) => x.type === 'run.progress').length;
  const counted = lines.filter((x) => x.type === 'ledger.unrecorded').reduce((n, x) => n + (x.count as number), 0);
  assert.ok(counted > 0);
  assert.equal(chained + counted, 1001, 'every event is either on the chain or in a count');
  assert.deepEqual(lines.filter((x) => x.type === 'ledger.unrecorded').map((x) => x.of), ['run.progress']);
});

test('[INV-7] closing while the disk is full says how many lines were lost (storage_full) and leaves what a crash leaves: a ledger that verifies', async (t) => {
  const disk = await smallFs(t, 16);
  if (!disk) return;
  const dir = path.join(disk.dir, 'ledger');
  const l = new FileLedger({ dir, retryMs: 20 });
  for (let i = 0; i < 5; i++) l.append(event(i));
  disk.fill();
  for (let i = 5; i < 1005; i++) l.append(event(i));
  await assert.rejects(l.close(), (e) => isBrigError(e) && e.code === 'storage_full' && /ledger line\(s\) are held/.test(e.message));
  disk.unfill();
  const r = verifyLedger(dir);
  assert.equal(r.ok, true, JSON.stringify(r.bad));
  assert.deepEqual(r.open, [l.segment], 'the segment stays open, as after a crash');
});
