/**
 * [INV-9] grep/jq for slicing: a SliceScheduler lane runs at most its slots at once (the
 * operator's and the children's together: 4, the old per-supervisor figure), at most `queue`
 * wait in a lane, the rest are refused rate_limited: many callers at once (children through
 * their brokers) cannot multiply each process's address-space cap without bound. Counted from
 * the kernel's process table.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { boundedExec } from '../../../src/slice/bounded-exec.js';
import { SliceScheduler, type SliceCaller } from '../../../src/slice/index.js';
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
test('[INV-9] slicing tools: at most the lanes\' slots run at once, `queue` wait per lane, the rest refused rate_limited', async () => {
  const s = new SliceScheduler();
  const slots = s.capacity('operator').tools + s.capacity('child').tools;
  assert.equal(slots, 4);
  const marker = `0.2${String(process.pid).padStart(7, '0')}`; // ≈ 0.2 s, a length unique to this test run
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, liveMarkers(marker))), 20);
  // Each child call from a run and tree of its own: only the slots and the queue limit them.
  const callers: SliceCaller[] = [
    ...Array.from({ length: s.capacity('child').tools + s.queue + 3 }, (_, i) => ({ lane: 'child' as const, runId: `r${i}`, treeId: `t${i}` })),
    ...Array.from({ length: 3 }, () => ({ lane: 'operator' as const })),
  ];
  const calls = callers.map((c) =>
    s
      .run(c, 'tool', Date.now() + 120_000, ({ remainingMs }) => boundedExec({ cmd: '/bin/sleep', args: [marker], timeoutMs: remainingMs, maxBytes: 1024, maxMemoryBytes: 256 * 1024 * 1024 }))
      .then(
        (r) => (r.code === 0 ? 'ran' : `exit ${r.code}`),
        (e: unknown) => (isBrigError(e, 'rate_limited') ? 'refused' : String(e)),
      ),
  );
  const results = await Promise.all(calls);
  clearInterval(sampler);
  assert.equal(results.filter((r) => r === 'refused').length, 3, 'past the children\'s queue: refused at once');
  assert.equal(results.filter((r) => r === 'ran').length, callers.length - 3, 'the queued ones all ran, the operator\'s too');
  assert.ok(peak > 0, 'the sampler saw the processes');
  assert.ok(peak <= slots, `at most ${slots} at once, saw ${peak}`);
});
