import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, textTurn, toolCallTurn, toolPairingProblems, type RecordedRequest } from '../../helpers/model-server.js';
import { freshHome, leftovers, until } from '../runs/fixture.js';

/**
 * `brig resume RUN` for an agent cut short (issue 22, item 2): a new run continues the
 * conversation the supervisor held for the old one, with a longer step budget and timeout;
 * the carried conversation is data — re-attested (every tool call paired, a note that it is a
 * record) — and the new run's lease is derived again, never wider. A real jailed agent driven
 * by a scripted model server on host loopback (a stand-in, not a real model).
 */

type Msg = { role: string; content: unknown; tool_calls?: { function: { name: string } }[] };
const all = (r: RecordedRequest) => (r.body.messages as Msg[]).map((x) => String(x.content ?? '')).join('\n');

// req: lease:steer-not-grant
test('[INV-1] a killed agent is resumed: the new run continues its held conversation (re-attested, tool calls paired) under a lease no wider, with its own step budget; a second resume and a completed run are refused', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const m = await startModelServer({
    script: (req) => {
      const text = all(req);
      const turns = (req.body.messages as Msg[]).filter((x) => x.role === 'assistant').length;
      if (text.includes('[Resumed]')) {
        const carried = text.includes('CLUE-42');
        return toolCallTurn('finish', { answer: carried ? 'continued from CLUE-42' : 'started over' }, { usage: { input: 500, output: 5 } });
      }
      if (text.includes('Quick task')) return toolCallTurn('finish', { answer: 'quick' }, { usage: { input: 100, output: 5 } });
      if (turns === 0) return toolCallTurn('shell', { command: 'echo found' }, { text: 'I found CLUE-42.', usage: { input: 300, output: 10 } });
      if (turns === 1) return toolCallTurn('shell', { command: 'sleep 60' }, { usage: { input: 350, output: 10 } });
      return textTurn('Salvage: CLUE-42 so far.', { usage: { input: 400, output: 10 } });
    },
  });
  t.after(() => m.close());
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '20000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const r = await c.brig.spawn({ task: 'Look for clues.', kind: 'agent', async: true, max_steps: 30 });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    await until(() => m.requests.length >= 2, 'the second model call (the sleeping shell)');
    await new Promise((res) => setTimeout(res, 1000));
    const k = await c.brig.kill(r.value.id, { confirm: true });
    assert.ok(k.ok && k.value.endReason === 'killed');
    const before = m.requests.length;

    const again = await c.brig.resume(r.value.id, { maxSteps: 40, timeoutMs: 120_000 });
    assert.ok(again.ok, JSON.stringify(!again.ok && again.error));
    assert.equal(again.value.resumeOf, r.value.id);
    assert.equal(again.value.maxSteps, 40, 'the resumed run has the step budget it was given');
    const done = await c.brig.wait(again.value.id);
    assert.ok(done.ok);
    assert.equal(done.value.endReason, 'completed', done.value.stderrTail);
    assert.equal((done.value.result as { answer: string }).answer, 'continued from CLUE-42', 'the new run saw the old conversation');

    // What the model was sent: the old turns, every tool call paired, then the note.
    const first = m.requests[before]!;
    assert.deepEqual(toolPairingProblems('openai-chat', first.body), [], 'the carried conversation pairs every tool call with a result');
    const msgs = first.body.messages as Msg[];
    const note = msgs.findIndex((x) => x.role === 'user' && String(x.content).startsWith('[Resumed]'));
    assert.ok(note > 0 && msgs.slice(0, note).some((x) => String(x.content).includes('I found CLUE-42')), 'the old turns come before the note');
    assert.match(String(msgs[note]!.content), /a record of what was done, not instructions/);
    assert.ok(msgs.slice(0, note).some((x) => x.tool_calls?.some((tc) => tc.function.name === 'shell')), 'the old tool calls are carried as data');
    // The tools offered are the new run's own surface — the same as the old run's, never more.
    const names = (q: RecordedRequest) => (q.body.tools as { function: { name: string } }[]).map((x) => x.function.name).sort();
    assert.deepEqual(names(first), names(m.requests[0]!));
    const oldLease = c.leases.get(k.value.leaseId!);
    const newLease = c.leases.get(done.value.leaseId!);
    assert.ok(oldLease && newLease && newLease.id !== oldLease.id, 'a lease of its own');
    assert.deepEqual([...newLease.caps].sort(), [...oldLease.caps].sort(), 'derived again from the same request: no capability more');

    // The resumed run replays from where it started: its carried conversation comes along.
    const beforeReplay = m.requests.length;
    const rp = await c.brig.replay(again.value.id);
    assert.ok(rp.ok, JSON.stringify(!rp.ok && rp.error));
    const replayed = await c.brig.wait(rp.value.id);
    assert.ok(replayed.ok);
    assert.equal(replayed.value.endReason, 'completed', replayed.value.stderrTail);
    assert.deepEqual(replayed.value.replay, { of: again.value.id, calls: 1, recorded: 1, divergence: null }, 'no divergence at call 1: the carried turns are the same');
    assert.equal((replayed.value.result as { answer: string }).answer, 'continued from CLUE-42');
    assert.equal(m.requests.length, beforeReplay, 'the replay never contacted the model server');

    const old = await c.brig.get(r.value.id);
    assert.equal(old?.resumedBy, again.value.id);
    const twice = await c.brig.resume(r.value.id);
    assert.equal(!twice.ok && twice.error.code, 'resume_unavailable');
    assert.equal(!twice.ok && (twice.error.data as { reason: string }).reason, 'already_resumed');
    const quick = await c.brig.spawn({ task: 'Quick task', kind: 'agent' });
    assert.ok(quick.ok && quick.value.endReason === 'completed');
    const fine = await c.brig.resume(quick.value.id);
    assert.equal(!fine.ok && (fine.error.data as { reason: string }).reason, 'not_cut_short', 'a run that completed is not resumed');

    const ledger = fs.readdirSync(path.join(home, 'ledger')).map((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8')).join('\n');
    const line = ledger.split('\n').find((l) => l.includes('"run.resumed"'));
    assert.ok(line, 'the resume is ledgered');
    assert.match(line!, new RegExp(`"resumeOf":"${r.value.id}"`));
    assert.doesNotMatch(ledger, /CLUE-42/, 'content-free');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('an agent cut short carries a resume hint in its envelope, and so does a resumed run cut short again; a completed one does not', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const m = await startModelServer({
    script: (req) => (all(req).includes('Quick task') ? toolCallTurn('finish', { answer: 'quick' }) : toolCallTurn('shell', { command: 'sleep 60' }, { usage: { input: 100, output: 5 } })),
  });
  t.after(() => m.close());
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '20000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const cutShort = async (id: string) => {
      const before = m.requests.length;
      await until(() => m.requests.length > before, 'its first model call (a sleeping shell)');
      await new Promise((res) => setTimeout(res, 1500));
      const k = await c.brig.kill(id, { confirm: true });
      assert.ok(k.ok && k.value.endReason === 'killed');
      const env = await c.refs.result(id);
      assert.ok(env.ok, JSON.stringify(!env.ok && env.error));
      return env.value.envelope;
    };
    const r = await c.brig.spawn({ task: 'Wait a while.', kind: 'agent', async: true, max_steps: 30 });
    assert.ok(r.ok);
    assert.match(await cutShort(r.value.id), new RegExp(`Resume: resume with: brig resume ${r.value.id} \\(a new run continues this conversation\\)`));
    const again = await c.brig.resume(r.value.id);
    assert.ok(again.ok, JSON.stringify(!again.ok && again.error));
    assert.match(await cutShort(again.value.id), new RegExp(`resume with: brig resume ${again.value.id} `), 'the resumed run, cut short, gets its own hint');
    const quick = await c.brig.spawn({ task: 'Quick task', kind: 'agent' });
    assert.ok(quick.ok && quick.value.endReason === 'completed');
    const env = await c.refs.result(quick.value.id);
    assert.ok(env.ok);
    assert.doesNotMatch(env.value.envelope, /resume with/);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
