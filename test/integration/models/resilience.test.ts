/**
 * Failure handling over real HTTP, both formats: 429 with retry-after(-ms) honoured, 5xx then
 * success, a dropped connection retried, a non-retryable status not retried, no retry once the
 * body has begun (a disconnect mid-tool-call fails and the server saw exactly one request), the
 * idle timeout on a stall (and its reset on every chunk), the whole-call timeout, the byte cap.
 * Waits are measured roughly: lower bounds generous, no tight timing asserts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { isBrigError, type BrigError } from '../../../src/util/errors.js';
import { statusTurn, textTurn, toolCallTurn } from '../../helpers/model-server.js';
import { clientFor, FORMATS, setup } from './shared.js';

const ASK = { system: 'sys', messages: [{ role: 'user' as const, content: 'go' }] };

const failsWith = (reason: string, check: (e: BrigError) => void = () => undefined) => (e: unknown) => {
  assert.ok(isBrigError(e, 'model_unavailable'), String(e));
  assert.equal(e.data.reason, reason, e.message);
  check(e);
  return true;
};

for (const format of FORMATS) {
  test(`${format}: 429 with retry-after-ms is honoured, then the retry succeeds`, async (t) => {
    const { m, client } = await setup(t, format, { script: [statusTurn(429, { retryAfterMs: 400 }), textTurn('after the wait')] });
    const c = await client.complete(ASK);
    assert.equal(c.message.content, 'after the wait');
    assert.equal(m.requests.length, 2);
    const waited = m.requests[1]!.at - m.requests[0]!.at;
    assert.ok(waited >= 350, `waited ${waited} ms for a retry-after-ms of 400 (the shortened backoff is ≤ 200)`);
  });

  test(`${format}: 429 with retry-after in seconds is honoured`, async (t) => {
    const { m, client } = await setup(t, format, { script: [statusTurn(429, { retryAfter: '1' }), textTurn('ok')] });
    await client.complete(ASK);
    const waited = m.requests[1]!.at - m.requests[0]!.at;
    assert.ok(waited >= 900, `waited ${waited} ms for retry-after: 1`);
  });

  test(`${format}: 500 then 503 then success (two retries, the default)`, async (t) => {
    const { m, client } = await setup(t, format, { script: [statusTurn(500), statusTurn(503), textTurn('third time')] });
    assert.equal((await client.complete(ASK)).message.content, 'third time');
    assert.equal(m.requests.length, 3);
    assert.deepEqual(m.problems, []);
  });

  test(`${format}: 5xx past the retries fails with the status (and the provider's words); 400 is not retried`, async (t) => {
    const { m, client } = await setup(t, format, { script: [statusTurn(503), statusTurn(503), statusTurn(503)] });
    await assert.rejects(client.complete(ASK), failsWith('status', (e) => {
      assert.equal(e.data.status, 503);
      assert.equal(e.data.attempts, 3);
      assert.match(e.message, /HTTP 503: scripted HTTP 503 \(after 3 attempts\)/);
    }));
    assert.equal(m.requests.length, 3);
    const b = await setup(t, format, { script: [statusTurn(400, { body: { error: { message: 'context too long' } } }), textTurn('never')] });
    await assert.rejects(b.client.complete(ASK), failsWith('status', (e) => assert.match(e.message, /HTTP 400: context too long$/)));
    assert.equal(b.m.requests.length, 1);
  });

  test(`${format}: x-should-retry: false is obeyed on a 503`, async (t) => {
    const { m, client } = await setup(t, format, { script: [statusTurn(503, { headers: { 'x-should-retry': 'false' } }), textTurn('never')] });
    await assert.rejects(client.complete(ASK), failsWith('status'));
    assert.equal(m.requests.length, 1);
  });

  test(`${format}: a connection dropped before any response is retried`, async (t) => {
    const { m, client } = await setup(t, format, { script: [{ fault: { kind: 'drop' } }, textTurn('reconnected')] });
    assert.equal((await client.complete(ASK)).message.content, 'reconnected');
    assert.equal(m.requests.length, 2);
  });

  test(`${format}: no retry after the first byte — a disconnect mid-tool-call fails and the server saw exactly one request`, async (t) => {
    const { m, client } = await setup(t, format, {
      script: [toolCallTurn('read_file', { path: 'a/long/path/name.txt', more: 'x'.repeat(200) }, { argPieces: 6, fault: { kind: 'disconnect', afterEvents: 'midToolCall' } }), textTurn('must not be used')],
    });
    await assert.rejects(client.complete(ASK), failsWith('disconnected', (e) => assert.equal(e.data.attempts, 1)));
    assert.equal(m.requests.length, 1);
    assert.equal(m.remaining(), 1);
  });

  test(`${format}: the idle timeout fires on a stall after content began (no retry)`, async (t) => {
    const { m, client } = await setup(t, format, { script: [{ text: 'partial answer', textPieces: 1, fault: { kind: 'stall', afterEvents: 2 } }, textTurn('never')] }, { idleTimeoutMs: 300 });
    const t0 = Date.now();
    await assert.rejects(client.complete(ASK), failsWith('idle_timeout', (e) => assert.match(e.message, /stalled: nothing for 300 ms/)));
    const took = Date.now() - t0;
    assert.ok(took >= 250, `the idle timer waited its 300 ms, not less (${took} ms)`);
    assert.equal(m.requests.length, 1);
  });

  test(`${format}: a stall right after the headers (no body byte yet) is retried, then fails idle`, async (t) => {
    const { m, client } = await setup(t, format, { script: [{ fault: { kind: 'stall' } }, { fault: { kind: 'stall' } }] }, { idleTimeoutMs: 200, maxRetries: 1 });
    await assert.rejects(client.complete(ASK), failsWith('idle_timeout', (e) => assert.equal(e.data.attempts, 2)));
    assert.equal(m.requests.length, 2);
  });

  test(`${format}: the idle timer restarts on every chunk: a slow but steady stream completes`, async (t) => {
    const { client } = await setup(t, format, { script: [textTurn('one two three four five six', { textPieces: 6, delayMs: 120 })] }, { idleTimeoutMs: 400 });
    const c = await client.complete(ASK);
    assert.equal(c.message.content, 'one two three four five six');
    assert.ok(c.firstTokenMs !== null && c.firstTokenMs >= 100, `first content after the first pause (${c.firstTokenMs} ms)`);
  });

  test(`${format}: the whole-call timeout cuts a steady stream that runs too long`, async (t) => {
    const { client } = await setup(t, format, { script: [textTurn('a b c d e f g h i j', { textPieces: 10, delayMs: 150 })] }, { timeoutMs: 500, idleTimeoutMs: 1000 });
    await assert.rejects(client.complete(ASK), failsWith('timeout'));
  });

  test(`${format}: a reply over the byte cap is refused (not truncated) and not retried`, async (t) => {
    const { m, client } = await setup(t, format, { script: [{ fault: { kind: 'oversize', bytes: 2 * 1024 * 1024 } }, textTurn('never')] }, { maxReplyBytes: 256 * 1024 });
    await assert.rejects(client.complete(ASK), failsWith('too_large', (e) => assert.match(e.message, /over its 262144-byte cap/)));
    assert.equal(m.requests.length, 1);
  });

  test(`${format}: a server that keeps its body open after the terminal event does not hold the call`, async (t) => {
    const { client } = await setup(t, format, { script: [textTurn('complete', { quirks: { holdOpen: true } })] }, { idleTimeoutMs: 5000 });
    const t0 = Date.now();
    assert.equal((await client.complete(ASK)).message.content, 'complete');
    assert.ok(Date.now() - t0 < 2500, 'ended by the short tail grace, not the idle timeout');
  });

  test(`${format}: a mid-stream error event fails the call without a retry`, async (t) => {
    const { m, client } = await setup(t, format, { script: [{ text: 'some text', fault: { kind: 'streamError', afterEvents: 2, message: 'Overloaded' } }, textTurn('never')] });
    await assert.rejects(client.complete(ASK), failsWith('stream_error', (e) => assert.match(e.message, /Overloaded/)));
    assert.equal(m.requests.length, 1);
  });
}

test('nothing listening: connection errors are retried, then fail as connect', async (t) => {
  const srv = net.createServer();
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((ok) => srv.close(() => ok()));
  for (const format of FORMATS) {
    const client = clientFor(format, { baseUrl: `http://127.0.0.1:${port}/v1` } as never, { maxRetries: 2 });
    t.after(() => client.close());
    const t0 = Date.now();
    await assert.rejects(client.complete(ASK), failsWith('connect', (e) => {
      assert.equal(e.data.attempts, 3);
      assert.match(e.message, /could not be reached \(ECONNREFUSED\) \(after 3 attempts\)/);
    }));
    assert.ok(Date.now() - t0 >= 50, 'it backed off between attempts');
  }
});
