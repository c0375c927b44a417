import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { ApiClient } from '../../../src/client/index.js';
import { compose, startDaemon } from '../../../src/daemon/index.js';
import { runCli } from '../../helpers/cli.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, toolCallTurn, type RecordedRequest } from '../../helpers/model-server.js';
import { freshHome, leftovers } from '../runs/fixture.js';

/**
 * `brig replay RUN` (issue 22, item 2): an ended agent run's loop is run again in a fresh jail
 * with its model calls answered from the recorded replies — the provider (here the scripted
 * model server on host loopback, a stand-in, not a real model) is never contacted — and the
 * first request that differs from the recorded one is reported (step, roles, lengths; no
 * content). A real jailed agent on the real engine.
 */

type Msg = { role: string; content: unknown };
const turnsOf = (r: RecordedRequest) => (r.body.messages as Msg[]).filter((x) => x.role === 'assistant').length;

// req: lease:steer-not-grant events:ledger-no-content
test('[INV-1] [INV-7] an agent run of 3 scripted steps is replayed from its recording without the model (no divergence; a lease no wider); an altered recorded reply is reported at the step it changes; a command run, a live run and a run without its recording are refused', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const m = await startModelServer({
    script: (req) => {
      if (String((req.body.messages as Msg[])[0]?.content ?? '').includes('Wait here')) return toolCallTurn('shell', { command: 'sleep 60' }, { usage: { input: 100, output: 5 } });
      const turns = turnsOf(req);
      if (turns === 0) return toolCallTurn('shell', { command: 'echo one' }, { usage: { input: 300, output: 10 } });
      if (turns === 1) return toolCallTurn('shell', { command: 'echo two' }, { usage: { input: 350, output: 10 } });
      return toolCallTurn('finish', { answer: 'done after two' }, { usage: { input: 400, output: 5 } });
    },
  });
  t.after(() => m.close());
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '20000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const r = await c.brig.spawn({ task: 'Echo twice, then finish.', kind: 'agent', max_steps: 30 });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    assert.equal(r.value.endReason, 'completed', r.value.stderrTail);
    assert.equal(m.requests.length, 3, 'three scripted model calls');
    const before = m.requests.length;

    // 1. The same loop against its recording: no divergence, and the model server saw nothing new.
    const rp = await c.brig.replay(r.value.id);
    assert.ok(rp.ok, JSON.stringify(!rp.ok && rp.error));
    assert.equal(rp.value.replayOf, r.value.id);
    assert.notEqual(rp.value.id, r.value.id);
    assert.equal(rp.value.kind, 'agent');
    const done = await c.brig.wait(rp.value.id);
    assert.ok(done.ok);
    assert.equal(done.value.endReason, 'completed', done.value.stderrTail);
    assert.deepEqual((done.value.result as { answer: string }).answer, 'done after two', 'the replayed loop got the recorded finish');
    assert.deepEqual(done.value.replay, { of: r.value.id, calls: 3, recorded: 3, divergence: null });
    assert.equal(done.value.stepsExecuted, 3);
    assert.equal(m.requests.length, before, 'the replay never contacted the model server');
    const oldLease = c.leases.get(r.value.leaseId!);
    const newLease = c.leases.get(done.value.leaseId!);
    assert.ok(oldLease && newLease && newLease.id !== oldLease.id, 'a lease of its own');
    assert.deepEqual([...newLease.caps].sort(), [...oldLease.caps].sort(), 'derived again from the same request: no capability more');

    // 2. The recording altered: the second reply now runs another command. The second request
    // is still the recorded one; the third carries a different tool call and result.
    const file = path.join(home, 'runs', r.value.id, 'transcript.jsonl');
    const original = fs.readFileSync(file, 'utf8');
    const lines = original.split('\n');
    const replies = lines.map((l, i) => [l, i] as const).filter(([l]) => l.includes('"t":"reply"'));
    assert.equal(replies.length, 3);
    const third = JSON.parse(replies[2]![0]) as { step: number };
    lines[replies[1]![1]] = replies[1]![0].replace('echo two', 'echo twenty-two');
    fs.writeFileSync(file, lines.join('\n'));
    const alt = await c.brig.replay(r.value.id);
    assert.ok(alt.ok, JSON.stringify(!alt.ok && alt.error));
    const altDone = await c.brig.wait(alt.value.id);
    assert.ok(altDone.ok);
    const d = altDone.value.replay?.divergence;
    assert.ok(d, `a divergence is reported: ${JSON.stringify(altDone.value.replay)}`);
    assert.equal(d.call, 3, 'at the third model call, the first whose request carries the altered reply');
    assert.equal(d.step, third.step, 'reported at the step of that call');
    // The altered reply is replayed as recorded; what the loop did with it (the shell's output) is not.
    assert.match(d.what, /^message 5 of 5: tool 13 chars recorded, tool 20 chars replayed$/);
    assert.doesNotMatch(d.what, /echo|twenty/, 'content-free: roles, tool names, lengths');
    assert.equal(m.requests.length, before, 'still no model call');
    fs.writeFileSync(file, original);

    // 3. Refusals, each with its reason.
    const cmd = await c.brig.spawn({ task: 'true', kind: 'command', argv: ['true'] });
    assert.ok(cmd.ok);
    const notAgent = await c.brig.replay(cmd.value.id);
    assert.equal(!notAgent.ok && notAgent.error.code, 'replay_unavailable');
    assert.equal(!notAgent.ok && (notAgent.error.data as { reason: string }).reason, 'not_an_agent');
    const live = await c.brig.spawn({ task: 'Wait here.', kind: 'agent', async: true, max_steps: 30 });
    assert.ok(live.ok);
    const notEnded = await c.brig.replay(live.value.id);
    assert.equal(!notEnded.ok && (notEnded.error.data as { reason: string }).reason, 'not_ended');
    await c.brig.kill(live.value.id, { confirm: true });
    fs.renameSync(file, `${file}.away`);
    const missing = await c.brig.replay(r.value.id);
    assert.equal(!missing.ok && (missing.error.data as { reason: string }).reason, 'recording_missing');
    fs.renameSync(`${file}.away`, file);

    const ledger = fs.readdirSync(path.join(home, 'ledger')).map((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8')).join('\n');
    const ends = ledger.split('\n').filter((l) => l.includes('"run.replay"'));
    assert.equal(ends.length, 2, 'each replay is ledgered');
    assert.match(ends.find((l) => l.includes(rp.value.id))!, new RegExp(`"replayOf":"${r.value.id}".*"divergenceStep":null`));
    assert.match(ends.find((l) => l.includes(alt.value.id))!, new RegExp(`"divergenceStep":${third.step}`));
    assert.doesNotMatch(ledger, /twenty-two|done after two/, 'content-free');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('brig replay on its faces: the CLI (through a real daemon over its socket) prints no divergence and exits 0, --json carries the replay field; POST /v1/runs/RUN/replay answers 202 with the new run; a command run is refused 409 replay_unavailable (exit 5)', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const m = await startModelServer({
    script: (req) => (turnsOf(req) === 0 ? toolCallTurn('shell', { command: 'echo one' }) : toolCallTurn('finish', { answer: 'ok' })),
  });
  t.after(() => m.close());
  const d = await startDaemon(loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '20000' }), { tickMs: 200 });
  const api = new ApiClient(d.socketPath);
  try {
    const r = await api.spawn({ task: 'Echo once, then finish.', kind: 'agent', max_steps: 30 });
    assert.ok(r.ok && r.value.endReason === 'completed', JSON.stringify(r));
    const before = m.requests.length;
    const cli = await runCli(['replay', r.value.id], { home });
    assert.equal(cli.code, 0, cli.out + cli.err);
    assert.match(cli.out, new RegExp(`^replay r-[0-9a-f]+ of ${r.value.id}: replayed 2 steps \\(2 of 2 recorded model calls\\), no divergence; the replay ended completed\\n$`));
    const json = await runCli(['replay', r.value.id, '--json'], { home });
    assert.equal(json.code, 0, json.out + json.err);
    const body = JSON.parse(json.out) as { replayOf: string; replay: { calls: number; divergence: unknown } };
    assert.equal(body.replayOf, r.value.id);
    assert.deepEqual([body.replay.calls, body.replay.divergence], [2, null]);
    const http = await api.replay(r.value.id);
    assert.ok(http.ok && http.value.replayOf === r.value.id, JSON.stringify(http));
    assert.ok((await api.wait(http.value.id)).ok);
    assert.equal(m.requests.length, before, 'no replay reached the model server');
    const cmd = await api.spawn({ task: 'true', kind: 'command', argv: ['true'] });
    assert.ok(cmd.ok);
    const refused = await runCli(['replay', cmd.value.id, '--json'], { home });
    assert.equal(refused.code, 5, refused.out + refused.err);
    assert.equal(JSON.parse(refused.out).error.code, 'replay_unavailable');
  } finally {
    await d.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
