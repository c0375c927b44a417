/**
 * [INV-6] The API key stays in the supervisor: make calls fail in every way there is — a 401
 * and a 500 that echo the key, a mid-stream error that names it, a malformed body carrying it,
 * a stall, a disconnect, an oversize reply, the call deadline, an abort, nothing listening —
 * and the key is absent from the error's message, hint, data, JSON, stack and inspected form
 * (cause chain included). Nor does a client, a catalog or a loaded config print it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import util from 'node:util';
import { loadConfig } from '../../../src/config/index.js';
import { loadModelCatalog } from '../../../src/models/index.js';
import { isBrigError } from '../../../src/util/errors.js';
import { startModelServer, statusTurn, textTurn, type Turn, type WireFormat } from '../../helpers/model-server.js';
import { clientFor, FORMATS } from './shared.js';

const KEY = 'sk-LEAKCHECK-9f8e7d6c5b4a3210-zyxwvut';

function assertNoKey(e: unknown, how: string): void {
  assert.ok(isBrigError(e, 'model_unavailable'), `${how}: ${String(e)}`);
  const cause = e.cause as Error | undefined;
  const views = [
    e.message,
    e.hint,
    JSON.stringify(e),
    JSON.stringify(e.data),
    String(e.stack),
    util.inspect(e, { depth: null, showHidden: true }),
    String(cause),
    String(cause?.stack),
    cause ? util.inspect(cause, { depth: null, showHidden: true }) : '',
  ];
  for (const v of views) assert.ok(!v.includes(KEY), `${how}: the key leaked into ${v.slice(0, 300)}`);
}

const echo = `the key you sent was ${KEY}`;
const CASES: { how: string; reason: string; turn: (f: WireFormat) => Turn; o?: Record<string, number> }[] = [
  { how: '500 echoing the key (retried, then failed)', reason: 'status', turn: () => statusTurn(500, { body: { error: { message: echo } } }) },
  { how: 'mid-stream error event naming the key', reason: 'stream_error', turn: () => ({ text: 'x', fault: { kind: 'streamError', afterEvents: 2, message: echo } }) },
  { how: 'malformed event carrying the key', reason: 'malformed', turn: () => ({ fault: { kind: 'raw', body: `data: {"oops": "${KEY}"\n\n` } }) },
  { how: 'a JSON body that is not the format, carrying the key', reason: 'malformed', turn: () => ({ fault: { kind: 'raw', contentType: 'application/json', body: `{"weird": "${KEY}"` } }) },
  {
    how: 'an error object in a 200, carrying the key',
    reason: 'stream_error',
    turn: (f) => ({ fault: { kind: 'raw', contentType: 'application/json', body: f === 'openai-chat' ? JSON.stringify({ error: { message: echo } }) : JSON.stringify({ type: 'error', error: { type: 'api_error', message: echo } }) } }),
  },
  { how: 'stall (idle timeout)', reason: 'idle_timeout', turn: () => ({ text: 'x', fault: { kind: 'stall', afterEvents: 2 } }), o: { idleTimeoutMs: 200 } },
  { how: 'disconnect mid-stream', reason: 'disconnected', turn: () => ({ text: 'abc', fault: { kind: 'disconnect', afterEvents: 2 } }) },
  { how: 'oversize reply', reason: 'too_large', turn: () => ({ fault: { kind: 'oversize', bytes: 300_000 } }), o: { maxReplyBytes: 100_000 } },
  { how: 'call deadline', reason: 'timeout', turn: () => textTurn('slow slow slow', { textPieces: 6, delayMs: 200 }), o: { timeoutMs: 300 } },
];

for (const format of FORMATS) {
  // req: secrets:keys-stay
  test(`[INV-6] ${format}: the key never appears in an error, whatever the failure`, async (t) => {
    for (const c of CASES) {
      const m = await startModelServer({ script: [c.turn(format), c.turn(format), c.turn(format)] });
      const client = clientFor(format, m, { apiKey: KEY, maxRetries: 2, ...(c.o ?? {}) });
      try {
        await client.complete({ system: 's', messages: [{ role: 'user', content: 'hi' }] }).then(
          () => assert.fail(`${c.how}: expected a failure`),
          (e: unknown) => {
            assertNoKey(e, c.how);
            assert.equal((e as { data: { reason: string } }).data.reason, c.reason, c.how);
          },
        );
        assert.ok(m.requests.every((r) => JSON.stringify(r.headers).includes(KEY)), 'the key did go to the provider, as a header');
      } finally {
        await client.close();
        await m.close();
      }
    }
    // A 401 from a server that echoes the key it got.
    const m = await startModelServer({ script: [textTurn('never')], expectKey: 'the-right-key' });
    const client = clientFor(format, m, { apiKey: KEY });
    t.after(async () => {
      await client.close();
      await m.close();
    });
    await assert.rejects(client.complete({ system: 's', messages: [{ role: 'user', content: 'hi' }] }), (e: unknown) => {
      assertNoKey(e, '401 echo');
      assert.equal((e as { data: { status: number } }).data.status, 401);
      assert.match((e as Error).message, /Incorrect API key provided: \[redacted\]/);
      return true;
    });
    // An abort, and nothing listening.
    const ctl = new AbortController();
    ctl.abort();
    await assert.rejects(client.complete({ system: 's', messages: [], signal: ctl.signal }), (e: unknown) => (assertNoKey(e, 'abort'), true));
    const srv = net.createServer();
    await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
    const port = (srv.address() as net.AddressInfo).port;
    await new Promise<void>((ok) => srv.close(() => ok()));
    const dead = clientFor(format, { baseUrl: `http://127.0.0.1:${port}` } as never, { apiKey: KEY, maxRetries: 0 });
    await assert.rejects(dead.complete({ system: 's', messages: [] }), (e: unknown) => (assertNoKey(e, 'refused'), true));
    await dead.close();
    // The client itself does not print its key.
    for (const v of [util.inspect(client, { depth: null, showHidden: true }), JSON.stringify(client), String(client)]) assert.ok(!v.includes(KEY), v);
  });
}

// req: secrets:keys-stay
test('[INV-6] a loaded config and its catalog print no key (quick path and apiKeyEnv alike)', (t) => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-key-'));
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  fs.writeFileSync(
    path.join(home, 'config.yaml'),
    'models:\n  providers:\n    p: { api: anthropic-messages, baseUrl: "http://127.0.0.1:1", apiKeyEnv: MY_KEY }\n  aliases:\n    a: { provider: p, model: m, contextWindow: 1000, maxOutputTokens: 100 }\n',
  );
  const cfg = loadConfig({ BRIG_HOME: home, MY_KEY: KEY, BRIG_MODEL_BASE_URL: 'http://127.0.0.1:2/v1', BRIG_MODEL_API_KEY: KEY });
  const cat = loadModelCatalog(cfg);
  assert.ok(cat.ok);
  t.after(() => cat.value.close());
  const a = cat.value.resolve('a');
  const d = cat.value.resolve('default');
  assert.ok(a.ok && d.ok);
  const views = [JSON.stringify(cfg), util.inspect(cfg, { depth: null }), util.inspect(cat.value, { depth: null }), util.inspect(a.value, { depth: null }), JSON.stringify(d.value)];
  for (const v of views) assert.ok(!v.includes(KEY), v.slice(0, 400));
});
