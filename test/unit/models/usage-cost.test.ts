/**
 * Usage normalization and cost: brig's `input` counts every input token once, cached ones
 * included (Chat Completions' prompt_tokens already does; Anthropic's input_tokens does not);
 * Anthropic's message_delta output is cumulative (never summed); cost is null without a price,
 * and cached input is billed at the cache rate, once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { costOf, type Price, type Usage } from '../../../src/models/types.js';
import { usageFromOpenai } from '../../../src/models/openai-chat-wire.js';
import { AnthropicReply, usageFromAnthropic } from '../../../src/models/anthropic-messages-wire.js';
import { estimateUsage } from '../../../src/models/wire-common.js';

test('openai-chat usage: prompt_tokens includes cached_tokens (a subset), completion is output', () => {
  assert.deepEqual(usageFromOpenai({ prompt_tokens: 1000, completion_tokens: 50, total_tokens: 1050, prompt_tokens_details: { cached_tokens: 800 } }), {
    input: 1000, output: 50, cacheRead: 800, cacheWrite: 0, total: 1050,
  });
  assert.deepEqual(usageFromOpenai({ prompt_tokens: 10, completion_tokens: 2 }), { input: 10, output: 2, cacheRead: 0, cacheWrite: 0, total: 12 });
  // DeepSeek's field; a cached count over the prompt is clamped (never more cached than sent).
  assert.equal(usageFromOpenai({ prompt_tokens: 100, completion_tokens: 1, prompt_cache_hit_tokens: 60 })!.cacheRead, 60);
  assert.equal(usageFromOpenai({ prompt_tokens: 100, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 500 } })!.cacheRead, 100);
  assert.equal(usageFromOpenai(null), undefined);
  assert.equal(usageFromOpenai({ foo: 1 }), undefined);
});

test('anthropic usage: input = input_tokens + cache_read + cache_creation', () => {
  assert.deepEqual(usageFromAnthropic({ input_tokens: 20, cache_read_input_tokens: 900, cache_creation_input_tokens: 80, output_tokens: 40 }), {
    input: 1000, output: 40, cacheRead: 900, cacheWrite: 80, total: 1040,
  });
  assert.deepEqual(usageFromAnthropic({ input_tokens: 5, output_tokens: 1 }), { input: 5, output: 1, cacheRead: 0, cacheWrite: 0, total: 6 });
});

test('anthropic message_delta usage is cumulative: the last figure wins, nothing is summed', () => {
  const r = new AnthropicReply({ system: '', messages: [] }, 'm');
  const ev = (o: object) => r.event({ event: 'message', data: JSON.stringify(o) });
  ev({ type: 'message_start', message: { model: 'm', usage: { input_tokens: 30, output_tokens: 1, cache_read_input_tokens: 70 } } });
  ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } });
  ev({ type: 'message_delta', delta: { stop_reason: null }, usage: { output_tokens: 10 } });
  ev({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 25 } });
  ev({ type: 'message_stop' });
  const c = r.result(5);
  assert.deepEqual(c.usage, { input: 100, output: 25, cacheRead: 70, cacheWrite: 0, total: 125 });
  assert.equal(c.finishReason, 'stop');
  assert.equal(c.firstTokenMs, 5);
});

test('a server that reports no usage is estimated at chars / 4, never metered as free', () => {
  const u = estimateUsage({ system: 'x'.repeat(400), messages: [{ role: 'user', content: 'y'.repeat(400) }] }, 'z'.repeat(40), []);
  assert.ok(u.input >= 200 && u.output === 10 && u.total === u.input + u.output);
});

const PRICE: Price = { inputPerToken: 3e-6, outputPerToken: 15e-6, cacheReadPerToken: 0.3e-6, cacheWritePerToken: 3.75e-6 };
const U = (o: Partial<Usage>): Usage => {
  const u = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, ...o };
  return { ...u, total: u.input + u.output };
};

test('costOf: null without a price (never 0); cached input billed once at the cache rates', () => {
  assert.equal(costOf(U({ input: 1000, output: 100 }), null), null);
  assert.equal(costOf(U({}), PRICE), 0, 'a priced call with no tokens costs 0');
  // 1000 input of which 900 read from cache and 80 written: 20 fresh.
  const c = costOf(U({ input: 1000, cacheRead: 900, cacheWrite: 80, output: 40 }), PRICE)!;
  const want = 20 * 3e-6 + 900 * 0.3e-6 + 80 * 3.75e-6 + 40 * 15e-6;
  assert.ok(Math.abs(c - want) < 1e-15, `${c} vs ${want}`);
  // Billing cached tokens at the full rate as well would be the classic double count.
  assert.ok(c < costOf(U({ input: 1000, output: 40 }), PRICE)!);
});

test('costOf: unpriced cache buckets fall back to the input rate', () => {
  const p: Price = { inputPerToken: 1e-6, outputPerToken: 2e-6 };
  assert.ok(Math.abs(costOf(U({ input: 100, cacheRead: 50, cacheWrite: 10, output: 10 }), p)! - (100 * 1e-6 + 10 * 2e-6)) < 1e-15);
});
