import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, toolCallTurn, type RecordedRequest } from '../../helpers/model-server.js';
import { freshHome, leftovers } from '../runs/fixture.js';

/**
 * The longevity invariant (reference 003, INV-3): a lead agent that delegates 50 tasks whose
 * children each produce 5 MB grows its conversation by at most about one bounded envelope per
 * child — measured in the requests the scripted model server (a stand-in, not a real model)
 * receives from the lead.
 */

const N = 50;
type Msg = { role: string; content: unknown };
const system = (r: RecordedRequest) => String(((r.body.messages ?? []) as Msg[])[0]?.content ?? '');

// req: envelope:bounded envelope:no-transcript
test('[INV-3] a coordinator lead delegating 50 tasks of 5 MB each grows its context by one bounded envelope per child', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  let spawned = 0;
  const m = await startModelServer({
    script: (req) => {
      const sys = system(req);
      const assistantTurns = ((req.body.messages ?? []) as Msg[]).filter((x) => x.role === 'assistant').length;
      if (sys.includes('CHILD-TASK')) {
        if (assistantTurns === 0) return toolCallTurn('shell', { command: 'yes 0123456789abcdef | head -c 5000000 > /workspace/out/data.txt; wc -c < /workspace/out/data.txt' }, { usage: { input: 300, output: 20 } });
        return toolCallTurn('finish', { answer: 'wrote 5000000 bytes to data.txt', files: ['/workspace/out/data.txt'] }, { usage: { input: 400, output: 20 } });
      }
      if (spawned < N) {
        spawned++;
        return toolCallTurn('spawn', { task: `CHILD-TASK ${spawned}: write 5 MB of data` }, { usage: { input: 1000 + 100 * spawned, output: 20 } });
      }
      return toolCallTurn('finish', { answer: `all ${N} children reported` }, { usage: { input: 8000, output: 20 } });
    },
  });
  t.after(() => m.close());
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '200000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true, settings: { maxRunsPerTree: 60, defaultMaxSteps: 60 } });
  await c.supervisor.start();
  try {
    const r = await c.supervisor.spawn({ task: `Delegate ${N} data tasks, then report.`, kind: 'agent', agent: 'coordinator', max_steps: 60, timeout: 900_000 });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    assert.equal(r.value.endReason, 'completed', `${r.value.error?.message} ${r.value.stderrTail}`);
    const children = await c.supervisor.list({ parentRunId: r.value.id });
    assert.equal(children.length, N);
    assert.ok(children.every((x) => x.endReason === 'completed'));
    const materialized = children.reduce((s, x) => s + x.outputBytes, 0);
    assert.ok(materialized >= N * 5_000_000, `materialized ${materialized}`);
    const lead = m.requests.filter((q) => !system(q).includes('CHILD-TASK'));
    assert.equal(lead.length, N + 1);
    const sizes = lead.map((q) => Buffer.byteLength(q.raw));
    const growth = sizes.slice(1).map((s, i) => s - sizes[i]!);
    const maxGrowth = Math.max(...growth);
    // One spawn call plus one bounded child summary (its answer and ref handles) per step.
    assert.ok(maxGrowth < 8_000, `one step grew the lead's request by ${maxGrowth} bytes`);
    const entered = Math.round(sizes[sizes.length - 1]! / 4);
    const saved = Math.max(0, Math.round(materialized / 4) - entered);
    console.log(`longevity: ${N} children, ${materialized} bytes materialized; the lead's last request ${sizes[sizes.length - 1]} bytes (≈ ${entered} tokens), growth per child ≤ ${maxGrowth} bytes (median ${growth.sort((a, b) => a - b)[Math.floor(growth.length / 2)]}); estSavedTokens ≈ ${saved}`);
    assert.ok(entered * 4 < materialized / 500, 'what entered the lead is a tiny fraction of what its children produced');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
