/**
 * The SSE parser: any fragmentation of the bytes gives the same events; LF, CRLF and CR line
 * ends (a CRLF split across chunks counts once); multi-line data; comments; UTF-8 split
 * mid-character; a last event without its blank line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SseParser, type SseEvent } from '../../../src/util/sse.js';

const parseAll = (chunks: (string | Uint8Array)[]): SseEvent[] => {
  const p = new SseParser();
  return [...chunks.flatMap((c) => p.push(c)), ...p.end()];
};

const STREAM =
  ': keep-alive comment\n' +
  'event: message_start\ndata: {"type":"message_start"}\n\n' +
  'data: line one\r\ndata: line two\r\n\r\n' +
  'event: ping\rdata: {"type":"ping"}\r\r' +
  'data:no-space\nid: 7\nretry: 100\n\n' +
  'data: [DONE]\n\n';

const EXPECTED: SseEvent[] = [
  { event: 'message_start', data: '{"type":"message_start"}' },
  { event: 'message', data: 'line one\nline two' },
  { event: 'ping', data: '{"type":"ping"}' },
  // An `id:` line names its own event and every later one (the last event id).
  { event: 'message', data: 'no-space', id: '7' },
  { event: 'message', data: '[DONE]', id: '7' },
];

test('SSE: events, names, multi-line data, comments, all three line ends', () => {
  assert.deepEqual(parseAll([STREAM]), EXPECTED);
});

test('SSE: every two-way split of the bytes gives the same events (CRLF split across chunks included)', () => {
  const bytes = Buffer.from(STREAM);
  for (let i = 0; i <= bytes.length; i++) assert.deepEqual(parseAll([bytes.subarray(0, i), bytes.subarray(i)]), EXPECTED, `split at ${i}`);
});

test('SSE: any fragmentation into byte chunks gives the same events (property)', () => {
  const bytes = Buffer.from(`${STREAM}data: ünïcødé ✓ 🚀\n\n`);
  const want = [...EXPECTED, { event: 'message', data: 'ünïcødé ✓ 🚀', id: '7' }];
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 30 }), (cuts) => {
      const at = [0, ...cuts.sort((a, b) => a - b), bytes.length];
      const chunks = at.slice(1).map((end, i) => bytes.subarray(at[i]!, end));
      assert.deepEqual(parseAll(chunks), want);
    }),
    { numRuns: 300 },
  );
});

test('SSE: a last event without its blank line is delivered at end(); an event with no data is not', () => {
  assert.deepEqual(parseAll(['event: x\n\n', 'data: tail']), [{ event: 'message', data: 'tail' }]);
  assert.deepEqual(parseAll(['event: only-a-name\n\n']), []);
});

test('SSE: an empty data line makes an event with empty data; the event name resets after dispatch', () => {
  assert.deepEqual(parseAll(['event: a\ndata:\n\ndata: b\n\n']), [
    { event: 'a', data: '' },
    { event: 'message', data: 'b' },
  ]);
});
