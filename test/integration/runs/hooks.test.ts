import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openBrig } from '../../../src/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers } from './fixture.js';

// req: events:bus-no-content
test('[INV-7] openBrig hooks on a real jail: prepareSpawn before the child starts, onEnded after the envelope was cast, content-free', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const seen: { prepared: string[]; ended: Record<string, unknown>[] } = { prepared: [], ended: [] };
  const brig = await openBrig({
    home,
    mode: 'local',
    hooks: {
      prepareSpawn: async (run) => (seen.prepared.push(run.status), { rollback: async () => {} }),
      onEnded: (end) => void seen.ended.push(end as unknown as Record<string, unknown>),
    },
  });
  try {
    const r = await brig.spawn({ task: 'SECRET-HOOK-TASK', kind: 'command', argv: ['sh', '-c', 'seq 1 20000 > out/n.txt'] });
    assert.ok(r.ok);
    assert.equal(r.value.endReason, 'completed');
    for (let i = 0; i < 100 && seen.ended.length === 0; i++) await new Promise((res) => setTimeout(res, 50));
    assert.equal(seen.prepared.length, 1);
    assert.notEqual(seen.prepared[0], 'running', 'prepared before the child started');
    const e = seen.ended[0]!;
    assert.equal(e.runId, r.value.id);
    assert.equal(e.endReason, 'completed');
    assert.equal(e.outputFiles, 1);
    assert.ok(typeof e.estSavedTokens === 'number' && e.estSavedTokens > 10_000, `estSavedTokens ${String(e.estSavedTokens)}`);
    assert.doesNotMatch(JSON.stringify(e), /SECRET-HOOK-TASK/);
    const env = await brig.refs.result(r.value.id);
    assert.ok(env.ok, 'the envelope the hook followed is the kept one');
  } finally {
    await brig.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
