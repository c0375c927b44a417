/**
 * A pooled jail's out/ is collected like a cold one's: known empty by the engine's stat when the
 * child wrote nothing (no archive read, issue 26), and every file it did write — at once, deep,
 * renamed in — collected. The pool's assignment must not touch out/ on its way in, or every
 * pooled run would pay for an archive. Real engine, real slots.
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

const SHAPE = { memoryMb: 128, cpu: 1, pids: 64, tmpfsMb: 16, diskMb: 32 };
const CAPS = { perFileBytes: 1 << 20, perRunBytes: 4 << 20, maxEntries: 100 };

// req: end:output-kept
test('[INV-8] a pooled jail whose child wrote nothing is known empty by a stat (no archive); what a pooled child writes is still collected', async (t) => {
  if (!(await requireEngine(t))) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-pool-collect-'));
  const pool = new WarmPool({ driver, size: 1, maxShapes: 1, brokersDir: dir, prime: [SHAPE] });
  t.after(async () => {
    await pool.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await pool.start();
  const cases: [string, string, string[]][] = [
    ['nothing', 'true', []],
    ['at-once', 'echo x > out/a', ['a']],
    ['deep', 'mkdir -p out/d/e && echo y > out/d/e/b', ['d/e/b']],
    ['made-removed', 'echo z > out/t && rm out/t', []],
    ['renamed-in', 'echo w > w && mv w out/w', ['w']],
  ];
  for (const [tag, sh, want] of cases) {
    await pool.filled();
    const j = await pool.create(spec(`pc-${tag}`, ['sh', '-c', sh], { limits: SHAPE, brokerDir: fs.mkdtempSync(path.join(dir, 'run-')), askedBy: 'operator' }));
    try {
      assert.ok(j.verified?.pooled, `${tag}: served from the pool`);
      await j.start();
      const exit = await j.wait();
      assert.equal(exit.exitCode, 0, `${tag}: ${j.tails().stderrTail}`);
      const rep = await j.collect(path.join(dir, `out-${tag}`), CAPS);
      assert.deepEqual(rep.files.map((f) => f.path).sort(), want, `${tag}: collected`);
      // Only a child that left out/ as it found it is known by the stat alone.
      assert.equal(rep.unchanged, tag === 'nothing' ? true : undefined, `${tag}: ${tag === 'nothing' ? 'no archive read' : 'the archive read'}`);
    } finally {
      await j.destroy();
    }
  }
});
