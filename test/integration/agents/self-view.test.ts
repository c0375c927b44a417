import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, textTurn, toolCallTurn, type RecordedRequest } from '../../helpers/model-server.js';
import { freshHome, leftovers } from '../runs/fixture.js';

/**
 * An agent looks at itself (issue 22, item 7): `session_status` (steps, tokens and cost used,
 * budget and time left, its children) and, after a compaction dropped older turns,
 * `ctx_search` / `ctx_expand` over its own transcript — served by the supervisor, read-only,
 * bounded, and spilled past the tool-result cap like every tool result. A real jailed agent
 * driven by a scripted model server on host loopback (a stand-in, not a real model).
 */

type Msg = { role: string; content: unknown };
const all = (r: RecordedRequest) => (r.body.messages as Msg[]).map((x) => String(x.content ?? '')).join('\n');
const toolResults = (r: RecordedRequest) => (r.body.messages as Msg[]).filter((x) => x.role === 'tool').map((x) => String(x.content));

test('after a compaction an agent finds what it dropped with ctx_search, reads it back with ctx_expand, and sees its own budget with session_status', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  let entry = -1;
  const m = await startModelServer({
    script: [
      toolCallTurn('shell', { command: 'echo MARKER-ALPHA-7' }, { usage: { input: 300, output: 10 } }),
      // Two turns of ~3,750 tokens each: a compaction keeps at most a quarter of the 20,000-token window, so the first turn is dropped.
      toolCallTurn('shell', { command: "head -c 15000 /dev/zero | tr '\\0' y" }, { usage: { input: 5000, output: 10 } }),
      toolCallTurn('shell', { command: "head -c 15000 /dev/zero | tr '\\0' z" }, { usage: { input: 17000, output: 1000 } }),
      textTurn('We ran three shell steps.', { usage: { input: 17500, output: 50 } }),
      toolCallTurn('session_status', {}, { usage: { input: 4000, output: 5 } }),
      toolCallTurn('ctx_search', { query: 'marker-alpha' }, { usage: { input: 4100, output: 5 } }),
      (req) => {
        entry = Number(/"entry": (\d+)/.exec(toolResults(req).at(-1) ?? '')?.[1] ?? -1);
        return toolCallTurn('ctx_expand', { entry, limit: 1 }, { usage: { input: 4200, output: 5 } });
      },
      toolCallTurn('ctx_expand', { entry: 0, limit: 20 }, { usage: { input: 4300, output: 5 } }),
      toolCallTurn('finish', { answer: 'looked at myself' }, { usage: { input: 4400, output: 5 } }),
    ],
  });
  t.after(() => m.close());
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '20000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const r = await c.brig.spawn({ task: 'Look at yourself.', kind: 'agent', limits: { tokens: 500_000 } });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    assert.equal(r.value.endReason, 'completed', r.value.stderrTail);
    assert.equal(m.requests.length, 9);
    const names = (m.requests[0]!.body.tools as { function: { name: string } }[]).map((x) => x.function.name);
    for (const n of ['session_status', 'ctx_search', 'ctx_expand']) assert.ok(names.includes(n), `the agent is offered ${n}`);

    // The compaction dropped the first turn: what the model is sent after it holds no marker.
    assert.equal(m.requests[3]!.body.tool_choice, 'none', 'request 4 is the summary call');
    assert.doesNotMatch(all(m.requests[4]!), /MARKER-ALPHA-7/, 'the compaction dropped the marker turn');

    const last = toolResults(m.requests[8]!);
    const [status, search, expandOne, expandPage] = last.slice(-4);
    const s = JSON.parse(status!) as { runId: string; steps: { used: number; max: number }; tokens: { used: number; budget: number; left: number }; elapsedMs: number; timeLeftMs: number; children: unknown[] };
    assert.equal(s.runId, r.value.id);
    assert.equal(s.steps.used, 4, 'three steps and the one asking (the summary call is no step)');
    assert.ok(s.tokens.budget > 0 && s.tokens.budget <= 500_000, `budget ${s.tokens.budget}`);
    assert.ok(s.tokens.used >= 5310 + 18000 + 17550, `tokens used ${s.tokens.used}`);
    assert.equal(s.tokens.left, s.tokens.budget - s.tokens.used, 'what is left is the budget less what it used');
    assert.ok(s.elapsedMs > 0 && s.timeLeftMs > 0 && s.timeLeftMs < r.value.timeoutMs);
    assert.deepEqual(s.children, []);

    // The search finds the dropped turn in the transcript the supervisor kept; expand reads it back.
    assert.match(search!, /MARKER-ALPHA-7/);
    assert.ok(entry >= 0, `the search named an entry: ${search}`);
    assert.match(expandOne!, /MARKER-ALPHA-7/, 'ctx_expand reads the entry the search named');
    assert.match(expandOne!, /"offset": ?\d+/);
    // A page of 20 big entries is over the tool-result cap: bounded, the rest spilled, as any tool result.
    assert.ok(expandPage!.length <= 20_000, `the page entered the conversation at ${expandPage!.length} chars`);
    assert.match(expandPage!, /spill|\/workspace\/\.brig\/spill\//i);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
