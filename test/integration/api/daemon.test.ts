import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ApiClient } from '../../../src/client/index.js';
import { brigPaths, loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { DockerJailDriver, ownerForHome } from '../../../src/jail/index.js';
import type { SupervisorEvent } from '../../../src/runs/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, STEERABLE, until } from '../runs/fixture.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

function ledgerEvents(home: string): { type: string; runId?: string; endReason?: string }[] {
  const dir = brigPaths(home).ledger;
  return fs
    .readdirSync(dir)
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean))
    .map((l) => JSON.parse(l) as { type: string; runId?: string; endReason?: string });
}

test('the API over a real unix socket (0600) with undici: spawn, list, get, wait, steer, kill, SSE events, errors as {code, message, hint}', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  const api = new ApiClient(d.socketPath);
  try {
    assert.equal(fs.statSync(d.socketPath).mode & 0o777, 0o600);
    assert.equal(await ApiClient.probe(d.socketPath), true);
    const ac = new AbortController();
    const seen: SupervisorEvent[] = [];
    const collecting = (async () => {
      for await (const ev of api.events({ signal: ac.signal })) seen.push(ev);
    })();
    const r = await api.spawn({ task: 'over http', script: STEERABLE, async: true, label: 'api' });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.notEqual(r.value.status, 'ended');
    await until(async () => ((await api.get(r.value.id))?.stepsExecuted ?? 0) > 0, 'stepping');
    assert.equal((await api.list({ label: 'api' })).length, 1);
    const s = await api.steer(r.value.id, 'stop now');
    assert.ok(s.ok);
    const w = await api.wait(r.value.id);
    assert.ok(w.ok);
    assert.equal(w.value.endReason, 'completed');
    assert.deepEqual((w.value.result as { steered: string[] }).steered, ['stop now']);
    const notRunning = await api.kill(r.value.id, { confirm: true });
    assert.equal(notRunning.ok, false);
    if (!notRunning.ok) {
      assert.equal(notRunning.error.code, 'not_running');
      assert.match(notRunning.error.hint, /brig list/);
    }
    const bad = await api.spawn({ task: 'x', kind: 'command' } as never);
    assert.equal(bad.ok, false);
    if (!bad.ok) assert.equal(bad.error.code, 'invalid_input');
    assert.equal(await api.get('r-doesnotexist'), undefined);
    await until(() => seen.some((e) => e.type === 'lifecycle_ended' && e.runId === r.value.id), 'SSE lifecycle_ended');
    ac.abort();
    await collecting;
    const mine = seen.filter((e) => e.runId === r.value.id).map((e) => e.type);
    assert.deepEqual(mine.filter((x) => x !== 'progress'), ['spawned', 'started', 'steered', 'completed', 'lifecycle_ended']);
    assert.doesNotMatch(JSON.stringify(seen), /over http|stop now/, '[INV-7] events carry no task or steer text');
  } finally {
    await api.close();
    await d.close();
  }
  assert.equal(fs.existsSync(d.socketPath), false);
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

// req: end:one-reason end:released
test('[INV-8] the daemon SIGKILLed mid-run and restarted: every run ends with exactly one end reason, nothing orphaned', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli/main.ts'), 'serve'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', BRIG_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  t.after(() => void proc.kill('SIGKILL'));
  const sock = brigPaths(home).socket;
  await until(() => ApiClient.probe(sock), `daemon up (${stderr})`, 300);
  const api = new ApiClient(sock);
  const ids: string[] = [];
  for (const [i, argv] of [['sleep', '4'], ['sleep', '4'], ['sleep', '60']].entries()) {
    const r = await api.spawn({ task: `survivor ${i}`, kind: 'command', argv, async: true });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    ids.push(r.value.id);
  }
  await until(async () => (await api.list({ status: ['running'] })).length === 3, 'three running');
  await api.close();
  proc.kill('SIGKILL');
  await new Promise((r) => proc.once('exit', r));
  // While no supervisor runs, the third run's container disappears.
  const driver = new DockerJailDriver({ owner: ownerForHome(home) });
  const gone = await driver.attach(ids[2]!);
  assert.ok(gone);
  await gone.destroy();

  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  try {
    const report = await d.reconciled;
    assert.deepEqual([...report.reattached].sort(), [ids[0]!, ids[1]!].sort());
    assert.deepEqual(report.ghostSwept, [ids[2]!]);
    for (const id of ids.slice(0, 2)) {
      const w = await d.composed.supervisor.wait(id);
      assert.ok(w.ok);
      assert.equal(w.value.endReason, 'completed');
    }
    assert.equal((await d.composed.supervisor.get(ids[2]!))!.endReason, 'ghost_sweep');
  } finally {
    await d.close();
  }
  const ends = ledgerEvents(home).filter((e) => e.type === 'run.lifecycle_ended');
  for (const id of ids) assert.equal(ends.filter((e) => e.runId === id).length, 1, `exactly one end for ${id}`);
  assert.deepEqual(await leftovers(home, { released: true }), []);
  // The home's broker runtime directory (brigPaths().brokers, not under the home) goes once empty.
  const brokers = brigPaths(home).brokers;
  assert.deepEqual(fs.existsSync(brokers) ? fs.readdirSync(brokers) : [], [], 'no broker socket dir left');
});

test('a second daemon on the same BRIG_HOME is refused with daemon_running', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }));
  try {
    await assert.rejects(startDaemon(loadConfig({ BRIG_HOME: home })), (e: { code?: string }) => e.code === 'daemon_running');
    assert.equal(await ApiClient.probe(d.socketPath), true, 'the first one still serves');
  } finally {
    await d.close();
  }
});
