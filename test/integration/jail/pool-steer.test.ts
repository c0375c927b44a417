/**
 * [INV-2] A child cannot steer the warm pool: shapes are learned only from operator spawns,
 * the operator-primed shape is never evicted, and no child-asked shape is persisted for the
 * next start. Real engine, real slots.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WarmPool } from '../../../src/jail/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { driver, spec, sweepOwn } from './helpers.js';

after(sweepOwn);

const PRIMED = { memoryMb: 128, cpu: 1, pids: 64, tmpfsMb: 16, diskMb: 64 };

// req: jail:fresh
test("[INV-2] children's spawns of new limit shapes learn nothing: the primed shape stays warm, nothing a child asked is kept for the next start", async (t) => {
  if (!(await requireEngine(t))) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-steer-'));
  const shapesFile = path.join(dir, 'warm-shapes.json');
  const pool = new WarmPool({ driver, size: 1, maxShapes: 2, brokersDir: dir, prime: [PRIMED], shapesFile });
  t.after(async () => {
    await pool.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await pool.start();
  await pool.filled();
  // Three new shapes, each asked by a child (a grandchild spawn through a broker): each goes cold.
  for (const memoryMb of [130, 132, 134]) {
    const s = spec(`child-${memoryMb}`, ['true'], { limits: { ...PRIMED, memoryMb }, brokerDir: fs.mkdtempSync(path.join(dir, 'run-')), askedBy: 'child' });
    const j = await pool.create(s);
    try {
      assert.equal(j.verified?.pooled, undefined, 'a child-asked shape is served cold');
    } finally {
      await j.destroy();
    }
  }
  await pool.filled();
  const stats = pool.stats();
  assert.deepEqual(stats.map((s) => s.shape.split('|')[1]), ['128'], 'only the primed shape is kept');
  assert.equal(stats[0]!.ready, 1, 'and still warm');
  await pool.close();
  const kept = fs.existsSync(shapesFile) ? (JSON.parse(fs.readFileSync(shapesFile, 'utf8')) as { memoryMb: number }[]).map((x) => x.memoryMb) : [];
  assert.ok(!kept.some((m) => m !== 128), `no child-asked shape is kept for the next start: ${JSON.stringify(kept)}`);
});

// req: jail:fresh
test('[INV-2] the control: an operator spawn of a new shape is learned and kept; the primed shape is still never evicted by it', async (t) => {
  if (!(await requireEngine(t))) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-steer-'));
  const shapesFile = path.join(dir, 'warm-shapes.json');
  const pool = new WarmPool({ driver, size: 1, maxShapes: 2, brokersDir: dir, prime: [PRIMED], shapesFile });
  t.after(async () => {
    await pool.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await pool.start();
  await pool.filled();
  for (const memoryMb of [130, 132]) {
    const j = await pool.create(spec(`op-${memoryMb}`, ['true'], { limits: { ...PRIMED, memoryMb }, brokerDir: fs.mkdtempSync(path.join(dir, 'run-')), askedBy: 'operator' }));
    await j.destroy();
  }
  await pool.filled();
  const shapes = pool.stats().map((s) => s.shape.split('|')[1]).sort();
  assert.ok(shapes.includes('128'), `the primed shape is never evicted: ${shapes.join(', ')}`);
  assert.ok(shapes.includes('132'), 'the operator\'s newest shape is learned');
  await pool.close();
  const kept = (JSON.parse(fs.readFileSync(shapesFile, 'utf8')) as { memoryMb: number }[]).map((x) => x.memoryMb);
  assert.ok(kept.includes(132), `the operator's shape is kept for the next start: ${JSON.stringify(kept)}`);
});
