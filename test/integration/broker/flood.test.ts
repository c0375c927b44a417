import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { DEFAULT_BROKER_LIMITS } from '../../../src/broker/index.js';
import type { LedgerEvent } from '../../../src/ledger/index.js';
import { BrokerTestClient } from '../../helpers/fakes/broker-test-client.js';
import { BrokerFixture } from './fixture.js';

/**
 * 200,000 invalid-JSON lines on one run's socket (default limits): the rate limit is charged
 * before a line is parsed, the abusive connection is cut at once and no more of it is read,
 * refusals are aggregated in the ledger, and another run is served throughout. No timing is
 * asserted (bench/broker-flood.bench.ts measures it).
 */
const FLOOD_LINES = 200_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Refusals a `broker.denied` line stands for: the first of a kind is 1, an aggregate says how many. */
const stands = (e: LedgerEvent) => (typeof e.count === 'number' ? e.count : 1);

// req: limits:no-stall
test('[INV-9] [INV-7] a 200,000-line flood is cut at once, ledgered in a handful of lines, and another run is served throughout', async () => {
  const f = await BrokerFixture.create();
  try {
    const by = await f.run('run_by');
    const bc = await BrokerTestClient.connect(by.handle.socketPath, by.token);
    assert.ok((await bc.call('hello')).ok);
    const victim = await f.run('run_flood');

    const s = net.connect(victim.handle.socketPath);
    s.on('error', () => {});
    s.on('data', () => {});
    const closed = new Promise<void>((resolve) => s.on('close', () => resolve()));
    let isClosed = false;
    void closed.then(() => (isClosed = true));
    await new Promise((resolve) => s.once('connect', resolve));
    // The whole flood handed to the kernel at once: the broker decides how much of it it reads.
    s.write('not json\n'.repeat(FLOOD_LINES));

    // The bystander calls at a child's pace while the flood is being handled, and after.
    let served = 0;
    const failures: string[] = [];
    for (let i = 0; (!isClosed || i < 20) && i < 2000; i++) {
      const r = await bc.call('hello');
      if (r.ok) served++;
      else failures.push(r.error.code);
      await sleep(10);
    }
    await closed;
    assert.deepEqual(failures, [], 'every bystander call is served');
    assert.ok(served >= 20, `served ${served}`);

    assert.deepEqual(f.abused, ['run_flood'], 'the flood is reported as abuse');
    const st = f.broker.stats('run_flood')!;
    assert.equal(st.abused, true);
    // Cut at the abuse threshold: the rest of the flood was never read, let alone parsed.
    assert.ok(st.denied >= DEFAULT_BROKER_LIMITS.abuseStrikes && st.denied < 3 * DEFAULT_BROKER_LIMITS.abuseStrikes, `refused ${st.denied} lines`);
    // An abused run gets no more connections.
    const again = net.connect(victim.handle.socketPath);
    again.on('error', () => {});
    await new Promise((resolve) => again.on('close', resolve));
    assert.ok((await bc.call('hello')).ok, 'the bystander is still served');

    bc.close();
    await victim.handle.close();
    await f.ledger.flush();
    const lines = f.events().filter((e) => e.runId === 'run_flood');
    assert.ok(lines.length <= 10, `${lines.length} ledger lines for the flooded run: ${JSON.stringify(lines.map((e) => [e.type, e.code, e.count]))}`);
    assert.ok(lines.some((e) => e.type === 'broker.abuse'));
    const denied = lines.filter((e) => e.type === 'broker.denied');
    // The first refusal of each kind is its own line; the aggregates account for every other one.
    assert.ok(denied.some((e) => e.code === 'invalid_input' && e.count === undefined), 'the first invalid line is its own line');
    assert.ok(denied.some((e) => e.code === 'rate_limited' && e.count === undefined), 'the first rate-limited line is its own line');
    const closedEv = lines.find((e) => e.type === 'broker.closed')!;
    assert.equal(denied.reduce((n, e) => n + stands(e), 0), closedEv.denied, 'every refusal is counted in the ledger');
  } finally {
    await f.close();
  }
});

// req: limits:no-stall
test('[INV-9] a flood of blank lines is charged like any other: rate-limited, then cut off as abuse (no free newlines)', async () => {
  const f = await BrokerFixture.create();
  try {
    const victim = await f.run('run_blank');
    const s = net.connect(victim.handle.socketPath);
    s.on('error', () => {});
    const replies: string[] = [];
    s.on('data', (d: Buffer) => replies.push(d.toString('utf8')));
    const closed = new Promise<void>((resolve) => s.on('close', () => resolve()));
    await new Promise((resolve) => s.once('connect', resolve));
    s.write('\n \r\n'.repeat(FLOOD_LINES / 2));
    await closed;
    assert.deepEqual(f.abused, ['run_blank'], 'the blank-line flood is reported as abuse');
    const st = f.broker.stats('run_blank')!;
    assert.equal(st.abused, true);
    assert.ok(st.denied >= DEFAULT_BROKER_LIMITS.abuseStrikes, `refused ${st.denied} lines`);
    assert.match(replies.join(''), /rate_limited/, 'the refusals are answered');
  } finally {
    await f.close();
  }
});
