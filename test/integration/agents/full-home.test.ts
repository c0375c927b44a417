/**
 * An agent child while brig's home fills up (issue 29 item 2: "keeps live children's state in
 * memory"). The supervisor keeps an agent's conversation and appends every message and reply
 * to its transcript (runs/<id>/transcript.jsonl). Before, an append the full disk refused
 * failed the child's model call (`storage_full`) and the agent died with it. Now the lines are
 * held in memory, in order, the call answers, and they are appended when space returns: the
 * transcript on disk is whole and in order. Real engine, real loop-mounted ext4 home, scripted
 * model server on loopback.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { brigPaths, loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { smallFs } from '../../helpers/small-fs.js';
import { startModelServer, toolCallTurn, type ModelServer } from '../../helpers/model-server.js';
import { sweepOwner } from '../runs/fixture.js';

test('an agent whose home fills mid-run goes on: its transcript lines are held in memory and appended in order when space returns; the run completes', async (t) => {
  if (!(await requireEngine(t))) return;
  const disk = await smallFs(t, 64);
  if (!disk) return;
  t.after(() => sweepOwner(disk.dir));
  let m!: ModelServer;
  m = await startModelServer({
    script: [
      () => toolCallTurn('shell', { command: 'echo first' }),
      // The home fills while the model answers: the reply, then the tool result, meet a full disk.
      () => (disk.fill(), toolCallTurn('shell', { command: 'echo second-on-a-full-home' })),
      // Space returns before the last answer: everything held lands, in order.
      () => (disk.unfill(), toolCallTurn('finish', { answer: 'done' })),
    ],
  });
  t.after(() => m.close());
  const cfg = loadConfig({ BRIG_HOME: disk.dir, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_API: 'openai-chat', BRIG_MODEL_API_KEY: 'sk-test', BRIG_MODEL_CONTEXT_WINDOW: '32000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true, settings: { minFreeBytes: 4 * 1024 * 1024 } });
  await c.supervisor.start();
  try {
    const r = await c.supervisor.spawn({ task: 'Echo twice, then finish.', kind: 'agent', agent: 'general', objective: 'finish' });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    const run = r.value;
    assert.equal(run.endReason, 'completed', `${JSON.stringify(run.error)} ${run.stderrTail}`);
    assert.equal((run.result as { answer: string }).answer, 'done');
    assert.equal(m.requests.length, 3, 'every step asked the model');
    const lines = fs.readFileSync(path.join(brigPaths(disk.dir).runs, run.id, 'transcript.jsonl'), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { t: string; message?: { content?: unknown } });
    assert.deepEqual(lines.filter((l) => l.t === 'reply').length, 3, 'three replies on disk');
    const text = JSON.stringify(lines);
    assert.ok(text.indexOf('echo first') < text.indexOf('second-on-a-full-home'), 'in order');
    assert.match(text, /second-on-a-full-home\\n/, 'the tool result made on the full home is there');
  } finally {
    await c.close();
  }
});
