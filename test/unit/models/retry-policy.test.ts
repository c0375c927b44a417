/**
 * The pure parts of the transport: the Stainless backoff numbers, reading retry-after(-ms),
 * the provider's error words, and the scrub that keeps a key out of every message.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffMs, retryAfterMs } from '../../../src/models/retry-policy.js';
import { failure, providerErrorText, scrubSecrets } from '../../../src/models/model-errors.js';
import { TRANSPORT_DEFAULTS } from '../../../src/models/transport.js';

test('backoff: 0.5 s doubling to an 8 s cap, with up to 25 % jitter taken off', () => {
  const b = TRANSPORT_DEFAULTS.backoff;
  assert.equal(backoffMs(0, b, () => 0), 500);
  assert.equal(backoffMs(1, b, () => 0), 1000);
  assert.equal(backoffMs(4, b, () => 0), 8000);
  assert.equal(backoffMs(9, b, () => 0), 8000);
  assert.equal(backoffMs(0, b, () => 1), 375);
  for (let i = 0; i < 100; i++) {
    const v = backoffMs(2, b);
    assert.ok(v > 1500 && v <= 2000, String(v));
  }
});

test('retry-after-ms wins over retry-after; seconds and HTTP dates are read; waits past 60 s or negative are ignored', () => {
  assert.equal(retryAfterMs({ 'retry-after-ms': '250', 'retry-after': '9' }), 250);
  assert.equal(retryAfterMs({ 'retry-after': '2' }), 2000);
  assert.equal(retryAfterMs({ 'retry-after': '0.5' }), 500);
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(retryAfterMs({ 'retry-after': 'Thu, 01 Jan 2026 00:00:03 GMT' }, now), 3000);
  assert.equal(retryAfterMs({ 'retry-after': '3600' }), undefined);
  assert.equal(retryAfterMs({ 'retry-after-ms': '-5' }), undefined);
  assert.equal(retryAfterMs({ 'retry-after': 'soon' }), undefined);
  assert.equal(retryAfterMs({}), undefined);
});

test('the provider\'s error words come from either shape, one line, short', () => {
  assert.equal(providerErrorText('{"error":{"message":"model not\\nfound","type":"invalid_request_error"}}'), 'model not found');
  assert.equal(providerErrorText('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'), 'Overloaded');
  assert.equal(providerErrorText('{"error":"plain string"}'), 'plain string');
  assert.equal(providerErrorText('<html>502</html>'), undefined);
  assert.equal(providerErrorText(JSON.stringify({ error: { message: 'x'.repeat(1000) } }))!.length, 300);
});

// req: secrets:keys-stay
test('[INV-6] a failure scrubs every secret from its message and from the copied cause; the raw cause is not kept', () => {
  const key = 'sk-secret-ABCDEF123456';
  const raw = Object.assign(new Error(`connect failed with ${key}`), { code: 'ECONNRESET', socket: { key } });
  const e = failure('connect', `provider said: bad key ${key}`, [key], { attempts: 1 }, raw);
  assert.equal(e.code, 'model_unavailable');
  assert.equal(e.message, 'provider said: bad key [redacted]');
  assert.equal(e.data.reason, 'connect');
  const cause = e.cause as Error & { code?: string; socket?: unknown };
  assert.notEqual(cause, raw);
  assert.equal(cause.code, 'ECONNRESET');
  assert.equal(cause.socket, undefined);
  assert.ok(!String(cause.message).includes(key) && !String(cause.stack).includes(key));
  assert.equal(scrubSecrets(`${key}/${key}`, [key, '']), '[redacted]/[redacted]');
});
