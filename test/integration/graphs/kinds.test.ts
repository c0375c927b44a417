/**
 * The run kinds as graph nodes on real jails: a script node (its result value and an out/
 * file committed) feeding an agent node (its tool loop in its own jail, against the scripted
 * model server) that reads the script's output from /artifacts/<as>, read-only — what its
 * tool returned is what the model server was sent back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, toolCallTurn, type ModelServer } from '../../helpers/model-server.js';
import { freshHome, leftovers } from '../runs/fixture.js';

const KEY = 'sk-brig-test-graphs-0123456789abcdef';

test('a script node feeds an agent node: the agent reads the committed output read-only from /artifacts; both ordinary runs', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  let m!: ModelServer;
  m = await startModelServer({
    script: [
      toolCallTurn('shell', { command: 'ls /artifacts; cat /artifacts/src/x.txt; echo tamper > /artifacts/src/x.txt 2>&1 || echo WRITE-REFUSED' }),
      toolCallTurn('finish', { answer: 'read it' }),
    ],
    expectKey: KEY,
  });
  t.after(() => m.close());
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_API: 'openai-chat', BRIG_MODEL_API_KEY: KEY, BRIG_MODEL_CONTEXT_WINDOW: '32000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const spec = JSON.stringify({
      graph: 'brig/v1',
      nodes: [
        { id: 'gen', kind: 'script', spawn: { task: 'make a file', script: "import { writeFileSync } from 'node:fs';\nexport default async function () { writeFileSync('/workspace/out/x.txt', 'hello from gen'); return { made: 1 }; }" } },
        { id: 'reader', kind: 'agent', depends_on: ['gen'], inputs: [{ from: 'gen', as: 'src' }], spawn: { task: 'Read /artifacts/src/x.txt.', agent: 'general' } },
      ],
    });
    const s = await c.graphs.run(spec);
    assert.ok(s.ok, s.ok ? '' : s.error.message);
    const w = await c.graphs.wait(s.value.graphId, { timeoutMs: 180_000 });
    assert.ok(w.ok);
    const rec = w.value;
    assert.equal(rec.state, 'completed', JSON.stringify(rec.nodes.map((n) => [n.id, n.state, n.attempts.map((a) => [a.endReason, a.errorCode])])));
    const gen = await c.supervisor.get(rec.nodes[0]!.attempts[0]!.runId!);
    const reader = await c.supervisor.get(rec.nodes[1]!.attempts[0]!.runId!);
    assert.deepEqual([gen?.kind, gen?.endReason, reader?.kind, reader?.endReason], ['script', 'completed', 'agent', 'completed']);
    // What the jail's shell printed is what the model server was sent back.
    const last = m.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] };
    const tool = last.messages.filter((x) => x.role === 'tool').map((x) => String(x.content)).join('\n');
    assert.match(tool, /^src$/m, 'only its declared input');
    assert.match(tool, /hello from gen/);
    assert.match(tool, /Read-only file system|WRITE-REFUSED/);
    // The script's result value is its ref on the envelope line.
    assert.match(rec.envelope!, /^gen\s+script\s+succeeded\s+a1\s+.*ref_[a-z2-7]{26}$/m);
    assert.deepEqual(await leftovers(home, { released: true }), []);
  } finally {
    await c.close();
  }
});
