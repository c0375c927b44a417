/**
 * The two wire formats, pure: request bodies (tools, tool results, system, cache hints) and the
 * accumulation of streamed replies (fragmented tool calls, minted ids, malformed arguments,
 * usage-only chunks with choices [] or null, early ends).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenaiChatReply, openaiChatBody, finishFromOpenai } from '../../../src/models/openai-chat-wire.js';
import { AnthropicReply, anthropicBody, anthropicMessages, finishFromAnthropic } from '../../../src/models/anthropic-messages-wire.js';
import { parseToolArguments, WireError } from '../../../src/models/wire-common.js';
import { anthropicUrl } from '../../../src/models/anthropic-messages.js';
import type { CompletionRequest, LlmMessage } from '../../../src/models/types.js';

const TOOLS = [{ name: 'read_file', description: 'Read a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } }];
const CONVO: LlmMessage[] = [
  { role: 'user', content: 'look at a and b' },
  { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'read_file', input: { path: 'a' } }, { id: 'c2', name: 'read_file', input: { path: 'b' } }] },
  { role: 'tool', toolCallId: 'c1', content: 'A' },
  { role: 'tool', toolCallId: 'c2', content: 'no such file', isError: true },
  { role: 'user', content: 'and?' },
];

test('openai-chat body: system first, tools as functions, tool results as role tool, stream with usage, cache key', () => {
  const b = openaiChatBody({ system: 'SYS', messages: CONVO, tools: TOOLS, cacheKey: 'tree-1' }, 'gpt-x', 512);
  assert.deepEqual(b, {
    model: 'gpt-x',
    messages: [
      { role: 'system', content: 'SYS' },
      { role: 'user', content: 'look at a and b' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } },
          { id: 'c2', type: 'function', function: { name: 'read_file', arguments: '{"path":"b"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'A' },
      { role: 'tool', tool_call_id: 'c2', content: 'no such file' },
      { role: 'user', content: 'and?' },
    ],
    stream: true,
    stream_options: { include_usage: true },
    tools: [{ type: 'function', function: TOOLS[0] }],
    max_tokens: 512,
    prompt_cache_key: 'tree-1',
  });
});

test('anthropic body: system field, tools with input_schema, consecutive tool results merged into one user turn (results first)', () => {
  const b = anthropicBody({ system: 'SYS', messages: CONVO, tools: TOOLS }, 'claude-x', 1024);
  assert.equal(b.system, 'SYS');
  assert.deepEqual(b.tools, [{ name: 'read_file', description: 'Read a file', input_schema: TOOLS[0]!.parameters }]);
  assert.equal(b.max_tokens, 1024);
  assert.equal(b.stream, true);
  assert.deepEqual(b.messages, [
    { role: 'user', content: [{ type: 'text', text: 'look at a and b' }] },
    {
      role: 'assistant',
      content: [
        { type: 'tool_use', id: 'c1', name: 'read_file', input: { path: 'a' } },
        { type: 'tool_use', id: 'c2', name: 'read_file', input: { path: 'b' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'c1', content: 'A' },
        { type: 'tool_result', tool_use_id: 'c2', content: 'no such file', is_error: true },
        { type: 'text', text: 'and?' },
      ],
    },
  ]);
  assert.ok(!JSON.stringify(b).includes('cache_control'), 'no cacheKey, no cache write');
});

test('anthropic body: with a cacheKey and a long prefix, breakpoints on the system prompt and the last block; a short one gets none', () => {
  const long = 'policy text. '.repeat(400);
  const b = anthropicBody({ system: long, messages: CONVO, tools: TOOLS, cacheKey: 'k' }, 'c', 100);
  assert.deepEqual(b.system, [{ type: 'text', text: long, cache_control: { type: 'ephemeral' } }]);
  const msgs = b.messages as { content: Record<string, unknown>[] }[];
  const last = msgs[msgs.length - 1]!.content;
  assert.deepEqual(last[last.length - 1], { type: 'text', text: 'and?', cache_control: { type: 'ephemeral' } });
  assert.equal(JSON.stringify(b).split('cache_control').length - 1, 2);
  const short = anthropicBody({ system: 'short', messages: CONVO, cacheKey: 'k' }, 'c', 100);
  assert.ok(!JSON.stringify(short).includes('cache_control'));
});

test('anthropic URL: the host root gets /v1/messages; a trailing /v1 is not doubled', () => {
  assert.equal(anthropicUrl('https://api.anthropic.com'), 'https://api.anthropic.com/v1/messages');
  assert.equal(anthropicUrl('http://127.0.0.1:11434/v1/'), 'http://127.0.0.1:11434/v1/messages');
});

const REQ: CompletionRequest = { system: '', messages: [{ role: 'assistant', content: '', toolCalls: [{ id: 'brig_7', name: 'x', input: {} }] }, { role: 'tool', toolCallId: 'brig_7', content: 'ok' }] };
const sse = (o: unknown) => ({ event: 'message', data: typeof o === 'string' ? o : JSON.stringify(o) });

test('openai-chat stream: fragments keyed by index accrete; missing ids are minted past the brig_ ids already used; usage chunk with choices null', () => {
  const r = new OpenaiChatReply(REQ, 'req-model');
  const d = (delta: object, finish: string | null = null) => r.event(sse({ model: 'served', choices: [{ index: 0, delta, finish_reason: finish }] }));
  assert.equal(d({ role: 'assistant', content: '' }), false, 'no content yet');
  assert.equal(d({ content: 'Let me ' }), true);
  d({ content: 'check.' });
  d({ tool_calls: [{ index: 0, type: 'function', function: { name: 'read', arguments: '' } }] });
  d({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'grep', arguments: '{"pat' } }] });
  d({ tool_calls: [{ index: 0, function: { arguments: '{"pa' } }] });
  d({ tool_calls: [{ index: 0, function: { arguments: 'th":"a.txt"}' } }] });
  d({ tool_calls: [{ index: 1, function: { arguments: 'tern":"x"}' } }] });
  d({}, 'tool_calls');
  r.event(sse({ choices: null, usage: { prompt_tokens: 12, completion_tokens: 3 } }));
  r.event(sse('[DONE]'));
  assert.equal(r.done, true);
  const c = r.result(9);
  assert.equal(c.message.content, 'Let me check.');
  assert.deepEqual(c.message.toolCalls, [
    { id: 'brig_8', name: 'read', input: { path: 'a.txt' } },
    { id: 'call_b', name: 'grep', input: { pattern: 'x' } },
  ]);
  assert.equal(c.finishReason, 'tool_calls');
  assert.equal(c.model, 'served');
  assert.deepEqual(c.usage, { input: 12, output: 3, cacheRead: 0, cacheWrite: 0, total: 15 });
});

test('openai-chat stream: malformed arguments give input {} and inputError; a stream with neither [DONE] nor a finish broke off', () => {
  const r = new OpenaiChatReply({ system: '', messages: [] }, 'm');
  r.event(sse({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'x', function: { name: 'f', arguments: '{"a": tru' } }] } }] }));
  r.event(sse({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }));
  const call = r.result(null).message.toolCalls[0]!;
  assert.deepEqual(call.input, {});
  assert.match(call.inputError!, /not valid JSON/);
  const early = new OpenaiChatReply({ system: '', messages: [] }, 'm');
  early.event(sse({ choices: [{ index: 0, delta: { content: 'half' } }] }));
  assert.throws(() => early.result(null), (e: unknown) => e instanceof WireError && e.reason === 'disconnected');
});

test('openai-chat: a mid-stream error chunk fails; a whole (non-streamed) reply is accepted', () => {
  const r = new OpenaiChatReply({ system: '', messages: [] }, 'm');
  assert.throws(() => r.event(sse({ error: { message: 'overloaded' } })), (e: unknown) => e instanceof WireError && e.reason === 'stream_error');
  const w = new OpenaiChatReply({ system: '', messages: [] }, 'm');
  w.whole({ model: 'm2', choices: [{ message: { content: null, tool_calls: [{ id: 't', function: { name: 'f', arguments: '{"k":1}' } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 4, completion_tokens: 2 } });
  const c = w.result(null);
  assert.deepEqual(c.message.toolCalls, [{ id: 't', name: 'f', input: { k: 1 } }]);
  assert.equal(c.usage.total, 6);
});

test('anthropic stream: text and tool_use blocks, input_json_delta accretes, ping ignored, missing id minted, error event fails', () => {
  const r = new AnthropicReply({ system: '', messages: [] }, 'm');
  const ev = (o: object) => r.event({ event: (o as { type: string }).type, data: JSON.stringify(o) });
  ev({ type: 'message_start', message: { model: 'claude-served', usage: { input_tokens: 10, output_tokens: 1 } } });
  ev({ type: 'ping' });
  ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Reading.' } });
  ev({ type: 'content_block_stop', index: 0 });
  ev({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: '', name: 'read', input: {} } });
  for (const p of ['{"pa', 'th": ', '"a"}']) ev({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: p } });
  ev({ type: 'content_block_stop', index: 1 });
  ev({ type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_2', name: 'noargs', input: {} } });
  ev({ type: 'content_block_stop', index: 2 });
  ev({ type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 30 } });
  ev({ type: 'message_stop' });
  const c = r.result(1);
  assert.equal(c.message.content, 'Reading.');
  assert.deepEqual(c.message.toolCalls, [
    { id: 'brig_1', name: 'read', input: { path: 'a' } },
    { id: 'toolu_2', name: 'noargs', input: {} },
  ]);
  assert.equal(c.finishReason, 'tool_calls');
  assert.equal(c.model, 'claude-served');
  const bad = new AnthropicReply({ system: '', messages: [] }, 'm');
  assert.throws(
    () => bad.event({ event: 'error', data: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }) }),
    (e: unknown) => e instanceof WireError && e.reason === 'stream_error' && /overloaded_error/.test(e.message),
  );
});

test('finish reasons map onto brig\'s five; a tool-calling turn reported as stop is tool_calls', () => {
  assert.equal(finishFromOpenai('stop', false), 'stop');
  assert.equal(finishFromOpenai('stop', true), 'tool_calls');
  assert.equal(finishFromOpenai('length', true), 'length');
  assert.equal(finishFromOpenai('content_filter', false), 'content_filter');
  assert.equal(finishFromOpenai('error', false), 'error');
  assert.equal(finishFromAnthropic('end_turn', false), 'stop');
  assert.equal(finishFromAnthropic('max_tokens', false), 'length');
  assert.equal(finishFromAnthropic('refusal', false), 'content_filter');
  assert.equal(finishFromAnthropic('tool_use', true), 'tool_calls');
});

test('tool arguments: empty is {}, a non-object is refused, bad JSON never throws', () => {
  assert.deepEqual(parseToolArguments(''), { input: {} });
  assert.deepEqual(parseToolArguments('{"a":1}'), { input: { a: 1 } });
  assert.equal(parseToolArguments('[1,2]').inputError, 'the tool-call arguments were not a JSON object');
  assert.match(parseToolArguments('{"a":').inputError!, /not valid JSON/);
});

test('anthropicMessages: a user message after a user message shares its turn; an empty message is left out and its neighbours merge', () => {
  assert.deepEqual(anthropicMessages([{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }]), [
    { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
  ]);
  assert.deepEqual(anthropicMessages([{ role: 'user', content: 'a' }, { role: 'assistant', content: '' }, { role: 'user', content: '' }, { role: 'user', content: 'b' }]), [
    { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
  ]);
});
