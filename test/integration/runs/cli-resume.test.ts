/**
 * `brig resume` keeps the CLI's promises (issue 27 item 7): `--timeout` takes the one duration
 * syntax (`1m`, as spawn does) and, through a real daemon, the command follows the new run to
 * its end like `spawn` (its result in --json, exit 0), `--async` returning at admission.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { runCli } from '../../helpers/cli.js';
import { RESUMABLE, freshHome, leftovers } from './fixture.js';

test('resume --timeout 1m through a daemon follows the new run to its end; --async returns at admission', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const file = path.join(home, 'job.mjs');
  fs.writeFileSync(file, RESUMABLE);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  try {
    const timedOut = async () => {
      const s = await runCli(['spawn', '--script', file, '--timeout', '3s', '--json'], { home });
      const first = JSON.parse(s.out) as { runId: string; endReason: string };
      assert.equal(first.endReason, 'watchdog_timeout', s.err);
      return first.runId;
    };
    const id = await timedOut();
    const r = await runCli(['resume', id, '--timeout', '1m', '--json'], { home });
    assert.equal(r.code, 0, r.err);
    const again = JSON.parse(r.out) as { runId: string; status: string; endReason: string; result: unknown };
    assert.equal(again.status, 'ended', 'followed to its end, as spawn is');
    assert.equal(again.endReason, 'completed');
    assert.deepEqual(again.result, { resumedFrom: { i: 5 }, untrusted: true });

    const id2 = await timedOut();
    const a = await runCli(['resume', id2, '--async', '--json'], { home });
    assert.equal(a.code, 0, a.err);
    const admitted = JSON.parse(a.out) as { runId: string; status: string };
    assert.notEqual(admitted.status, 'ended');
    const w = await runCli(['wait', admitted.runId, '--json'], { home });
    assert.equal((JSON.parse(w.out) as { runs: { endReason: string }[] }).runs[0]!.endReason, 'completed');

    const bad = await runCli(['resume', id2, '--timeout', 'soon'], { home });
    assert.equal(bad.code, 2);
    assert.match(bad.err, /takes a duration \(90s, 30m, 24h, 7d\)/);
  } finally {
    await d.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
