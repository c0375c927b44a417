/**
 * `brig graph explain` on a real daemon (the HTTP route `graphExplain` under the CLI) over a
 * small graph of command children: a node that fails and is retried once, a node skipped
 * because its `when` cannot hold, a handler that runs on the failure, and a root that waits
 * for a slot (max_parallel 1). Each attempt shows why it came, how it ended, and the lease its
 * run got (the one its run record names). dist/ must be built.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome, recordOnDisk } from '../daemon/serve-proc.js';
import type { GraphExplanation, GraphRecord } from '../../../src/protocol/index.js';

test('brig graph explain: per node its attempts, end reasons, the retry and why, the skip and which when failed, the waits (dependencies, a slot) and each attempt\'s lease', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve();
  const file = path.join(h.home, 'explain.json');
  const cmd = (id: string, sh: string, extra: Record<string, unknown> = {}) => ({ id, kind: 'command', spawn: { task: `node ${id}`, argv: ['sh', '-c', sh] }, ...extra });
  fs.writeFileSync(file, JSON.stringify({
    graph: 'brig/v1',
    label: 'explained',
    concurrency: { max_parallel: 1 },
    on_failure: { policy: 'continue' },
    nodes: [
      cmd('a', 'echo a > /workspace/out/a.txt'),
      cmd('flaky', 'exit 3', { retry: { max: 1, on: ['failed'] } }),
      cmd('after', 'true', { depends_on: ['flaky'] }),
      cmd('handle', 'echo handled > /workspace/out/h.txt', { depends_on: ['flaky'], when: { results: { flaky: 'failed' } } }),
    ],
  }));
  const r = await h.run(['graph', 'run', file, '--wait', '--json']);
  const rec = (JSON.parse(r.stdout) as { graph: GraphRecord }).graph;
  assert.deepEqual(rec.nodes.map((n) => [n.id, n.state, n.attempts.length]), [['a', 'succeeded', 1], ['flaky', 'failed', 2], ['after', 'skipped', 0], ['handle', 'succeeded', 1]], `${r.stderr}${r.stdout}`);

  const j = await h.run(['graph', 'explain', rec.id, '--json']);
  assert.equal(j.code, 0, j.stderr);
  const x = (JSON.parse(j.stdout) as { explanation: GraphExplanation }).explanation;
  const node = (id: string) => x.nodes.find((n) => n.id === id)!;
  assert.deepEqual([x.graphId, x.state, x.parallel, x.onFailure, x.onRestart], [rec.id, rec.state, 1, 'continue', 'fail']);

  // The retry: two attempts, the second saying why it came; each its own run and lease.
  const flaky = node('flaky');
  assert.deepEqual(flaky.retry, { max: 1, on: ['failed'], idempotent: false });
  assert.deepEqual(flaky.attempts.map((a) => [a.n, a.result]), [[1, 'failed'], [2, 'failed']]);
  assert.equal(flaky.attempts[0]!.why, 'first');
  assert.match(flaky.attempts[1]!.why, /^retry 1 of 1: attempt 1 ended failed \(\w+\), listed in retry\.on \[failed\]$/);
  for (const a of [...flaky.attempts, ...node('a').attempts, ...node('handle').attempts]) {
    const run = recordOnDisk(h.home, a.runId!);
    assert.ok(run?.leaseId, `run ${a.runId} names its lease`);
    assert.equal(a.lease?.id, run.leaseId, 'the lease its run got');
    assert.equal(a.lease.depth, 1);
    assert.ok(Array.isArray(a.lease.caps) && a.lease.profile.length > 0);
    assert.equal(a.endReason, run.endReason);
  }
  assert.notEqual(flaky.attempts[0]!.runId, flaky.attempts[1]!.runId);

  // The skip, with the when that failed and on which dependency; the handler ran on it.
  const after = node('after');
  assert.deepEqual([after.state, after.skipReason, after.attempts.length], ['skipped', 'unsatisfiable', 0]);
  assert.equal(after.skipped, 'when all_succeeded cannot hold: flaky failed');
  assert.equal(node('handle').when, 'results flaky=failed');
  assert.match(node('handle').waited.join('\n'), /^waited \S+ for flaky \(the last to end: flaky\)$/m);

  // max_parallel 1: the second root waited for a slot while the first ran.
  const slot = [node('a'), flaky].flatMap((n) => n.waited).filter((w) => /^waited \S+ for a slot: max 1 running \((a|flaky)\)$/.test(w));
  assert.equal(slot.length, 1, JSON.stringify([node('a').waited, flaky.waited]));

  // The text an operator reads says the same.
  const text = await h.run(['graph', 'explain', rec.id]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^graph g-[a-z0-9]+ \(explained\): failed \(sink_not_succeeded\)$/m);
  assert.match(text.stdout, /^after {2}command {2}skipped \(unsatisfiable\)\n {2}depends on flaky · when all_succeeded\n {2}skipped: when all_succeeded cannot hold: flaky failed$/m);
  assert.match(text.stdout, /^ {2}a2 retry 1 of 1: attempt 1 ended failed/m);
  assert.match(text.stdout, /^ {5}lease \S+ \(profile \S+, depth 1\)(, revoked by \S+)?: granted exec/m);

  const unknown = await h.run(['graph', 'explain', 'g-0000000000']);
  assert.equal(unknown.code, 4, unknown.stderr);
  await serve.signal('SIGTERM');
});
