import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { loadConfig } from '../../../src/config/index.js';
import { compose, type Composed } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, toolCallTurn } from '../../helpers/model-server.js';
import { freshHome, leftovers, until } from '../runs/fixture.js';

/**
 * Honest ends (issue 22, item 5), on real jailed children; agents are driven by a scripted
 * model server on host loopback (a stand-in, not a real model): an agent whose model cannot be
 * reached fails, a long tool call is work the stuck-kill does not count as silence, and a
 * command child refuses a steer.
 */

async function supervisorAt(home: string, baseUrl: string, settings = {}): Promise<Composed> {
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '20000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true, settings });
  await c.supervisor.start();
  return c;
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

test('an agent whose model cannot be reached ends failed (model_unavailable), not completed exit 0; its salvage note is kept', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home, `http://127.0.0.1:${await closedPort()}/v1`);
  try {
    const r = await c.supervisor.spawn({ task: 'Say hi.', kind: 'agent', timeout: 120_000 });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    assert.equal(r.value.endReason, 'failed', `${r.value.error?.code} ${r.value.stderrTail}`);
    assert.equal(r.value.terminalStatus, 'failed');
    assert.equal(r.value.error?.code, 'model_unavailable');
    assert.equal(r.value.partial, true);
    assert.equal((r.value.result as { endReason: string }).endReason, 'model_error', 'the loop\'s own word is kept in the result');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('a tool call longer than stuckKillThresholdMs is work, not silence: the loop heartbeats and the run completes', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const m = await startModelServer({
    script: [
      toolCallTurn('shell', { command: 'sleep 9; echo built' }, { usage: { input: 300, output: 20 } }),
      toolCallTurn('finish', { answer: 'the build ran' }, { usage: { input: 400, output: 20 } }),
    ],
  });
  t.after(() => m.close());
  // Three seconds of silence is stuck; the shell works for nine.
  const c = await supervisorAt(home, m.baseUrl, { stuckKillThresholdMs: 3000 });
  try {
    const r = await c.supervisor.spawn({ task: 'Build.', kind: 'agent', timeout: 120_000 });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    assert.equal(r.value.endReason, 'completed', `${r.value.endReason} ${r.value.killedBy} ${r.value.stderrTail}`);
    assert.equal((r.value.result as { answer: string }).answer, 'the build ran');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('a steer to a command child is refused (only agent and script children take steers); the child runs on', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home, 'http://127.0.0.1:9/v1');
  try {
    const r = await c.supervisor.spawn({ task: 'sleep', kind: 'command', argv: ['sleep', '60'], async: true });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    await until(async () => (await c.supervisor.get(r.value.id))?.status === 'running', 'the command child runs');
    const s = await c.supervisor.steer(r.value.id, 'do something else');
    assert.equal(s.ok, false);
    if (!s.ok) {
      assert.equal(s.error.code, 'invalid_input');
      assert.match(s.error.message, /command child: it cannot take a steer/);
    }
    assert.equal((await c.supervisor.get(r.value.id))?.status, 'running', 'not killed, not respawned');
    await c.supervisor.kill(r.value.id, { confirm: true });
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
