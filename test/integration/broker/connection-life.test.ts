import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerTestClient } from '../../helpers/fakes/broker-test-client.js';
import { BrokerFixture } from './fixture.js';

/**
 * A live run's broker connection never dies of idleness: once a bearer verified on it, it
 * lasts as long as the run, however long the child thinks or a call takes. Only a
 * connection that never authenticates is dropped (auth deadline). Real unix sockets.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a first call that takes longer than the auth deadline keeps its connection and gets its reply', async () => {
  const f = await BrokerFixture.create({
    rate: { authTimeoutMs: 300, idleMs: 300 },
    handlers: { spawn: async () => (await sleep(1200), { runId: 'r-child', status: 'ended' }) },
  });
  try {
    const r = await f.run('run_slowfirst');
    const c = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    const reply = await c.call('spawn', { request: { task: 't' } });
    assert.equal(reply.ok, true, JSON.stringify(reply));
    // Quiet for 4× the idle and auth bounds: an authenticated connection stays.
    await sleep(1300);
    assert.equal(c.closed, false);
    assert.equal((await c.call('hello')).ok, true);
    c.close();
  } finally {
    await f.close();
  }
});

test('calls on one connection run side by side: a long call does not hold back a short one', async () => {
  const f = await BrokerFixture.create({
    handlers: {
      spawn: async () => (await sleep(1500), { runId: 'r-child' }),
      progress: () => ({ steers: [] }),
    },
  });
  try {
    const r = await f.run('run_parallel');
    const c = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    let slowDone = false;
    const slow = c.call('spawn', { request: { task: 't' } }).finally(() => (slowDone = true));
    const quick = await c.call('progress', { line: 'meanwhile' });
    assert.equal(quick.ok, true);
    assert.equal(slowDone, false, 'the progress reply came while the spawn was still running, not behind it');
    assert.equal((await slow).ok, true);
    c.close();
  } finally {
    await f.close();
  }
});

test('a connection that never shows a bearer is still dropped at the auth deadline', async () => {
  const f = await BrokerFixture.create({ rate: { authTimeoutMs: 300 } });
  try {
    const r = await f.run('run_noauth');
    const c = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    const t0 = Date.now();
    await c.whenClosed();
    assert.ok(Date.now() - t0 < 3000);
  } finally {
    await f.close();
  }
});

// req: limits:no-stall
test('[INV-9] lines queued behind slow calls are bounded in bytes: past about 1 MiB the broker stops reading (backpressure), then catches up', async () => {
  let served = 0;
  const f = await BrokerFixture.create({
    handlers: { spawn: async () => (await sleep(400), served++, { runId: 'r-child', status: 'ended' }) },
  });
  try {
    const r = await f.run('run_queue');
    const c = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    assert.ok((await c.call('hello')).ok);
    const net = await import('node:net');
    const s = net.connect(r.handle.socketPath);
    s.on('error', () => {});
    let replies = '';
    s.on('data', (d: Buffer) => (replies += d.toString()));
    await new Promise((resolve) => s.once('connect', resolve));
    // 100 slow calls of ~60 KB each (6 MB): 4 run at once, the rest wait for a slot.
    const pad = 'x'.repeat(60_000);
    for (let i = 1; i <= 100; i++) s.write(`${JSON.stringify({ v: 1, id: i, method: 'spawn', token: r.token, params: { request: { task: 't', pad } } })}\n`);
    await sleep(250);
    // What the broker has not read stays with the child: most of the 6 MB (the kernel's buffer
    // holds a few hundred KiB, the broker's queue about 1 MiB).
    assert.ok(s.writableLength > 3_000_000, `the broker read all but ${s.writableLength} bytes while its calls were slow`);
    // It catches up as calls finish: every call is answered in the end.
    for (let i = 0; i < 200 && (replies.match(/\n/g)?.length ?? 0) < 100; i++) await sleep(250);
    assert.equal(replies.match(/"ok":true/g)?.length, 100, 'every queued call was served');
    assert.equal(served, 100);
    s.destroy();
    c.close();
  } finally {
    await f.close();
  }
});
