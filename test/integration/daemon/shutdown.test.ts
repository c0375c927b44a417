/**
 * An orderly stop leaves nothing behind and loses no output (INV-8). SIGTERM or SIGINT on
 * `brig serve` drains: new spawns are refused `shutting_down`, running children may finish
 * within --drain, the rest are killed (killedBy system) and collected as partial results;
 * a second signal ends the drain at once. Ctrl-C on an in-process `brig spawn` kills its
 * child (killedBy operator). Real processes, real signals, a real engine; dist/ must be built.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ApiClient } from '../../../src/client/index.js';
import type { RunRecord, SpawnRequestInput } from '../../../src/runs/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { leftovers, until } from '../runs/fixture.js';
import { brokerSockets, daemonHome, exitWithin, recordsOnDisk, type DaemonHome, type Serve } from './serve-proc.js';

const QUICK = `import { writeFileSync } from 'node:fs';
export default async function (brig) {
  await brig.progress('quick started');
  await new Promise((r) => setTimeout(r, 1500));
  writeFileSync('/workspace/out/q.txt', 'q');
  return 1;
}`;

const SLOW = `import { writeFileSync } from 'node:fs';
export default async function (brig) {
  writeFileSync('/workspace/out/partial.txt', 'so far');
  console.log('slow child was here');
  await brig.progress('slow started');
  await new Promise((r) => setTimeout(r, 120000));
  return 'never';
}`;

/** Spawns async through the daemon and waits until the child has taken its first step. */
async function spawnStepping(api: ApiClient, req: SpawnRequestInput): Promise<string> {
  const r = await api.spawn({ ...req, async: true });
  assert.ok(r.ok, r.ok ? '' : `${r.error.code}: ${r.error.message}`);
  const id = r.value.id;
  await until(async () => {
    const cur = await api.get(id);
    return cur?.status === 'running' && cur.stepsExecuted >= 1;
  }, `${req.task} running`);
  return id;
}

/** The run records as `brig list --json` reads them from disk (no daemon left to ask). */
async function listed(h: DaemonHome): Promise<Map<string, RunRecord>> {
  const l = await h.run(['list', '--json']);
  assert.equal(l.code, 0, l.stderr);
  return new Map((JSON.parse(l.stdout) as { runs: RunRecord[] }).runs.map((r) => [r.id, r]));
}

/** Nothing of the home's is left: no container, volume, broker socket or API socket; the ledger verifies. */
async function assertNothingLeft(h: DaemonHome): Promise<void> {
  assert.deepEqual(await leftovers(h.home, { released: true }), [], 'no container or volume labelled for this home');
  assert.deepEqual(brokerSockets(h.home), [], 'no broker socket under the home\'s broker runtime directory');
  assert.equal(fs.existsSync(h.paths.socket), false, 'the API socket is removed');
  const v = await h.run(['audit', 'verify']);
  assert.equal(v.code, 0, `audit verify: ${v.stdout}${v.stderr}`);
}

function assertKilledBySystem(r: RunRecord | undefined, serve: Serve): void {
  const why = `record: ${JSON.stringify(r)}\nserve stderr: ${serve.stderr()}`;
  assert.ok(r, why);
  assert.equal(r.status, 'ended', why);
  assert.equal(r.endReason, 'killed', why);
  assert.equal(r.killedBy, 'system', why);
  assert.equal(r.partial, true, why);
  assert.ok(r.outputs.some((o) => o.path === 'partial.txt' && o.bytes === 6), why);
  assert.equal(fs.readFileSync(path.join(r.resultDir!, 'partial.txt'), 'utf8'), 'so far');
  assert.match(r.stdoutTail, /slow child was here/, why);
}

// req: end:output-kept end:one-reason
test('[INV-8] SIGTERM on brig serve drains: spawns refused shutting_down, a quick child finishes, a slow one is killed by system and collected as partial', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve(['--drain', '4']);
  const api = new ApiClient(serve.socket);
  let quick: string;
  let slow: string;
  let signalledAt: number;
  try {
    slow = await spawnStepping(api, { task: 'slow', script: SLOW });
    quick = await spawnStepping(api, { task: 'quick', script: QUICK });
    signalledAt = Date.now();
    serve.proc.kill('SIGTERM');
    await until(() => /^brig: draining: /m.test(serve.stderr()), `a draining line (stderr: ${serve.stderr()})`);
    const refused = await api.spawn({ task: 'too late', script: QUICK, async: true });
    assert.equal(refused.ok, false, 'no spawn is admitted while draining');
    if (!refused.ok) assert.equal(refused.error.code, 'shutting_down', refused.error.message);
  } finally {
    await api.close();
  }
  const exit = await exitWithin(serve, 20_000);
  assert.ok(exit, `brig serve exits within 20 s of SIGTERM (stderr: ${serve.stderr()})`);
  assert.deepEqual([exit.code, exit.signal], [0, null], serve.stderr());
  assert.ok(exit.at - signalledAt >= 4000, `the slow child had its --drain of 4 s (exited after ${exit.at - signalledAt} ms)`);
  t.diagnostic(`serve exited ${exit.at - signalledAt} ms after SIGTERM`);

  const runs = await listed(h);
  assert.deepEqual([...runs.keys()].sort(), [quick, slow].sort(), 'the refused spawn left no run');
  const q = runs.get(quick)!;
  const why = `record: ${JSON.stringify(q)}\nserve stderr: ${serve.stderr()}`;
  assert.equal(q.endReason, 'completed', why);
  assert.equal(q.result, 1, why);
  assert.notEqual(q.partial, true, why);
  assert.deepEqual(q.outputs, [{ path: 'q.txt', bytes: 1 }], why);
  assert.ok(Date.parse(q.endedAt!) > signalledAt, 'the quick child finished during the drain, not before it');
  assertKilledBySystem(runs.get(slow), serve);
  await assertNothingLeft(h);
});

test('[INV-8] SIGINT on brig serve drains; a second SIGINT ends a 60 s drain at once, the slow child killed by system', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve(['--drain', '60']);
  const api = new ApiClient(serve.socket);
  let slow: string;
  try {
    slow = await spawnStepping(api, { task: 'slow', script: SLOW });
  } finally {
    await api.close();
  }
  const signalledAt = Date.now();
  serve.proc.kill('SIGINT');
  // Still draining after its first 2 s note: the first signal alone does not cut it short.
  await until(() => (serve.stderr().match(/^brig: draining: /gm) ?? []).length >= 2, `two draining lines (stderr: ${serve.stderr()})`);
  assert.equal(serve.proc.exitCode, null, 'still draining');
  const secondAt = Date.now();
  serve.proc.kill('SIGINT');
  const exit = await exitWithin(serve, 15_000);
  assert.ok(exit, `brig serve exits within 15 s of the first SIGINT (stderr: ${serve.stderr()})`);
  assert.deepEqual([exit.code, exit.signal], [0, null], serve.stderr());
  t.diagnostic(`serve exited ${exit.at - signalledAt} ms after the first SIGINT, ${exit.at - secondAt} ms after the second`);

  const runs = await listed(h);
  assert.deepEqual([...runs.keys()], [slow]);
  assertKilledBySystem(runs.get(slow), serve);
  await assertNothingLeft(h);
});

test('[INV-8] Ctrl-C on an in-process brig spawn kills its child (killedBy operator), collects it, leaves no container, exits non-zero', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const script = path.join(h.home, 'slow.mjs');
  fs.writeFileSync(script, SLOW);
  const spawn = h.start(['spawn', '--script', script]);
  const running = () => recordsOnDisk(h.home).find((r) => r.status === 'running' && r.stepsExecuted >= 1);
  await until(() => running() !== undefined || spawn.proc.exitCode !== null, `a running record (stderr: ${spawn.stderr()})`);
  const id = running()?.id;
  assert.ok(id, `the child ran: ${spawn.stdout()}${spawn.stderr()}`);
  assert.equal(fs.existsSync(h.paths.socket), false, 'no daemon: the supervisor is in-process');
  const signalledAt = Date.now();
  spawn.proc.kill('SIGINT');
  const exit = await exitWithin(spawn, 15_000);
  assert.ok(exit, `brig spawn exits within 15 s of Ctrl-C (stderr: ${spawn.stderr()})`);
  t.diagnostic(`spawn exited ${exit.at - signalledAt} ms after SIGINT, code ${exit.code}`);
  assert.equal(exit.signal, null, 'it handled the signal and exited on its own');
  assert.notEqual(exit.code, 0, `${spawn.stdout()}${spawn.stderr()}`);

  const [r] = recordsOnDisk(h.home);
  const why = `record: ${JSON.stringify(r)}\nspawn stderr: ${spawn.stderr()}`;
  assert.equal(recordsOnDisk(h.home).length, 1);
  assert.equal(r?.id, id);
  assert.equal(r.status, 'ended', why);
  assert.equal(r.endReason, 'killed', why);
  assert.equal(r.killedBy, 'operator', why);
  assert.equal(r.partial, true, why);
  assert.ok(r.outputs.some((o) => o.path === 'partial.txt'), why);
  assert.deepEqual(await leftovers(h.home, { released: true }), [], 'no container or volume labelled for this home');
  assert.deepEqual(brokerSockets(h.home), [], 'no broker socket under the home\'s broker runtime directory');
});

/** The ledger's lines of the home, parsed. */
function ledgerLines(h: DaemonHome): Record<string, unknown>[] {
  const dir = h.paths.ledger;
  return fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>));
}

/** One slow child running (the only slot), three quick ones queued behind it. */
async function slowAndQueued(api: ApiClient): Promise<{ slow: string; queued: string[] }> {
  const slow = await spawnStepping(api, { task: 'slow', script: SLOW });
  const queued: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await api.spawn({ task: `queued ${i}`, script: QUICK, async: true });
    assert.ok(r.ok, r.ok ? '' : `${r.error.code}: ${r.error.message}`);
    assert.equal(r.value.status, 'queued');
    queued.push(r.value.id);
  }
  return { slow, queued };
}

// req: end:one-reason
test('[INV-8] SIGTERM keeps queued runs queued on disk; the next daemon starts them and they complete', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve(['--drain', '3', '--max-concurrent', '1']);
  const api = new ApiClient(serve.socket);
  let runs: { slow: string; queued: string[] };
  try {
    runs = await slowAndQueued(api);
  } finally {
    await api.close();
  }
  serve.proc.kill('SIGTERM');
  const exit = await exitWithin(serve, 30_000);
  assert.ok(exit, `brig serve exits within 30 s of SIGTERM (stderr: ${serve.stderr()})`);
  assert.deepEqual([exit.code, exit.signal], [0, null], serve.stderr());
  assert.match(serve.stderr(), /3 queued run\(s\) kept for the next start/);

  const onDisk = await listed(h);
  assertKilledBySystem(onDisk.get(runs.slow), serve);
  for (const id of runs.queued) assert.equal(onDisk.get(id)?.status, 'queued', `kept queued: ${JSON.stringify(onDisk.get(id))}`);
  const shut = ledgerLines(h).filter((e) => e.type === 'supervisor.shutdown');
  assert.deepEqual(shut.map((e) => [e.drained, e.killed, e.kept]), [[0, 1, 3]]);
  assert.deepEqual(await leftovers(h.home, { released: true }), [], 'no jail is left by the stop');

  const next = await h.serve();
  const api2 = new ApiClient(next.socket);
  try {
    for (const id of runs.queued) {
      const w = await api2.wait(id, { timeoutMs: 60_000 });
      assert.ok(w.ok, w.ok ? '' : w.error.message);
      assert.equal(w.value.endReason, 'completed', `${JSON.stringify(w.value)}\nserve stderr: ${next.stderr()}`);
      assert.equal(w.value.result, 1);
    }
  } finally {
    await api2.close();
  }
  await next.signal('SIGTERM');
  await assertNothingLeft(h);
});

test('[INV-8] SIGTERM with --drain-queue kill ends queued runs killed by system, as asked', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve(['--drain', '1', '--max-concurrent', '1', '--drain-queue', 'kill']);
  const api = new ApiClient(serve.socket);
  let runs: { slow: string; queued: string[] };
  try {
    runs = await slowAndQueued(api);
  } finally {
    await api.close();
  }
  serve.proc.kill('SIGTERM');
  const exit = await exitWithin(serve, 30_000);
  assert.ok(exit, `brig serve exits within 30 s of SIGTERM (stderr: ${serve.stderr()})`);
  assert.deepEqual([exit.code, exit.signal], [0, null], serve.stderr());
  const onDisk = await listed(h);
  for (const id of runs.queued) {
    const r = onDisk.get(id);
    assert.deepEqual([r?.status, r?.endReason, r?.killedBy], ['ended', 'killed', 'system'], JSON.stringify(r));
  }
  const shut = ledgerLines(h).filter((e) => e.type === 'supervisor.shutdown');
  assert.deepEqual(shut.map((e) => [e.killed, e.kept]), [[4, 0]]);
  await assertNothingLeft(h);
});
