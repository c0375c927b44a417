import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ApiClient } from '../../../src/client/index.js';
import { brigPaths, loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { runCli } from '../../helpers/cli.js';
import { freshHome, leftovers, until } from '../runs/fixture.js';

type Line = { type: string; runId?: string; by?: string; reasonHash?: string | null; queued?: number | null };

function ledgerLines(home: string): Line[] {
  const dir = brigPaths(home).ledger;
  return fs
    .readdirSync(dir)
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean))
    .map((l) => JSON.parse(l) as Line);
}

const settings = { maxQueued: 1 };

// req: end:one-reason
test('[INV-8] admission paused over the real daemon: a running child finishes, a new spawn stays queued across a daemon restart, a full queue refuses admission_paused, a resume runs the queued one; each run ends once', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  let d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200, settings });
  let api = new ApiClient(d.socketPath);
  let queuedId = '';
  let runningId = '';
  try {
    const running = await api.spawn({ task: 'already running', kind: 'command', argv: ['sleep', '3'], async: true });
    assert.ok(running.ok, running.ok ? '' : running.error.message);
    runningId = running.value.id;
    await until(async () => (await api.get(runningId))?.status === 'running', 'the first child running');

    // The CLI over the daemon's socket: who (this machine's user) and the reason's hash are ledgered.
    const paused = await runCli(['admission', 'pause', '--reason', 'engine upgrade', '--json'], { home });
    assert.equal(paused.code, 0, paused.err);
    const pausedState = (JSON.parse(paused.out) as { admission: { paused: boolean; since: string; queued: number } }).admission;
    assert.equal(pausedState.paused, true);
    assert.equal(pausedState.queued, 0);

    const queued = await api.spawn({ task: 'waits for the resume', kind: 'command', argv: ['sh', '-c', 'echo resumed > /workspace/out/said.txt'], async: true });
    assert.ok(queued.ok, queued.ok ? '' : queued.error.message);
    queuedId = queued.value.id;
    assert.equal(queued.value.status, 'queued', 'a spawn while paused is queued, not started');

    // maxQueued 1: the queue is full, so the next spawn is refused — admission_paused, not queue_full.
    const refused = await api.spawn({ task: 'one too many', kind: 'command', argv: ['true'], async: true });
    assert.equal(refused.ok, false);
    if (!refused.ok) {
      assert.equal(refused.error.code, 'admission_paused');
      assert.match(refused.error.hint, /brig admission resume/);
      assert.equal((refused.error.data as { pausedSince?: string }).pausedSince, pausedState.since);
    }

    // The running child goes on and completes; the queued one does not start when its slot frees.
    const done = await api.wait(runningId);
    assert.ok(done.ok);
    assert.equal(done.value.endReason, 'completed');
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal((await api.get(queuedId))?.status, 'queued', 'nothing starts while paused, though a slot is free');
  } finally {
    await api.close();
    await d.close();
  }

  // A restarted daemon is still paused, the queued run still waits.
  d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200, settings });
  api = new ApiClient(d.socketPath);
  try {
    await d.reconciled;
    const status = await runCli(['admission', 'status'], { home });
    assert.equal(status.code, 0, status.err);
    assert.match(status.out, /^admission paused since \S+ \(by \S+\), 1 queued\n$/);
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal((await api.get(queuedId))?.status, 'queued', 'still queued after the restart');

    const resumed = await api.route('admissionResume', { input: { by: 'test-operator' } });
    assert.ok(resumed.ok, resumed.ok ? '' : resumed.error.message);
    assert.equal(resumed.value.admission.paused, false);
    const w = await api.wait(queuedId);
    assert.ok(w.ok);
    assert.equal(w.value.endReason, 'completed', JSON.stringify(w.value.error));
    const refs = await api.route('listRefs', { params: { run: queuedId } });
    assert.ok(refs.ok);
    assert.ok(refs.value.refs.some((r) => r.path === 'out/said.txt'), 'the queued run ran its command after the resume');
  } finally {
    await api.close();
    await d.close();
  }

  const lines = ledgerLines(home);
  const changes = lines.filter((l) => l.type.startsWith('admission.'));
  assert.deepEqual(changes.map((l) => l.type), ['admission.paused', 'admission.resumed']);
  assert.equal(changes[0]!.reasonHash, createHash('sha256').update('engine upgrade').digest('hex'));
  assert.equal(changes[1]!.by, 'test-operator');
  assert.equal(changes[1]!.queued, 1);
  assert.doesNotMatch(JSON.stringify(lines), /engine upgrade/, '[INV-7] the reason itself is kept nowhere');
  for (const id of [runningId, queuedId]) assert.equal(lines.filter((l) => l.type === 'run.lifecycle_ended' && l.runId === id).length, 1, `exactly one end for ${id}`);
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
