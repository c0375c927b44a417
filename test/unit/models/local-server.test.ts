/**
 * The local provider's server over a real unix socket, with the scripted engine twin in place
 * of the model: the OpenAI chat-completions wire brig's own client reads (plain and streamed),
 * usage from the engine's tokenizer, tools through the grammar, a context overflow in the
 * shape real providers send, one generation at a time behind a bounded queue (429 +
 * Retry-After past it), and a generation stopped when its client goes away.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { chatmlPrompt, createLocalServer, OpenAIChatClient } from '../../../src/models/index.js';
import { ScriptedEngine } from '../../helpers/fakes/scripted-engine.js';

async function serve(t: import('node:test').TestContext, engine: ScriptedEngine, maxQueue?: number): Promise<{ agent: Agent; client: OpenAIChatClient }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-ls-'));
  const socket = path.join(dir, 's.sock');
  const { server } = createLocalServer({ engine, ...(maxQueue !== undefined ? { maxQueue } : {}), keepAliveMs: 50 });
  await new Promise<void>((r) => server.listen(socket, r));
  const agent = new Agent({ connect: { socketPath: socket } });
  const client = new OpenAIChatClient({ baseUrl: 'http://localhost/v1', model: 'm', dispatcher: agent, maxRetries: 0 });
  t.after(async () => {
    await agent.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { agent, client };
}

const post = (agent: Agent, body: unknown) =>
  request('http://localhost/v1/chat/completions', { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

const TOOLS = [
  { name: 'write_file', description: 'Write a file.', parameters: { type: 'object', properties: { path: { type: 'string', maxLength: 2000 }, content: { type: 'string' } }, required: ['path', 'content'] } },
  { name: 'finish', description: 'End with the answer.', parameters: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] } },
];

test('plain and streamed replies through brig\'s own client; usage is the engine tokenizer\'s count of the ChatML prompt and of the reply', async (t) => {
  const engine = new ScriptedEngine(() => 'hello there');
  const { client } = await serve(t, engine);
  const c = await client.complete({ system: 'be brief', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(c.message.content, 'hello there');
  assert.equal(c.finishReason, 'stop');
  const prompt = engine.tokenize(chatmlPrompt([{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }], []));
  assert.deepEqual(engine.requests[0]!.tokens, prompt, 'the engine was given the ChatML prompt of what was sent');
  assert.equal(c.usage.input, prompt.length);
  assert.equal(c.usage.output, 'hello there'.length);
  assert.equal(c.usage.total, c.usage.input + c.usage.output);
  assert.ok(c.firstTokenMs !== null, 'streamed: the text came as it was generated');
  assert.equal(engine.requests[0]!.grammar, undefined, 'no tools: no grammar');
  assert.equal(engine.requests[0]!.temperature, 0, 'greedy unless asked');
});

test('tools: the grammar binds the reply; a call comes back as the wire\'s tool_calls, an answer object as text; tool_choice none sends no grammar', async (t) => {
  const replies = ['{"name":"write_file","arguments":{"path":"out/a.txt","content":"hi"}}', '{"answer":"all done"}', 'free text'];
  const engine = new ScriptedEngine(() => replies.shift()!);
  const { client } = await serve(t, engine);
  const call = await client.complete({ system: 's', messages: [{ role: 'user', content: 'go' }], tools: TOOLS, toolChoice: 'required' });
  assert.equal(call.finishReason, 'tool_calls');
  assert.equal(call.message.toolCalls.length, 1);
  assert.equal(call.message.toolCalls[0]!.name, 'write_file');
  assert.deepEqual(call.message.toolCalls[0]!.input, { path: 'out/a.txt', content: 'hi' });
  assert.match(engine.requests[0]!.grammar!, /^root ::= call-\d+ \| call-\d+\n/, 'required: calls only');
  assert.doesNotMatch(engine.requests[0]!.grammar!, /2000|\{\d/, 'no bounded repetition from maxLength');
  const answer = await client.complete({ system: 's', messages: [{ role: 'user', content: 'go' }], tools: TOOLS });
  assert.equal(answer.message.content, 'all done');
  assert.equal(answer.message.toolCalls.length, 0);
  assert.match(engine.requests[1]!.grammar!, /\| answer\n/, 'auto: a call or an answer');
  await client.complete({ system: 's', messages: [{ role: 'user', content: 'go' }], tools: TOOLS, toolChoice: 'none' });
  assert.equal(engine.requests[2]!.grammar, undefined);
});

test('a prompt past the context is refused 400 context_length_exceeded, as OpenAI-compatible servers do; the reply is clamped to the room left', async (t) => {
  const engine = new ScriptedEngine(() => 'x'.repeat(500), 200);
  const { agent, client } = await serve(t, engine);
  const big = await post(agent, { model: 'm', messages: [{ role: 'user', content: 'y'.repeat(400) }] });
  assert.equal(big.statusCode, 400);
  const body = (await big.body.json()) as { error: { code: string; type: string; message: string } };
  assert.equal(body.error.code, 'context_length_exceeded');
  assert.equal(body.error.type, 'invalid_request_error');
  assert.match(body.error.message, /maximum context length is 200 tokens/);
  await assert.rejects(client.complete({ system: '', messages: [{ role: 'user', content: 'y'.repeat(400) }] }), (e: Error & { code?: string; data?: { status?: number } }) => {
    assert.equal(e.code, 'model_unavailable');
    assert.equal(e.data?.status, 400);
    assert.match(e.message, /maximum context length/);
    return true;
  });
  const fits = await client.complete({ system: '', messages: [{ role: 'user', content: 'y'.repeat(100) }], maxTokens: 10_000 });
  assert.equal(fits.finishReason, 'length');
  assert.equal(fits.usage.input + fits.usage.output, 200, 'generation stops at the context\'s end');
});

test('one generation at a time; past the queue a request is refused 429 with Retry-After; a client that goes away stops its generation', async (t) => {
  const engine = new ScriptedEngine(() => 'abcdefghijklmnopqrstuvwxyz', 4096, 20);
  const { agent } = await serve(t, engine, 1);
  const body = (i: number) => ({ model: 'm', stream: true, messages: [{ role: 'user', content: `n${i}` }] });
  const first = post(agent, body(1));
  const second = post(agent, body(2));
  // Let both be accepted (one generating, one queued) before the third arrives.
  const a = await first;
  const b = await second;
  const third = await post(agent, body(3));
  assert.equal(third.statusCode, 429);
  assert.ok(Number(third.headers['retry-after']) >= 1, 'Retry-After in seconds');
  assert.equal(((await third.body.json()) as { error: { type: string } }).error.type, 'rate_limit_error');
  const [ta, tb] = await Promise.all([a.body.text(), b.body.text()]);
  assert.match(ta, /\[DONE\]/);
  assert.match(tb, /\[DONE\]/);
  assert.equal(engine.maxConcurrent, 1, 'never two generations at once');
  // A client that hangs up mid-generation: the engine sees its signal and stops.
  const ac = new AbortController();
  const gone = await request('http://localhost/v1/chat/completions', { method: 'POST', dispatcher: agent, signal: ac.signal, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(4)) });
  await new Promise((r) => setTimeout(r, 100));
  ac.abort();
  await gone.body.text().catch(() => undefined);
  for (let i = 0; i < 100 && engine.aborted === 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(engine.aborted, 1, 'the generation was stopped when its client went away');
});
