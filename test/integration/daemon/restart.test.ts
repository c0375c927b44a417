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
import type { ReconcileReport, RunRecord, SpawnRequestInput } from '../../../src/runs/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startEngineProxy } from '../../helpers/engine-proxy.js';
import { leftovers, until } from '../runs/fixture.js';
import { brokerSockets, daemonHome, recordOnDisk, resultTemps, warmReady, type DaemonHome, type Serve } from './serve-proc.js';

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
  assert.deepEqual(await leftovers(h.home, { released: true }), [], 'no container or volume labelled for this home');
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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A script the child writes for itself: it reports a step, writes out/late.txt and returns 'late'. */
const LATE = `import { writeFileSync } from 'node:fs';
export default async function (brig) {
  await brig.progress('late');
  writeFileSync('/workspace/out/late.txt', 'late');
  return 'late';
}`;

test('[INV-8] a child whose first broker connect falls in a daemon restart of over 10 s connects to the restarted daemon and completes', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const first = await h.serve();
  // The in-jail runtime itself, started 5 s after its container: its very first connect
  // finds no supervisor (the daemon is SIGKILLed by then) and must outlast the restart.
  const argv = ['sh', '-c', 'sleep 5; printf %s "$0" > /workspace/.brig/script.mjs; exec node /opt/brig/child/runtime.js', LATE];
  const run = await spawnAsync(first.socket, { task: 'connect late', kind: 'command', argv });
  await until(() => recordOnDisk(h.home, run.id)?.status === 'running', 'running', 300);
  await first.signal('SIGKILL');
  // Down for 17 s: the child's first connect starts about 5 s in and keeps finding nothing
  // for about 12 s (and longer, while the next daemon starts) — past the old 10 s budget.
  await sleep(17_000);
  const second = await h.serve();
  assert.deepEqual(second.report.reattached, [run.id]);
  const r = await waitEnded(second, run.id);
  const why = describe(r, second);
  assert.equal(r.endReason, 'completed', why);
  assert.equal(r.exitCode, 0, why);
  assert.equal(r.result, 'late', why);
  assert.equal(r.stepsExecuted, 1, why);
  assert.deepEqual(r.outputs, [{ path: 'late.txt', bytes: 4 }], why);
  await assertNothingLeft(h);
});

const STEPPING = `import { writeFileSync } from 'node:fs';
export default async function (brig) {
  for (let i = 0; i < 40; i++) {
    await brig.progress('step ' + i);
    await new Promise((r) => setTimeout(r, 250));
  }
  writeFileSync('/workspace/out/steps.txt', 'forty');
  return 40;
}`;

test('[INV-8] a restarted daemon serves its API and its children\'s brokers while its start-up sweep is still held by the engine', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  // A warm pool leaves slots behind a SIGKILL: the next start has jails to sweep.
  const first = await h.serve(['--warm', '1']);
  await until(async () => (await warmReady(first.socket)) >= 1, 'a warm slot ready', 600);
  const run = await spawnAsync(first.socket, { task: 'keep stepping', script: STEPPING });
  await until(() => (recordOnDisk(h.home, run.id)?.stepsExecuted ?? 0) >= 1, 'first step', 300);
  // The run may have taken the slot: the refilled one is what the next start must sweep.
  await until(async () => (await warmReady(first.socket)) >= 1, 'a warm slot ready again', 600);
  await first.signal('SIGKILL');
  const stepsAtKill = recordOnDisk(h.home, run.id)!.stepsExecuted;

  // Every container remove of the next daemon waits at the gate: its sweep cannot finish.
  const gate = await startEngineProxy(t);
  gate.hold(/^DELETE \S*\/containers\//);
  const second = h.start(['serve', '--json'], { DOCKER_HOST: gate.dockerHost });
  await until(() => gate.held().length > 0, 'the start-up sweep\'s first remove reached the engine gate', 600);
  await until(() => ApiClient.probe(h.paths.socket), 'the daemon answers /v1/health while its sweep waits on the engine', 600);
  // The reattached child is served too: its steps go on through the new daemon's broker.
  const api = new ApiClient(h.paths.socket);
  try {
    await until(async () => ((await api.get(run.id))?.stepsExecuted ?? 0) > stepsAtKill + 1, 'the child steps on through the restarted daemon', 300);
  } finally {
    await api.close();
  }
  assert.equal(second.stdout(), '', 'the start-up report is not out yet: the sweep is still held');
  assert.ok(gate.held().length >= 1);

  gate.release();
  await until(() => second.stdout().includes('\n'), `the start-up report (stderr: ${second.stderr()})`, 600);
  const report = JSON.parse(second.stdout().split('\n')[0]!) as { reconcile: ReconcileReport };
  assert.deepEqual(report.reconcile.reattached, [run.id]);
  assert.ok(report.reconcile.swept.containers >= 1, `the pool slot was swept: ${JSON.stringify(report.reconcile)}`);
  const r = await waitEnded({ ...second, socket: h.paths.socket, report: report.reconcile }, run.id);
  const why = describe(r, { ...second, socket: h.paths.socket, report: report.reconcile });
  assert.equal(r.endReason, 'completed', why);
  assert.equal(r.result, 40, why);
  await assertNothingLeft(h);
});

test('[INV-8] a run caught `starting` (its container being created) by a SIGKILL is queued again at the next start and completes, not ghost-swept', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const gate = await startEngineProxy(t);
  gate.hold(/^POST \S*\/containers\/create/);
  const first = await h.serve([], { DOCKER_HOST: gate.dockerHost });
  const run = await spawnAsync(first.socket, { task: 'start me again', script: TWO_STEPS });
  await until(() => gate.held().length > 0, 'the container create reached the engine gate', 300);
  await first.signal('SIGKILL');
  assert.equal(recordOnDisk(h.home, run.id)?.status, 'starting', 'the kill landed while the run was starting');
  assert.ok((await leftovers(h.home)).some((l) => l === `volume:${run.id}`), 'its workspace volume was made before the kill');

  const second = await h.serve();
  assert.deepEqual(second.report.ghostSwept, [], JSON.stringify(second.report));
  assert.deepEqual(second.report.requeued, [run.id], JSON.stringify(second.report));
  const r = await waitEnded(second, run.id);
  const why = describe(r, second);
  assert.equal(r.endReason, 'completed', why);
  assert.deepEqual(r.result, { ok: true }, why);
  assert.deepEqual(r.outputs, [{ path: 'done.txt', bytes: 4 }], why);
  await assertNothingLeft(h);
});

// Found by the soak (issue 29 item 9): a run that waited in the queue is `queued` on disk while
// its launch runs (the move to `starting` is not saved): a SIGKILL after its lease was issued
// left a live lease the next start's launch could not replace — it failed invalid_input "run …
// already holds a lease". The first launch at the next start now clears what the cut launch
// made (RunTable.queuedAtStart).
test('[INV-8] a queued run whose launch a SIGKILL cut (lease issued, container being created) starts again at the next start and completes', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const gate = await startEngineProxy(t);
  const first = await h.serve(['--max-concurrent', '1'], { DOCKER_HOST: gate.dockerHost });
  const api = new ApiClient(first.socket);
  t.after(() => api.close());
  const holder = await spawnAsync(first.socket, { task: 'hold the one slot', kind: 'command', argv: ['sleep', '120'], timeout: 300_000 });
  await until(async () => (await api.get(holder.id))?.status === 'running', 'the slot taken');
  const run = await spawnAsync(first.socket, { task: 'wait, then start me again', script: TWO_STEPS });
  assert.equal(run.status, 'queued');
  gate.hold(/^POST \S*\/containers\/create/);
  const k = await api.kill(holder.id, { confirm: true });
  assert.ok(k.ok, JSON.stringify(k));
  await until(() => gate.held().length > 0, 'the queued run\'s container create reached the engine gate', 300);
  await first.signal('SIGKILL');
  assert.equal(recordOnDisk(h.home, run.id)?.status, 'queued', 'on disk the run still waits in the queue');

  const second = await h.serve();
  const r = await waitEnded(second, run.id);
  const why = describe(r, second);
  assert.equal(r.endReason, 'completed', why);
  assert.deepEqual(r.result, { ok: true }, why);
  await assertNothingLeft(h);
});

test('a run directory a SIGKILL left half made (no run.json) is removed at the next start once it is old; a young one is left alone', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  // What a kill between intake's first file and its admitted save leaves: a directory with
  // the request and the pinned script, and no record.
  const half = (id: string, ageMs: number) => {
    const dir = path.join(h.paths.runs, id);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(dir, 'request.json'), JSON.stringify({ task: 'cut short', kind: 'script' }));
    fs.writeFileSync(path.join(dir, 'script.mjs'), 'export default async () => 1;');
    const at = new Date(Date.now() - ageMs);
    fs.utimesSync(dir, at, at);
    return dir;
  };
  const old = half('r-00000000000000a1', 3600_000);
  // Young: it may be an in-process CLI's intake in flight right now (it holds no home lock).
  const young = half('r-00000000000000a2', 0);
  const serve = await h.serve();
  assert.equal(fs.existsSync(old), false, `the old half-made directory is gone (report: ${JSON.stringify(serve.report)})`);
  assert.equal(fs.existsSync(young), true, 'the young one is left for its writer');
  assert.equal(serve.report.halfMade, 1, JSON.stringify(serve.report));
  const l = await h.run(['list', '--json']);
  assert.equal(l.code, 0, l.stderr);
  assert.deepEqual((JSON.parse(l.stdout) as { runs: RunRecord[] }).runs, [], 'no run appears for either');
});

/**
 * A raw client in the jail: one progress call (id 7); then, once its daemon is gone and the
 * next one answers, the same call re-sent (`resent: true`, as the SDK's client re-sends an
 * unanswered call after a reconnect), then a new one (id 8). Its result is the three replies.
 */
const RESENDER = `
const net = require('node:net');
const fs = require('node:fs');
const token = fs.readFileSync('/workspace/.brig/token', 'utf8').trim();
const call = (id, method, params, resent) => new Promise((resolve, reject) => {
  const s = net.connect('/run/brig/broker.sock');
  let buf = '';
  s.on('error', reject);
  s.on('data', (d) => {
    buf += d;
    const nl = buf.indexOf('\\n');
    if (nl >= 0) { s.end(); resolve(JSON.parse(buf.slice(0, nl))); }
  });
  s.write(JSON.stringify({ v: 1, id, method, token, params, ...(resent ? { resent: true } : {}) }) + '\\n');
});
const up = () => new Promise((resolve) => { const s = net.connect('/run/brig/broker.sock'); s.on('connect', () => { s.destroy(); resolve(true); }); s.on('error', () => resolve(false)); });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  const first = await call(7, 'progress', { line: 'one' });
  while (await up()) await sleep(100);
  while (!(await up())) await sleep(200);
  let again;
  for (;;) { again = await call(7, 'progress', { line: 'one' }, true).catch(() => null); if (again && (again.ok || again.error.code !== 'not_running')) break; await sleep(200); }
  const next = await call(8, 'progress', { line: 'two' });
  const r = await call(9, 'result', { value: { first, again, next } });
  process.exit(r.ok ? 0 : 3);
})().catch((e) => { console.error(e); process.exit(4); });
`;

test('a progress call re-sent after a daemon restart (the same call id, marked resent) is answered without counting the step again', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const first = await h.serve();
  const run = await spawnAsync(first.socket, { task: 'resend a step', kind: 'command', argv: ['node', '-e', RESENDER] });
  await until(() => (recordOnDisk(h.home, run.id)?.stepsExecuted ?? 0) >= 1, 'the first step counted', 300);
  await first.signal('SIGKILL');
  const second = await h.serve();
  assert.deepEqual(second.report.reattached, [run.id]);
  const r = await waitEnded(second, run.id);
  const why = describe(r, second);
  assert.equal(r.endReason, 'completed', why);
  const replies = r.result as Record<'first' | 'again' | 'next', { ok: boolean; result?: { stepsExecuted: number } }>;
  assert.equal(replies.first.result?.stepsExecuted, 1, why);
  assert.equal(replies.again.ok, true, why);
  assert.equal(replies.again.result?.stepsExecuted, 1, `the re-sent call is the step already counted: ${why}`);
  assert.equal(replies.next.result?.stepsExecuted, 2, why);
  assert.equal(r.stepsExecuted, 2, why);
  await assertNothingLeft(h);
});
