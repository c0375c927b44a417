/**
 * How many of an operator's children run at once is the daemon's global cap alone
 * (`--max-concurrent`): the per-parent cap (`--max-children`) bounds a run's own children,
 * not an operator's spawns. A real `brig serve` on a real engine; dist/ must be built.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiClient } from '../../../src/client/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { until } from '../runs/fixture.js';
import { daemonHome } from './serve-proc.js';

test('--max-concurrent 7 alone runs 7 operator spawns at once (the per-parent cap of 5 binds a run\'s children, not the operator)', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve(['--max-concurrent', '7', '--drain', '1']);
  const api = new ApiClient(serve.socket);
  try {
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await api.spawn({ task: `wide ${i}`, kind: 'command', argv: ['sleep', '120'], async: true });
      assert.ok(r.ok, r.ok ? '' : `${r.error.code}: ${r.error.message}`);
      ids.push(r.value.id);
    }
    const statuses = async () => (await Promise.all(ids.map((id) => api.get(id)))).map((r) => r?.status);
    // Every spawn was admitted at once: none queued, and all seven run side by side.
    assert.deepEqual((await statuses()).filter((s) => s === 'queued'), [], 'none of the seven waits in the queue');
    await until(async () => (await statuses()).every((s) => s === 'running'), 'seven running at once', 600);
    // The global cap still binds: the eighth waits.
    const eighth = await api.spawn({ task: 'one too many', kind: 'command', argv: ['sleep', '1'], async: true });
    assert.ok(eighth.ok, eighth.ok ? '' : eighth.error.message);
    assert.equal(eighth.value.status, 'queued', 'past --max-concurrent a spawn waits');
  } finally {
    await api.close();
  }
  await serve.signal('SIGTERM');
});
