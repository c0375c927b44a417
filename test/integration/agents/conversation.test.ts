import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Client } from 'undici';
import { listenApi } from '../../../src/api/index.js';
import { ApiClient, daemonBrig } from '../../../src/client/index.js';
import { loadConfig } from '../../../src/config/index.js';
import { compose, type Composed } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, toolCallTurn, type ModelServer, type RecordedRequest, type Turn } from '../../helpers/model-server.js';
import { freshHome, leftovers, until } from '../runs/fixture.js';

/**
 * Sessions' ping-pong is a conversation (issue 22, item 1): the sender gets each reply of a
 * running agent child and answers it — a callback in the library, a round per call over HTTP
 * and MCP with a conversation id, a round per `send` tool call for an agent lead. Real jailed
 * agents, driven by a scripted model server on host loopback (a stand-in, not a real model).
 */

async function agentSupervisor(home: string, m: ModelServer): Promise<Composed> {
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '20000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  return c;
}

type Msg = { role: string; content: unknown };
const texts = (req: RecordedRequest, role: string) => (req.body.messages as Msg[]).filter((x) => x.role === role).map((x) => String(x.content ?? ''));

/**
 * A child that answers each message it takes: PING-n → a reply `PONG-n` (it keeps working
 * between messages, one short shell step at a time, each with no text); BYE → finish.
 */
function chatChild(req: RecordedRequest): Turn {
  const heard = texts(req, 'user').join('\n');
  const said = texts(req, 'assistant').join('\n');
  if (heard.includes('BYE')) return toolCallTurn('finish', { answer: 'bye' }, { usage: { input: 150, output: 5 } });
  const pings = [...heard.matchAll(/PING-(\d+)/g)].map((x) => x[1]!);
  const open = pings.find((n) => !said.includes(`PONG-${n}`));
  if (open !== undefined) return toolCallTurn('shell', { command: 'sleep 0.3' }, { text: `PONG-${open}`, usage: { input: 120, output: 5 } });
  return toolCallTurn('shell', { command: 'sleep 0.5' }, { usage: { input: 100, output: 5 } });
}

test('ping-pong goes back and forth: the library callback answers each reply; over HTTP each call is one round of a conversation id; max_turns outside 0..5 is refused', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const m = await startModelServer({ script: (req) => chatChild(req) });
  t.after(() => m.close());
  const c = await agentSupervisor(home, m);
  const sock = path.join(home, 'api.sock');
  const api = await listenApi(c.brig, sock);
  const http = new Client('http://brig', { socketPath: sock });
  try {
    const r = await c.brig.spawn({ task: 'CHAT-CHILD: answer each ping', kind: 'agent', async: true });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    const id = r.value.id;
    await until(() => m.requests.length >= 1, 'the first model call');

    // The library: a callback answers each reply; its answer is the next message.
    const heard: string[] = [];
    const s = await c.brig.send(id, 'PING-1', {
      mode: 'ping-pong',
      maxTurns: 3,
      timeoutMs: 30_000,
      onReply: (reply, conv) => {
        heard.push(`${conv.turn}:${reply.text}`);
        return `PING-${conv.turn + 1}`;
      },
    });
    assert.ok(s.ok, JSON.stringify(!s.ok && s.error));
    assert.deepEqual(s.value.replies.map((x) => x.text), ['PONG-1', 'PONG-2', 'PONG-3'], 'each reply answers the message before it');
    assert.deepEqual(heard, ['1:PONG-1', '2:PONG-2'], 'the callback heard each reply it could still answer');
    assert.equal(s.value.conversation?.turn, 3);
    assert.equal(s.value.conversation?.open, false, 'three turns spent: the conversation is over');
    // Back and forth: the child was asked PING-2 only after it had said PONG-1.
    const asked2 = m.requests.findIndex((q) => texts(q, 'user').some((u) => u.includes('PING-2')));
    const said1 = m.requests.findIndex((q) => texts(q, 'assistant').some((u) => u.includes('PONG-1')));
    assert.ok(said1 >= 0 && asked2 >= said1, `PING-2 reached the child (request ${asked2}) after its PONG-1 (request ${said1})`);

    // The same callback over the daemon's API: every round is one HTTP call.
    const remote = daemonBrig(new ApiClient(sock));
    const viaApi = await remote.send(id, 'PING-7', { maxTurns: 2, timeoutMs: 30_000, onReply: (_r, conv) => `PING-${7 + conv.turn}` });
    assert.ok(viaApi.ok, JSON.stringify(!viaApi.ok && viaApi.error));
    assert.deepEqual(viaApi.value.replies.map((x) => x.text), ['PONG-7', 'PONG-8']);

    // HTTP, a round per call: the first opens the conversation, each answer names it.
    const post = async (body: unknown) => {
      const res = await http.request({ path: `/v1/runs/${id}/send`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: res.statusCode, body: (await res.body.json()) as { send?: { replies: { text: string }[]; conversation?: { id: string; turn: number; maxTurns: number; open: boolean } }; error?: { code: string; message: string } } };
    };
    const one = await post({ text: 'PING-4', mode: 'ping-pong', maxTurns: 2, timeoutMs: 30_000 });
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.deepEqual(one.body.send!.replies.map((x) => x.text), ['PONG-4'], 'a round returns after one reply');
    const conv = one.body.send!.conversation!;
    assert.match(conv.id, /^c-[0-9a-f]{16}$/);
    assert.deepEqual({ turn: conv.turn, maxTurns: conv.maxTurns, open: conv.open }, { turn: 1, maxTurns: 2, open: true });
    const two = await post({ text: 'PING-5', conversation: conv.id, timeoutMs: 30_000 });
    assert.equal(two.status, 200, JSON.stringify(two.body));
    assert.deepEqual(two.body.send!.replies.map((x) => x.text), ['PONG-5']);
    assert.deepEqual(two.body.send!.conversation, { id: conv.id, turn: 2, maxTurns: 2, open: false });
    const three = await post({ text: 'PING-6', conversation: conv.id });
    assert.equal(three.status, 404);
    assert.equal(three.body.error?.code, 'conversation_not_found', 'a conversation whose turns are spent takes no answer');

    // max_turns is 0..5: outside is refused with the bounds, on every face.
    const six = await post({ text: 'PING-9', mode: 'ping-pong', maxTurns: 6 });
    assert.equal(six.status, 400);
    assert.equal(six.body.error?.code, 'invalid_input');
    const lib = await c.brig.send(id, 'PING-9', { mode: 'ping-pong', maxTurns: 6 });
    assert.equal(!lib.ok && lib.error.code, 'invalid_input');
    assert.match(!lib.ok ? lib.error.message : '', /max_turns 6 is outside 0\.\.5/);

    const bye = await c.brig.send(id, 'BYE');
    assert.ok(bye.ok);
    const done = await c.brig.wait(id);
    assert.ok(done.ok && done.value.endReason === 'completed', JSON.stringify(done.ok && done.value.error));
  } finally {
    await http.close();
    await api.close();
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test("an agent lead's `send` tool returns after each reply of its child, and the lead answers in the same conversation", async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  let childId = '';
  const m = await startModelServer({
    script: (req) => {
      const sys = String((req.body.messages as Msg[])[0]?.content ?? '');
      if (sys.includes('CHAT-CHILD')) return chatChild(req);
      const results = texts(req, 'tool');
      const turns = texts(req, 'assistant').length;
      if (turns === 0) return toolCallTurn('spawn', { task: 'CHAT-CHILD: answer each ping', async: true }, { usage: { input: 200, output: 5 } });
      if (turns === 1) {
        childId = /r-[0-9a-f]{16}/.exec(results.join('\n'))?.[0] ?? '';
        return toolCallTurn('send', { runId: childId, text: 'PING-1', mode: 'ping-pong', maxTurns: 2, timeoutMs: 30000 }, { usage: { input: 220, output: 5 } });
      }
      if (turns === 2) {
        const conversation = /"id": ?"(c-[0-9a-f]{16})"/.exec(results.at(-1) ?? '')?.[1] ?? 'none';
        return toolCallTurn('send', { runId: childId, text: 'PING-2', conversation, timeoutMs: 30000 }, { usage: { input: 240, output: 5 } });
      }
      if (turns === 3) return toolCallTurn('send', { runId: childId, text: 'BYE' }, { usage: { input: 250, output: 5 } });
      return toolCallTurn('finish', { answer: results.slice(-3, -1).join('\n---\n') }, { usage: { input: 260, output: 5 } });
    },
  });
  t.after(() => m.close());
  const c = await agentSupervisor(home, m);
  try {
    const r = await c.brig.spawn({ task: 'Talk to a child.', kind: 'agent', agent: 'coordinator' });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    assert.equal(r.value.endReason, 'completed', r.value.stderrTail);
    const [first, second] = String((r.value.result as { answer: string }).answer).split('\n---\n');
    const one = JSON.parse(first!) as { replies: { text: string }[]; conversation: { id: string; turn: number; open: boolean } };
    const two = JSON.parse(second!) as { replies: { text: string }[]; conversation: { id: string; turn: number; open: boolean } };
    assert.deepEqual(one.replies.map((x) => x.text), ['PONG-1'], 'the first send returned after the first reply');
    assert.deepEqual({ turn: one.conversation.turn, open: one.conversation.open }, { turn: 1, open: true });
    assert.deepEqual(two.replies.map((x) => x.text), ['PONG-2'], "the lead's answer got the child's next reply");
    assert.deepEqual({ id: two.conversation.id, turn: two.conversation.turn, open: two.conversation.open }, { id: one.conversation.id, turn: 2, open: false });
    await c.brig.wait(childId);
    await c.supervisor.idle();
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
