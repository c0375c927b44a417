import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { type BrokerReply } from '../../../src/broker/index.js';
import { BrokerTestClient } from '../../helpers/fakes/broker-test-client.js';
import { BrokerFixture } from './fixture.js';

const errCode = (r: BrokerReply) => (r.ok ? 'ok' : r.error.code);

/** A bystander run that must keep being served while another run misbehaves. */
async function bystander(f: BrokerFixture) {
  const r = await f.run('run_ok');
  const c = await BrokerTestClient.connect(r.handle.socketPath, r.token);
  assert.ok((await c.call('hello')).ok);
  return { check: async () => assert.ok((await c.call('hello')).ok, 'the other run is still served'), close: () => c.close() };
}

test('a 10 MB line gets one error and a closed connection; the supervisor and other runs carry on', async () => {
  const f = await BrokerFixture.create();
  try {
    const by = await bystander(f);
    const r = await f.run('run_bad');
    const c = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    const reply = c.reply(null);
    c.raw(Buffer.alloc(10 * 1024 * 1024, 0x61));
    const e = await reply;
    assert.equal(errCode(e), 'invalid_input');
    assert.match(!e.ok ? e.error.message : '', /over 65536 bytes/);
    await c.whenClosed();
    await by.check();
    const again = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    assert.ok((await again.call('hello')).ok, 'the offender can reconnect and behave');
    again.close();
    by.close();
  } finally {
    await f.close();
  }
});

test('invalid JSON, deep nesting, unknown methods, bad envelopes: errors, never a crash', async () => {
  const f = await BrokerFixture.create();
  try {
    const by = await bystander(f);
    const r = await f.run('run_bad');
    const c = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    c.raw('{"v":1,"id":1,\n');
    assert.equal(errCode(await c.reply(null)), 'invalid_input');
    c.raw('['.repeat(60_000) + ']'.repeat(5000) + '\n');
    const deep = await c.reply(null);
    assert.match(!deep.ok ? deep.error.message : '', /nested deeper/);
    c.raw(JSON.stringify({ v: 1, id: 'deep', method: 'checkpoint', token: r.token, params: { state: JSON.parse('['.repeat(30) + ']'.repeat(30)) } }) + '\n');
    assert.equal(errCode(await c.reply('deep')), 'invalid_input', 'no checkpoint handler: refused, not crashed');
    const unknown = await c.call('prgress', {});
    assert.equal(errCode(unknown), 'invalid_input');
    assert.match(!unknown.ok ? unknown.error.hint : '', /progress/);
    for (const m of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) assert.equal(errCode(await c.call(m, {})), 'invalid_input');
    c.raw(JSON.stringify({ v: 2, id: 'v2', method: 'hello', token: r.token }) + '\n');
    assert.equal(errCode(await c.reply('v2')), 'invalid_input');
    c.raw(JSON.stringify({ v: 1, id: 'extra', method: 'hello', token: r.token, sneaky: true }) + '\n');
    assert.equal(errCode(await c.reply('extra')), 'invalid_input');
    c.raw('null\n42\n"str"\n[]\n');
    for (let i = 0; i < 4; i++) assert.equal(errCode(await c.reply(null)), 'invalid_input');
    c.raw(Buffer.from([0xff, 0xfe, 0x00, 0x0a]));
    assert.equal(errCode(await c.reply(null)), 'invalid_input');
    assert.ok((await c.call('hello')).ok, 'the same connection still works after garbage');
    await by.check();
    c.close();
    by.close();
  } finally {
    await f.close();
  }
});

test('a 10,000-message burst is rate-limited before parsing, reported as abuse and cut; other runs keep being served', async () => {
  const f = await BrokerFixture.create({ rate: { capacity: 50, refillPerSec: 10, abuseStrikes: 1000, abuseWindowMs: 60_000 } });
  try {
    const by = await bystander(f);
    const r = await f.run('run_flood');
    const c = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    const got: BrokerReply[] = [];
    c.socket.on('data', () => {});
    const lines = Array.from({ length: 10_000 }, (_, i) => JSON.stringify({ v: 1, id: i, method: 'progress', token: r.token, params: {} })).join('\n') + '\n';
    const replies = Array.from({ length: 10_000 }, (_, i) => c.reply(i).then((x) => got.push(x), () => {}));
    c.raw(lines);
    await c.whenClosed();
    await Promise.all(replies);
    // A refused line's reply still carries its id (read from the line's head, not parsed);
    // the replies not yet written when the connection is cut are dropped with it.
    assert.ok(got.some((x) => errCode(x) === 'rate_limited') && got.every((x) => x.ok || errCode(x) === 'rate_limited'), JSON.stringify(got.slice(-1)));
    assert.deepEqual(f.abused, ['run_flood']);
    const refused = f.broker.stats('run_flood')!.denied;
    assert.ok(refused >= 1000 && refused < 2000, `${refused} refused: cut at the abuse threshold, the rest of the burst never read`);
    await r.handle.close();
    const ev = f.events();
    assert.ok(ev.some((e) => e.type === 'broker.abuse' && e.runId === 'run_flood'));
    const denied = ev.filter((e) => e.type === 'broker.denied' && e.runId === 'run_flood');
    assert.ok(denied.filter((e) => e.code === 'rate_limited').length <= 10, 'rate-limit denials are logged aggregated');
    assert.equal(denied.reduce((n, e) => n + (typeof e.count === 'number' ? e.count : 1), 0), refused, 'and every refusal is counted');
    await by.check();
    c.close();
    by.close();
  } finally {
    await f.close();
  }
});

test('half-open and slow-loris connections are closed; more than maxConnections are refused', async () => {
  const f = await BrokerFixture.create({ rate: { authTimeoutMs: 1000, lineTimeoutMs: 1000, maxConnections: 2 } });
  try {
    const by = await bystander(f);
    const r = await f.run('run_slow');
    const silent = net.connect(r.handle.socketPath);
    silent.on('error', () => {});
    const silentClosed = new Promise((res) => silent.on('close', res));
    const loris = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    assert.ok((await loris.call('hello')).ok);
    loris.raw('{"v":1,');
    await silentClosed;
    await loris.whenClosed();
    await by.check();
    // The server counts a closed connection once its own side has closed: let that settle.
    while ((f.broker.stats('run_slow')?.connections ?? 0) > 0) await new Promise((res) => setImmediate(res));
    const a = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    assert.ok((await a.call('hello')).ok);
    const b = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    assert.ok((await b.call('hello')).ok);
    const extra = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    await extra.whenClosed();
    assert.ok((await a.call('hello')).ok && (await b.call('hello')).ok);
    a.close();
    b.close();
    by.close();
  } finally {
    await f.close();
  }
});

test('a child that never reads its replies is dropped, not buffered without bound', async () => {
  const f = await BrokerFixture.create({ rate: { capacity: 1_000_000, refillPerSec: 1_000_000, maxWriteBuffer: 64 * 1024 }, handlers: { progress: () => ({ pad: 'x'.repeat(60_000) }) } });
  try {
    const by = await bystander(f);
    const r = await f.run('run_deaf');
    const s = net.connect(r.handle.socketPath);
    s.on('error', () => {});
    await new Promise((res) => s.once('connect', res));
    s.pause();
    const closed = new Promise((res) => s.on('close', res));
    const line = JSON.stringify({ v: 1, id: 1, method: 'progress', token: r.token, params: {} }) + '\n';
    const writeMore = () => {
      for (let i = 0; i < 200 && !s.destroyed; i++) s.write(line);
    };
    writeMore();
    const t = setInterval(writeMore, 20);
    s.resume();
    s.pause();
    await closed;
    clearInterval(t);
    await by.check();
    by.close();
  } finally {
    await f.close();
  }
});
