import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/compose.js';
import { DockerJailDriver, ownerForHome } from '../../../src/jail/index.js';
import { verifyLedger } from '../../../src/ledger/index.js';

// A child that floods its own broker socket with garbage, reconnecting whenever it is dropped.
const FLOOD = `export default async function () {
  const net = await import('node:net');
  const junk = 'not json\\n'.repeat(2000);
  for (;;) {
    await new Promise((done) => {
      const s = net.connect('/run/brig/broker.sock');
      s.on('data', () => {});
      s.on('error', done);
      s.on('close', done);
      s.once('connect', () => { s.write(junk); setTimeout(() => s.destroy(), 200); });
    });
  }
}`;

// req: end:one-reason
test('[INV-8] sustained broker abuse from inside a real jail ends the run: killed, killedBy system; the supervisor carries on', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-abuse-'));
  const c = await compose(loadConfig({ BRIG_HOME: home }), { reconcile: false });
  try {
    await c.supervisor.start();
    const r = await c.supervisor.spawn({ task: 'flood', profile: 'worker', script: FLOOD, async: true, timeout: 120_000 });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    const runId = r.value.id;
    const w = await c.supervisor.wait(runId, { timeoutMs: 90_000 });
    assert.ok(w.ok, w.ok ? '' : w.error.message);
    assert.deepEqual([w.value.status, w.value.endReason, w.value.killedBy], ['ended', 'killed', 'system']);
    await c.ledger.flush();
    const events = fs
      .readdirSync(path.join(home, 'ledger'))
      .flatMap((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8').split('\n').filter(Boolean))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(events.some((e) => e.type === 'broker.abuse' && e.runId === runId), 'the abuse is in the ledger');
    assert.ok(events.some((e) => e.type === 'broker.denied' && e.runId === runId && e.code === 'invalid_input'));
    // The supervisor still serves: another child runs to completion.
    const ok = await c.supervisor.spawn({ task: 'after', profile: 'worker', script: 'export default async function () { return 1; }', timeout: 60_000 });
    assert.ok(ok.ok, ok.ok ? '' : ok.error.message);
    assert.equal(ok.value.endReason, 'completed');
    assert.equal(verifyLedger(path.join(home, 'ledger')).ok, true);
  } finally {
    await c.close().catch(() => {});
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    await fs.promises.rm(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
});
