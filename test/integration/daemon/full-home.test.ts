/**
 * A full $BRIG_HOME (issue 29 item 2): a real `brig serve` on a home that is a small ext4 the
 * test mounts and fills. Before, the ledger's synchronous writer threw ENOSPC into the event
 * loop and the daemon died, every live child with it. Now: the daemon stays up, refuses new
 * runs `storage_full` (HTTP 507, never 500), keeps answering reads, keeps its live child's
 * progress and checkpoints in memory (the child's calls succeed) and writes them when space
 * returns; the ledger verifies throughout; doctor and metrics show the free space. A
 * collection that meets a full home keeps what fits and reports the rest `no_space`. Real
 * engine, real file system (root); dist/ must be built.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { RunRecord } from '../../../src/runs/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { smallFs } from '../../helpers/small-fs.js';
import { until } from '../runs/fixture.js';
import { daemonHome, recordOnDisk, resultTemps, type Serve } from './serve-proc.js';

const MiB = 1024 * 1024;

/** One request on the daemon's socket: its status and parsed body (text for metrics). */
function call(sock: string, method: 'GET' | 'POST', route: string, body?: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ socketPath: sock, method, path: route, headers: text ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } : {} }, (res) => {
      let b = '';
      res.setEncoding('utf8').on('data', (c: string) => (b += c)).on('end', () => {
        let parsed: unknown = b;
        try {
          parsed = JSON.parse(b);
        } catch {
          // metrics: text
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(text);
  });
}

const getRun = async (s: Serve, id: string): Promise<RunRecord> => (await call(s.socket, 'GET', `/v1/runs/${id}`)).body.run as RunRecord;

function metric(text: string, name: string, labels = ''): number {
  const m = new RegExp(`^${name}${labels.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text);
  assert.ok(m, `${name}${labels} in the scrape`);
  return Number(m[1]);
}

/** Until told `finish` (a steer): a step, a checkpoint of the step, a pause. */
const STEPPER = `import { writeFileSync } from 'node:fs';
export default async function (brig) {
  for (let i = 1; i <= 50; i++) {
    const steers = await brig.progress('step ' + i);
    await brig.checkpoint({ i });
    if (steers.includes('finish')) {
      writeFileSync('/workspace/out/done.txt', String(i));
      return { steps: i };
    }
    await new Promise((r) => setTimeout(r, 400));
  }
  return { steps: 'never told' };
}`;

test('a full home: the daemon stays up, refuses spawns 507 storage_full, serves reads, holds its live child\'s progress and checkpoints and writes them when space returns; the child completes', async (t) => {
  if (!(await requireEngine(t))) return;
  const disk = await smallFs(t, 64);
  if (!disk) return;
  const h = await daemonHome(t, { home: disk.dir });
  // A progress event every 100 ms: the ledger keeps writing while the home is full.
  const s = await h.serve(['--min-free-mb', '4', '--progress-interval', '0.1']);
  const a = await call(s.socket, 'POST', '/v1/runs', { task: 'step through a full disk', script: STEPPER, max_steps: 50, async: true });
  assert.equal(a.status, 202, JSON.stringify(a.body));
  const id = (a.body.run as RunRecord).id;
  await until(async () => (await getRun(s, id)).stepsExecuted >= 2, 'the child stepping');

  // The home fills up (not by brig): every write from here is refused by the kernel.
  disk.fill();
  const stepsAtFull = (await getRun(s, id)).stepsExecuted;
  // The child's progress and checkpoint calls go on being answered (a refused checkpoint would throw in it).
  await until(async () => (await getRun(s, id)).stepsExecuted >= stepsAtFull + 8, 'the child stepping on a full home');

  const refused = await call(s.socket, 'POST', '/v1/runs', { task: 'no room', argv: ['true'], kind: 'command', async: true });
  assert.equal(refused.status, 507, JSON.stringify(refused.body));
  assert.equal(refused.body.error.code, 'storage_full');
  assert.match(refused.body.error.hint, /Free space/);
  for (let i = 0; i < 20; i++) assert.equal((await call(s.socket, 'POST', '/v1/runs', { task: `again ${i}`, argv: ['true'], kind: 'command', async: true })).status, 507);
  const list = await call(s.socket, 'GET', '/v1/runs');
  assert.equal(list.status, 200);
  assert.deepEqual((list.body.runs as RunRecord[]).map((r) => [r.id, r.status]), [[id, 'running']], 'reads answered; nothing half admitted');
  const mem = await getRun(s, id);
  const onDisk = recordOnDisk(h.home, id)!;
  assert.ok(onDisk.stepsExecuted < mem.stepsExecuted, `the record on disk is behind the one held in memory (${onDisk.stepsExecuted} < ${mem.stepsExecuted})`);
  const scrape = async () => (await call(s.socket, 'GET', '/v1/metrics')).body as string;
  // The ledger's last block had some room left: lines go on landing until it is spent.
  await until(async () => metric(await scrape(), 'brig_storage_held', '{writer="ledger"}') >= 1, 'the ledger holding lines');
  const m = await scrape();
  assert.ok(metric(m, 'brig_home_free_bytes') < 4 * MiB);
  assert.equal(metric(m, 'brig_home_reserve_bytes'), 4 * MiB);
  assert.ok(metric(m, 'brig_storage_held', '{writer="runs"}') >= 1, 'the child\'s record and checkpoint are held');
  const verifyFull = await call(s.socket, 'GET', '/v1/audit/verify');
  assert.equal(verifyFull.status, 200);
  assert.equal(verifyFull.body.ledger?.ok ?? verifyFull.body.ok, true, `the ledger on disk verifies while full: ${JSON.stringify(verifyFull.body)}`);
  const doctor = await call(s.socket, 'GET', '/v1/doctor');
  const home = (doctor.body.checks as { name: string; ok: boolean; detail: string }[]).find((c) => c.name === 'home free space');
  assert.equal(home?.ok, false, JSON.stringify(home));
  assert.match(home!.detail, /MiB free of .* \(reserve 4\.0 MiB\)/);

  // Space returns: what was held is written, and admission opens again.
  disk.unfill();
  await until(async () => {
    const m = (await call(s.socket, 'GET', '/v1/metrics')).body as string;
    return metric(m, 'brig_storage_held', '{writer="runs"}') === 0 && metric(m, 'brig_storage_held', '{writer="ledger"}') === 0;
  }, 'the held writes landed');
  const held = (await getRun(s, id)).stepsExecuted;
  const ck = JSON.parse(fs.readFileSync(path.join(h.paths.runs, id, 'checkpoint.json'), 'utf8')) as { i: number };
  assert.ok(ck.i >= stepsAtFull + 8, `the checkpoints made on the full home reached the disk (${ck.i})`);
  assert.ok(recordOnDisk(h.home, id)!.stepsExecuted >= held - 1, 'the record on disk caught up');
  assert.equal((await call(s.socket, 'POST', `/v1/runs/${id}/steer`, { message: 'finish' })).status, 200);
  const w = await call(s.socket, 'POST', `/v1/runs/${id}/wait`, { timeoutMs: 60_000 });
  assert.equal(w.body.run.endReason, 'completed', JSON.stringify(w.body.run));
  const after = await call(s.socket, 'POST', '/v1/runs', { task: 'room again', argv: ['true'], kind: 'command' });
  assert.equal(after.status, 200, JSON.stringify(after.body));
  assert.equal(after.body.run.endReason, 'completed');

  await s.signal('SIGTERM');
  assert.equal((await s.exited).code, 0, s.stderr());
  const v = await h.run(['audit', 'verify', '--json']);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  const ledger = fs.readdirSync(h.paths.ledger).map((f) => fs.readFileSync(path.join(h.paths.ledger, f), 'utf8')).join('');
  const refusals = ledger.split('\n').filter((l) => l.includes('"type":"run.refused"')).map((l) => JSON.parse(l) as { code: string; count?: number });
  assert.equal(refusals.reduce((n, r) => n + (r.count ?? 1), 0), 21, 'every refusal on record, in counted lines');
  assert.ok(refusals.every((r) => r.code === 'storage_full'));
  assert.match(ledger, /"type":"ledger\.resumed"/, 'the ledger says it held lines');
  assert.doesNotMatch(s.stderr(), /"status":500/, 'no request was answered 500');
});

// req: end:output-kept
test('[INV-8] a collection on a home near full keeps what fits its reserve, skips the rest no_space, and the run says so (storage_full); the daemon goes on', async (t) => {
  if (!(await requireEngine(t))) return;
  const disk = await smallFs(t, 64);
  if (!disk) return;
  const h = await daemonHome(t, { home: disk.dir });
  const s = await h.serve(['--min-free-mb', '8']);
  disk.fill(22 * MiB);
  const r = await call(s.socket, 'POST', '/v1/runs', { task: 'six files of 4 MiB', kind: 'command', argv: ['sh', '-c', 'for i in 1 2 3 4 5 6; do head -c 4194304 /dev/zero > out/f$i; done'] });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const run = r.body.run as RunRecord;
  const kept = run.outputs.map((o) => o.path);
  const skipped = run.skipped.filter((x) => x.reason === 'no_space').map((x) => x.path);
  assert.ok(kept.length >= 1 && skipped.length >= 1, `some kept, some skipped: ${JSON.stringify({ kept, skipped })}`);
  assert.deepEqual([...kept, ...skipped].sort(), ['f1', 'f2', 'f3', 'f4', 'f5', 'f6'], 'every file kept or named');
  assert.equal(run.error?.code, 'storage_full', JSON.stringify(run.error));
  assert.match(run.error!.message, new RegExp(`${skipped.length} file\\(s\\) of out .* did not fit`));
  assert.equal(run.endReason, 'failed');
  const refs = await call(s.socket, 'GET', `/v1/runs/${run.id}/refs`);
  assert.deepEqual((refs.body.refs as { path: string; bytes: number }[]).filter((x) => x.path.startsWith('out/')).map((x) => [x.path, x.bytes]).sort(), kept.map((k) => [`out/${k}`, 4 * MiB]).sort());
  assert.ok(disk.free() >= 6 * MiB, `the collection left the reserve (about) free: ${disk.free()}`);
  assert.deepEqual(resultTemps(h.home), []);
  assert.equal((await call(s.socket, 'GET', '/v1/health')).status, 200);
});

// req: end:output-kept
test('[INV-8] a collection the disk refuses midway (no reserve) keeps the files before, removes the cut one, and names every file it could not keep', async (t) => {
  if (!(await requireEngine(t))) return;
  const disk = await smallFs(t, 64);
  if (!disk) return;
  const h = await daemonHome(t, { home: disk.dir });
  const s = await h.serve(['--min-free-mb', '0']);
  disk.fill(10 * MiB);
  const r = await call(s.socket, 'POST', '/v1/runs', { task: 'four files of 4 MiB', kind: 'command', argv: ['sh', '-c', 'for i in 1 2 3 4; do head -c 4194304 /dev/zero > out/f$i; done'] });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const run = r.body.run as RunRecord;
  assert.equal(run.error?.code, 'storage_full', JSON.stringify(run));
  const kept = run.outputs.map((o) => o.path);
  const skipped = run.skipped.filter((x) => x.reason === 'no_space').map((x) => x.path);
  assert.ok(kept.length >= 1 && skipped.length >= 1, JSON.stringify({ kept, skipped }));
  assert.deepEqual([...kept, ...skipped].sort(), ['f1', 'f2', 'f3', 'f4']);
  const out = path.join(h.paths.results, run.rootRunId, run.id, 'out');
  assert.deepEqual(fs.readdirSync(out).sort(), [...kept].sort(), 'no partial file left behind');
  for (const k of kept) assert.equal(fs.statSync(path.join(out, k)).size, 4 * MiB);
  assert.deepEqual(resultTemps(h.home), []);
  disk.unfill();
  const v = await call(s.socket, 'GET', '/v1/audit/verify');
  assert.equal(v.body.ledger?.ok ?? v.body.ok, true, JSON.stringify(v.body));
});

test('a run that ends while the home is full ends once, in memory: outputs it has no room for are named no_space, the end reaches the disk when space returns, its release is done, the daemon goes on', async (t) => {
  if (!(await requireEngine(t))) return;
  const disk = await smallFs(t, 64);
  if (!disk) return;
  const h = await daemonHome(t, { home: disk.dir });
  const s = await h.serve(['--min-free-mb', '4']);
  const a = await call(s.socket, 'POST', '/v1/runs', { task: 'end on a full disk', script: STEPPER, max_steps: 50, async: true });
  assert.equal(a.status, 202, JSON.stringify(a.body));
  const id = (a.body.run as RunRecord).id;
  await until(async () => (await getRun(s, id)).stepsExecuted >= 2, 'the child stepping');
  disk.fill();
  assert.equal((await call(s.socket, 'POST', `/v1/runs/${id}/steer`, { message: 'finish' })).status, 200);
  const w = await call(s.socket, 'POST', `/v1/runs/${id}/wait`, { timeoutMs: 60_000 });
  assert.equal(w.status, 200, JSON.stringify(w.body));
  const ended = w.body.run as RunRecord;
  assert.equal(ended.status, 'ended', JSON.stringify(ended));
  assert.equal(ended.error?.code, 'storage_full', JSON.stringify(ended.error));
  assert.deepEqual(ended.skipped.filter((x) => x.reason === 'no_space').map((x) => x.path), ['done.txt'], JSON.stringify(ended.skipped));
  assert.notEqual(recordOnDisk(h.home, id)?.status, 'ended', 'the end is held in memory while the disk is full');
  assert.equal((await call(s.socket, 'GET', '/v1/health')).status, 200);
  disk.unfill();
  await until(async () => recordOnDisk(h.home, id)?.status === 'ended', 'the end on disk once space returned');
  await until(async () => recordOnDisk(h.home, id)?.unreleased !== true, 'the release done');
  assert.equal(recordOnDisk(h.home, id)!.endReason, ended.endReason);
  await until(async () => {
    const m = (await call(s.socket, 'GET', '/v1/metrics')).body as string;
    return metric(m, 'brig_storage_held', '{writer="runs"}') === 0 && metric(m, 'brig_storage_held', '{writer="ledger"}') === 0;
  }, 'the held writes landed');
  const after = await call(s.socket, 'POST', '/v1/runs', { task: 'room again', argv: ['true'], kind: 'command' });
  assert.equal(after.body.run?.endReason, 'completed', JSON.stringify(after.body));
  await s.signal('SIGTERM');
  assert.equal((await s.exited).code, 0, s.stderr());
  const v = await h.run(['audit', 'verify', '--json']);
  assert.equal(v.code, 0, v.stdout + v.stderr);
});
