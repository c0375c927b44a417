/**
 * [INV-9] from inside a real jail: limits are effective, not only recorded. The engine turns
 * NanoCpus into a CFS quota with integer arithmetic, so a request of 0.000001 CPU used to be
 * created with cpu.cfs_quota_us -1 (no limit) — and verify, comparing the engine's echo with
 * the same body, passed it.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { requireEngine } from '../../helpers/engine.js';
import { isBrigError } from '../../../src/util/errors.js';
import { LIMIT_FLOORS } from '../../../src/jail/docker/limits.js';
import { driver, runToEnd, spec, sweepOwn } from './helpers.js';

after(sweepOwn);

// req: limits:kernel-enforced limits:within-parent
test('[INV-9] from inside a real jail: the smallest allowed cpu is a positive CFS quota the kernel enforces', async (t) => {
  if (!(await requireEngine(t))) return;
  // A second of busy loop at 0.01 CPU: the cgroup's own cpu.stat shows the throttling.
  const sh = [
    'c=/sys/fs/cgroup/cpu',
    'if [ -f $c/cpu.cfs_quota_us ]; then read q < $c/cpu.cfs_quota_us; read p < $c/cpu.cfs_period_us; else read q p < /sys/fs/cgroup/cpu.max; c=/sys/fs/cgroup; fi',
    'timeout 1 sh -c "while :; do :; done"',
    'thr=$(grep -E "^nr_throttled" $c/cpu.stat)',
    'echo "$q $p $thr"',
  ].join('; ');
  const limits = { memoryMb: 64, cpu: LIMIT_FLOORS.cpu, pids: LIMIT_FLOORS.pids, tmpfsMb: LIMIT_FLOORS.tmpfsMb, diskMb: LIMIT_FLOORS.diskMb };
  const { exit, tails } = await runToEnd(spec('cpufloor', ['sh', '-c', sh], { limits }));
  assert.equal(exit.exitCode, 0, tails.stderrTail);
  const [quota, period, , throttled] = tails.stdoutTail.trim().split(/\s+/);
  assert.equal(quota, '1000', `the jail's own cpu.cfs_quota_us: ${tails.stdoutTail}`);
  assert.equal(period, '100000');
  assert.ok(Number(throttled) > 0, `the kernel throttled the busy loop: ${tails.stdoutTail}`);
});

// req: limits:within-parent
test('[INV-9] a cpu request below the floor is refused with invalid_input naming it, before any engine object exists', async (t) => {
  if (!(await requireEngine(t))) return;
  for (const limits of [
    { memoryMb: 64, cpu: 0.000001, pids: 32, tmpfsMb: 4, diskMb: 64 },
    { memoryMb: 64, cpu: 0.009, pids: 32, tmpfsMb: 4, diskMb: 64 },
    { memoryMb: 64, cpu: 1, pids: 8, tmpfsMb: 4, diskMb: 64 },
  ]) {
    const s = spec('tiny', ['true'], { limits });
    await assert.rejects(driver.create(s), (e) => isBrigError(e, 'invalid_input') && /is below the floor of (0\.01|16)/.test(e.message));
    assert.deepEqual((await driver.listLabelled()).filter((r) => r.runId === s.runId), [], 'no container or volume was made');
  }
});
