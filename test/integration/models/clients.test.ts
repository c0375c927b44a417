/**
 * Both clients against the scripted model server over real HTTP, streamed: a tool loop whose
 * results pair with the calls, fragmented tool-call arguments, missing ids, malformed
 * arguments, usage normalized, a byte-stable system prompt and tool list, the exact request
 * shape of each format, a server that ignores `stream: true`, and a signal that aborts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isBrigError } from '../../../src/util/errors.js';
import type { LlmMessage, LlmTool } from '../../../src/models/index.js';
import { textTurn, toolCallTurn } from '../../helpers/model-server.js';
import { FORMATS, setup } from './shared.js';

const TOOLS: LlmTool[] = [
  { name: 'read_file', description: 'Read a workspace file', parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
  { name: 'finish', description: 'End with an answer', parameters: { type: 'object', properties: { answer: { type: 'string' } } } },
];
const SYSTEM = 'You are a careful sub-agent. Work inside /workspace only.';

for (const format of FORMATS) {
  test(`${format}: a streamed tool loop — fragmented arguments, results paired with calls, usage normalized, system and tools byte-stable`, async (t) => {
    const { m, client } = await setup(t, format, {
      script: [
        toolCallTurn('read_file', { path: 'notes/a.txt' }, { text: 'Reading first.', argPieces: 7, usage: { input: 500, output: 30, cacheRead: 0, cacheWrite: 400 }, quirks: { pings: true } }),
        { toolCalls: [{ name: 'read_file', input: { path: 'b' } }, { name: 'read_file', input: { path: 'c' } }], argPieces: 3, usage: { input: 700, output: 40, cacheRead: 400 } },
        textTurn('All three files read; done.', { textPieces: 5, usage: { input: 900, output: 12, cacheRead: 600 } }),
      ],
    });
    const messages: LlmMessage[] = [{ role: 'user', content: 'Summarise notes/.' }];
    const seen = [];
    for (let step = 0; step < 3; step++) {
      const c = await client.complete({ system: SYSTEM, messages, tools: TOOLS, cacheKey: 'root-run-1' });
      seen.push(c);
      messages.push(c.message);
      for (const call of c.message.toolCalls) messages.push({ role: 'tool', toolCallId: call.id, content: `contents of ${(call.input as { path: string }).path}` });
    }
    const [a, b, c] = seen;
    assert.equal(a!.message.content, 'Reading first.');
    assert.deepEqual(a!.message.toolCalls.map((x) => [x.name, x.input]), [['read_file', { path: 'notes/a.txt' }]]);
    assert.equal(a!.finishReason, 'tool_calls');
    assert.deepEqual(a!.usage, { input: 500, output: 30, cacheRead: 0, cacheWrite: format === 'anthropic-messages' ? 400 : 0, total: 530 });
    assert.ok(a!.firstTokenMs !== null && a!.firstTokenMs >= 0);
    assert.deepEqual(b!.message.toolCalls.map((x) => x.input), [{ path: 'b' }, { path: 'c' }]);
    assert.equal(new Set(b!.message.toolCalls.map((x) => x.id)).size, 2);
    assert.equal(c!.message.content, 'All three files read; done.');
    assert.equal(c!.finishReason, 'stop');
    assert.deepEqual(c!.usage, { input: 900, output: 12, cacheRead: 600, cacheWrite: 0, total: 912 });
    assert.equal(c!.model, format === 'openai-chat' ? 'gpt-test' : 'claude-test');
    // The server checked pairing on every request (a broken one would have been a 400).
    assert.deepEqual(m.problems, []);
    assert.equal(m.requests.length, 3);
    // Each reply is read to its end, so its connection goes back to the pool (undici may open a
    // second one when the next call starts before the first is released; never one per call).
    assert.ok(new Set(m.requests.map((r) => r.connection)).size < m.requests.length, 'connections are kept alive and reused');
    for (const r of m.requests) assert.equal(r.body.stream, true);
    const prefix = (r: (typeof m.requests)[number]) =>
      format === 'openai-chat' ? JSON.stringify([r.body.messages[0], r.body.tools]) : JSON.stringify([r.body.system, r.body.tools]);
    assert.equal(new Set(m.requests.map(prefix)).size, 1, 'the system prompt and tools are byte-identical across steps');
    // Earlier turns are resent exactly as before: new material only at the end.
    const turns = (r: (typeof m.requests)[number]) => JSON.stringify(r.body.messages).replace(/,"cache_control":\{"type":"ephemeral"\}/g, '');
    assert.ok(turns(m.requests[2]!).startsWith(turns(m.requests[1]!).slice(0, -1)));
  });

  test(`${format}: missing tool-call ids are minted brig_<n>; malformed arguments give input {} and inputError, no throw`, async (t) => {
    const { client } = await setup(t, format, {
      script: [{ toolCalls: [{ name: 'read_file', input: { path: 'x' }, id: null }, { name: 'finish', rawArguments: '{"answer": "unterminated', id: 'call_ok' }], argPieces: 2 }],
    });
    const c = await client.complete({ system: SYSTEM, messages: [{ role: 'user', content: 'go' }], tools: TOOLS });
    const [minted, bad] = c.message.toolCalls;
    assert.match(minted!.id, /^brig_\d+$/);
    assert.deepEqual(minted!.input, { path: 'x' });
    assert.equal(bad!.id, 'call_ok');
    assert.deepEqual(bad!.input, {});
    assert.match(bad!.inputError!, /not valid JSON/);
  });

  test(`${format}: a server that ignores stream:true and answers one JSON body is understood`, async (t) => {
    const { client } = await setup(t, format, { script: [toolCallTurn('read_file', { path: 'p' }, { text: 'plain', plain: true, usage: { input: 40, output: 4, cacheRead: 8 } })] });
    const c = await client.complete({ system: SYSTEM, messages: [{ role: 'user', content: 'go' }], tools: TOOLS });
    assert.equal(c.message.content, 'plain');
    assert.deepEqual(c.message.toolCalls.map((x) => x.input), [{ path: 'p' }]);
    assert.deepEqual(c.usage, { input: 40, output: 4, cacheRead: 8, cacheWrite: 0, total: 44 });
  });

  test(`${format}: the caller's signal aborts a call mid-stream`, async (t) => {
    const { m, client } = await setup(t, format, { script: [{ fault: { kind: 'stall', afterEvents: 2 } }] });
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 150);
    const t0 = Date.now();
    await assert.rejects(client.complete({ system: SYSTEM, messages: [{ role: 'user', content: 'go' }], signal: ctl.signal }), (e: unknown) => {
      assert.ok(isBrigError(e, 'model_unavailable'));
      assert.equal(e.data.reason, 'aborted');
      return true;
    });
    assert.ok(Date.now() - t0 < 5000);
    assert.equal(m.requests.length, 1);
  });
}

test('openai-chat: the request — bearer key, system first, tools as functions, stream_options, prompt_cache_key, max_tokens clamped; usage chunk with choices null and no [DONE]', async (t) => {
  const { m, client } = await setup(t, 'openai-chat', { script: [textTurn('ok', { quirks: { usageChoices: 'null', noDone: true }, usage: { input: 10, output: 2, cacheRead: 4 } })] }, { apiKey: 'sk-test', maxOutputTokens: 1000 });
  const c = await client.complete({ system: 'SYS', messages: [{ role: 'user', content: 'hi' }], tools: [TOOLS[0]!], maxTokens: 5000, cacheKey: 'tree-9' });
  assert.deepEqual(c.usage, { input: 10, output: 2, cacheRead: 4, cacheWrite: 0, total: 12 });
  const r = m.requests[0]!;
  assert.equal(r.path, '/v1/chat/completions');
  assert.equal(r.headers.authorization, 'Bearer sk-test');
  assert.deepEqual(r.body, {
    model: 'gpt-test',
    messages: [{ role: 'system', content: 'SYS' }, { role: 'user', content: 'hi' }],
    stream: true,
    stream_options: { include_usage: true },
    tools: [{ type: 'function', function: { name: 'read_file', description: TOOLS[0]!.description, parameters: TOOLS[0]!.parameters } }],
    max_tokens: 1000,
    prompt_cache_key: 'tree-9',
  });
});

test('anthropic-messages: the request — x-api-key and anthropic-version, system, tools with input_schema, tool results merged into one user turn; cumulative message_delta not summed', async (t) => {
  const { m, client } = await setup(
    t,
    'anthropic-messages',
    { script: [textTurn('fine', { usage: { input: 50, output: 21 }, quirks: { cumulativeDeltas: true, pings: true } })] },
    { apiKey: 'sk-ant-test', maxOutputTokens: 2048 },
  );
  const c = await client.complete({
    system: 'SYS',
    tools: [TOOLS[0]!],
    messages: [
      { role: 'user', content: 'read a and b' },
      { role: 'assistant', content: 'ok', toolCalls: [{ id: 'toolu_1', name: 'read_file', input: { path: 'a' } }, { id: 'toolu_2', name: 'read_file', input: { path: 'b' } }] },
      { role: 'tool', toolCallId: 'toolu_1', content: 'A' },
      { role: 'tool', toolCallId: 'toolu_2', content: 'denied', isError: true },
    ],
  });
  assert.equal(c.usage.output, 21, 'the last cumulative figure, not 10 + 21');
  const r = m.requests[0]!;
  assert.equal(r.path, '/v1/messages');
  assert.equal(r.headers['x-api-key'], 'sk-ant-test');
  assert.equal(r.headers['anthropic-version'], '2023-06-01');
  assert.equal(r.headers.authorization, undefined);
  assert.equal(r.body.system, 'SYS');
  assert.equal(r.body.max_tokens, 2048);
  assert.deepEqual(r.body.tools, [{ name: 'read_file', description: TOOLS[0]!.description, input_schema: TOOLS[0]!.parameters }]);
  assert.deepEqual(r.body.messages[2], {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'toolu_1', content: 'A' },
      { type: 'tool_result', tool_use_id: 'toolu_2', content: 'denied', is_error: true },
    ],
  });
});

test('anthropic-messages: with a cacheKey and a long system prompt, cache_control breakpoints are sent', async (t) => {
  const { m, client } = await setup(t, 'anthropic-messages', { script: [textTurn('ok')] });
  await client.complete({ system: 'Rules. '.repeat(1000), messages: [{ role: 'user', content: 'hi' }], cacheKey: 'root-1' });
  assert.deepEqual(m.requests[0]!.body.system[0].cache_control, { type: 'ephemeral' });
});

test('the key header is left out when no key is configured (local servers)', async (t) => {
  for (const format of FORMATS) {
    const { m, client } = await setup(t, format, { script: [textTurn('ok')] });
    await client.complete({ system: '', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(m.requests[0]!.headers.authorization, undefined);
    assert.equal(m.requests[0]!.headers['x-api-key'], undefined);
  }
});
