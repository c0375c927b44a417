/**
 * A daemon that dies (SIGKILL: no drain, no clean-up) loses no run that could still finish:
 * a script child's broker client reconnects to the restarted daemon and re-sends its calls; a
 * container that exited while no daemon ran is collected at the next start; a collection cut
 * off mid-way is redone and its temp files removed (INV-8). Real `brig serve` processes on a
 * real engine; dist/ must be built.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ApiClient } from '../../../src/client/index.js';
import type { RunRecord, SpawnRequestInput } from '../../../src/runs/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { leftovers, until } from '../runs/fixture.js';
import { brokerSockets, daemonHome, recordOnDisk, resultTemps, type DaemonHome, type Serve } from './serve-proc.js';

const TWO_STEPS = `import { writeFileSync } from 'node:fs';
export default async function (brig) {
  await brig.progress('a');
  await new Promise((r) => setTimeout(r, 4000));
  await brig.progress('b');
  await brig.checkpoint({ i: 1 });
  writeFileSync('/workspace/out/done.txt', 'done');
  return { ok: true };
}`;

async function spawnAsync(sock: string, req: SpawnRequestInput): Promise<RunRecord> {
  const api = new ApiClient(sock);
  try {
    const r = await api.spawn({ ...req, async: true });
    assert.ok(r.ok, r.ok ? '' : `${r.error.code}: ${r.error.message}`);
    return r.value;
  } finally {
    await api.close();
  }
}

/** Waits (through the daemon) for the run to end; fails with the record and the daemon's stderr if it does not. */
async function waitEnded(serve: Serve, runId: string, timeoutMs = 60_000): Promise<RunRecord> {
  const api = new ApiClient(serve.socket);
  try {
    const w = await api.wait(runId, { timeoutMs });
    assert.ok(w.ok, w.ok ? '' : `${w.error.code}: ${w.error.message}`);
    assert.equal(w.value.status, 'ended', `run did not end: ${JSON.stringify(w.value)}\nserve stderr: ${serve.stderr()}`);
    return w.value;
  } finally {
    await api.close();
  }
}

/** Nothing of the home's is left in the engine, and no broker socket on disk. */
async function assertNothingLeft(h: DaemonHome): Promise<void> {
  assert.deepEqual(await leftovers(h.home), [], 'no container or volume labelled for this home');
  assert.deepEqual(brokerSockets(h.home), [], 'no broker socket under the home\'s broker runtime directory');
}

function describe(r: RunRecord | undefined, serve: Serve): string {
  return `record: ${JSON.stringify(r)}\nserve stderr: ${serve.stderr()}`;
}

test('[INV-8] a script child survives a SIGKILLed daemon: its broker calls reach the restarted one and the run completes', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const first = await h.serve();
  const run = await spawnAsync(first.socket, { task: 'outlive the daemon', script: TWO_STEPS });
  const api = new ApiClient(first.socket);
  try {
    await until(async () => {
      const r = await api.get(run.id);
      return r?.status === 'running' && r.stepsExecuted >= 1;
    }, 'running, first step taken');
  } finally {
    await api.close();
  }
  await first.signal('SIGKILL');
  assert.equal(recordOnDisk(h.home, run.id)?.status, 'running', 'the kill landed mid-run (before the second step)');

  const second = await h.serve();
  assert.deepEqual(second.report.reattached, [run.id]);
  assert.deepEqual(second.report.ghostSwept, []);
  const r = await waitEnded(second, run.id);
  const why = describe(r, second);
  assert.equal(r.endReason, 'completed', why);
  assert.deepEqual(r.result, { ok: true }, why);
  assert.ok(r.stepsExecuted >= 2, why);
  assert.equal(r.hasCheckpoint, true, why);
  assert.deepEqual(r.outputs, [{ path: 'done.txt', bytes: 4 }], why);
  assert.equal(fs.readFileSync(path.join(r.resultDir!, 'done.txt'), 'utf8'), 'done');
  await assertNothingLeft(h);
});

// req: end:output-kept
test('[INV-8] a command child that exits while no daemon runs is collected at the next start, not ghost-swept', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const first = await h.serve();
  const run = await spawnAsync(first.socket, { task: 'exit alone', kind: 'command', argv: ['sh', '-c', 'sleep 3; echo hi > /workspace/out/x.txt'] });
  await until(() => recordOnDisk(h.home, run.id)?.status === 'running', 'running', 300);
  await first.signal('SIGKILL');
  // The child finishes (sleep 3) while nothing watches it.
  await new Promise((r) => setTimeout(r, 5000));
  assert.equal(recordOnDisk(h.home, run.id)?.status, 'running', 'no daemon saw it end');

  const second = await h.serve();
  assert.deepEqual(second.report.reattached, [run.id]);
  assert.deepEqual(second.report.ghostSwept, []);
  const r = await waitEnded(second, run.id);
  const why = describe(r, second);
  assert.equal(r.endReason, 'completed', why);
  assert.equal(r.exitCode, 0, why);
  assert.equal(r.error, null, why);
  assert.deepEqual(r.outputs, [{ path: 'x.txt', bytes: 3 }], why);
  assert.equal(fs.readFileSync(path.join(r.resultDir!, 'x.txt'), 'utf8'), 'hi\n');
  await assertNothingLeft(h);
});

// req: end:output-kept
test('[INV-8] a daemon SIGKILLed mid-materialization: the next start removes the temp files and redoes the collection in full', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  // Under the default lease's resultBytes (64 MiB), so the collection is accepted whole.
  const BIG = 60_000_000;
  const first = await h.serve();
  const run = await spawnAsync(first.socket, { task: 'big output', kind: 'command', argv: ['sh', '-c', `head -c ${BIG} /dev/zero > /workspace/out/big.bin`] });
  // Catch the copy in flight: the record says `materializing` (its pending end saved) and
  // the collection's temp directory exists under results/ until it is renamed into place.
  let seen: RunRecord | undefined;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    seen = recordOnDisk(h.home, run.id);
    if (seen?.status === 'ended' || (seen?.status === 'materializing' && resultTemps(h.home).length > 0)) break;
    await new Promise((r) => setTimeout(r, 2));
  }
  await first.signal('SIGKILL');
  const atKill = recordOnDisk(h.home, run.id);
  assert.equal(atKill?.status, 'materializing', `the kill landed mid-collection: ${describe(atKill, first)}`);
  assert.equal(atKill?.pendingEnd?.reason, 'completed', 'the pending end was saved before the copy');
  const tempsAtKill = resultTemps(h.home);
  assert.ok(tempsAtKill.length > 0, 'the kill left a half-done collection behind');
  t.diagnostic(`left by the kill: ${tempsAtKill.join(', ')}`);

  const second = await h.serve();
  assert.deepEqual(second.report.reattached, [run.id]);
  assert.deepEqual(second.report.ghostSwept, []);
  assert.ok((second.report.interrupted?.removed ?? 0) >= 1, `the start removed the temps (${tempsAtKill.join(', ')}): ${JSON.stringify(second.report.interrupted)}`);
  const r = await waitEnded(second, run.id);
  const why = describe(r, second);
  assert.equal(r.endReason, 'completed', why);
  assert.equal(r.pendingEnd, undefined, why);
  assert.deepEqual(r.outputs, [{ path: 'big.bin', bytes: BIG }], why);
  assert.equal(fs.statSync(path.join(r.resultDir!, 'big.bin')).size, BIG);
  assert.deepEqual(resultTemps(h.home), [], 'no `.tmp-` path under $BRIG_HOME/results');
  await assertNothingLeft(h);
});
