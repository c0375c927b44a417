/**
 * [INV-9] grep/jq for slicing run at most TOOL_CONCURRENCY at once across the supervisor, and at
 * most TOOL_QUEUE wait: many callers at once (children through their brokers) cannot multiply
 * each process's address-space cap without bound. Counted from the kernel's process table.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { boundedExec, TOOL_CONCURRENCY, TOOL_QUEUE } from '../../../src/slice/bounded-exec.js';
import { isBrigError } from '../../../src/util/errors.js';

/** Our children whose command line is the marker sleep. */
function liveMarkers(marker: string): number {
  let n = 0;
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) n++;
    } catch {
      // gone
    }
  }
  return n;
}

// req: limits:helper-os-caps
test('[INV-9] slicing tools: at most TOOL_CONCURRENCY processes at once, TOOL_QUEUE waiting, the rest refused rate_limited', async () => {
  const marker = `0.2${String(process.pid).padStart(7, '0')}`; // ≈ 0.2 s, a length unique to this test run
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, liveMarkers(marker))), 20);
  const calls = Array.from({ length: TOOL_CONCURRENCY + TOOL_QUEUE + 3 }, () =>
    boundedExec({ cmd: '/bin/sleep', args: [marker], timeoutMs: 10_000, maxBytes: 1024, maxMemoryBytes: 256 * 1024 * 1024 }).then(
      (r) => (r.code === 0 ? 'ran' : `exit ${r.code}`),
      (e: unknown) => (isBrigError(e, 'rate_limited') ? 'refused' : String(e)),
    ),
  );
  const results = await Promise.all(calls);
  clearInterval(sampler);
  assert.equal(results.filter((r) => r === 'refused').length, 3, 'past the queue: refused at once');
  assert.equal(results.filter((r) => r === 'ran').length, TOOL_CONCURRENCY + TOOL_QUEUE, 'the queued ones all ran');
  assert.ok(peak > 0, 'the sampler saw the processes');
  assert.ok(peak <= TOOL_CONCURRENCY, `at most ${TOOL_CONCURRENCY} at once, saw ${peak}`);
});
