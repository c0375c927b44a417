import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { runCli } from '../../helpers/cli.js';
import { leftovers } from '../runs/fixture.js';

/** How real runs end, as exit codes (docs/cli.md): 1 a failed child, 9 missing outputs, 8 a wait that gave up. */

function tmpHome(t: { after: (fn: () => void) => void }): string {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-exit-'));
  t.after(() => fs.rmSync(h, { recursive: true, force: true }));
  return h;
}

test('brig spawn: a child that fails exits 1, one that completes without its --expect file exits 9, both named', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = tmpHome(t);
  const failed = await runCli(['spawn', '--', 'sh', '-c', 'exit 3'], { home });
  assert.equal(failed.code, 1, failed.err);
  assert.match(failed.out, /^run r-[0-9a-f]{16} failed \(exit 3\)/);
  const missing = await runCli(['spawn', '--expect', 'report.json', '--', 'true'], { home });
  assert.equal(missing.code, 9, missing.err);
  assert.match(missing.err, /missing expected output: report\.json/);
  // A failed run that also lacks its output is a failed run: 1 wins.
  const both = await runCli(['spawn', '--expect', 'report.json', '--', 'false'], { home });
  assert.equal(both.code, 1);
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('brig wait --timeout over the daemon: 8 while the run goes on, then 0 once it has completed', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = tmpHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  try {
    const s = await runCli(['spawn', '--async', '--json', '--', 'sleep', '3'], { home });
    assert.equal(s.code, 0, s.err);
    const id = (JSON.parse(s.out) as { runId: string }).runId;
    const early = await runCli(['wait', id, '--timeout', '0.5', '--json'], { home });
    assert.equal(early.code, 8, early.err);
    assert.notEqual((JSON.parse(early.out) as { runs: { status: string }[] }).runs[0]!.status, 'ended');
    const late = await runCli(['wait', id, '--timeout', '30'], { home });
    assert.equal(late.code, 0, late.err);
  } finally {
    await d.shutdown();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
