import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerTestClient } from '../../../src/broker/index.js';
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
