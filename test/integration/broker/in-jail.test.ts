import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { DockerJailDriver, type Jail } from '../../../src/jail/index.js';
import { METHOD_NAMES, requiredCapability } from '../../../src/broker/index.js';
import { BrokerTestClient } from '../../helpers/fakes/broker-test-client.js';
import { BrokerFixture } from './fixture.js';

/** Every container/volume this file makes carries this root run id; the sweep is scoped to it. */
const ROOT = `h2t-${process.pid}-${crypto.randomBytes(3).toString('hex')}`;
const driver = new DockerJailDriver();
after(async () => {
  await driver.sweep((id) => !id.startsWith(ROOT)).catch(() => {});
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ATTACK = fs.readFileSync(path.join(import.meta.dirname, 'in-jail-attack.mjs'));

// req: lease:enforced
test('[INV-1] from inside a real jail: no capability, bad/other-run/expired/revoked bearers and hostile input are refused and logged; another run keeps being served', async (t) => {
  if (!(await requireEngine(t))) return;
  const f = await BrokerFixture.create({ rate: { authTimeoutMs: 1000 } });
  let jail: Jail | undefined;
  try {
    const runId = `${ROOT}-attack`;
    const child = await f.run(runId, { caps: [] });
    const by = await f.run(`${ROOT}-bystander`);
    const bc = await BrokerTestClient.connect(by.handle.socketPath, by.token);
    assert.ok((await bc.call('hello')).ok, 'authenticate before the auth deadline');
    const methods = Object.fromEntries(METHOD_NAMES.map((m) => [m, requiredCapability(m)]));
    jail = await driver.create({
      runId,
      leaseId: child.record.id,
      rootRunId: ROOT,
      argv: ['node', '/workspace/attack.mjs'],
      env: { TOKEN: child.token, OTHER: by.token, METHODS: JSON.stringify(methods), HOME: '/workspace' },
      limits: { memoryMb: 256, cpu: 1, pids: 64, tmpfsMb: 16, diskMb: 64 },
      artifacts: [],
      brokerDir: child.dir,
      inputs: [{ path: 'attack.mjs', data: ATTACK }],
    });
    await jail.start();
    const exitP = jail.wait();
    let exited = false;
    void exitP.then(() => (exited = true), () => (exited = true));
    const start = Date.now();
    let phase = 0;
    let served = 0;
    while (!exited && Date.now() - start < 120_000) {
      if (phase !== 1) {
        assert.ok((await bc.call('hello')).ok, 'the bystander run keeps being served');
        served++;
      }
      const out = jail.tails().stdoutTail;
      if (phase === 0 && out.includes('PHASE1-DONE')) {
        f.clock.t += 700_000; // past the child's expiry
        phase = 1;
      } else if (phase === 1 && METHOD_NAMES.every((m) => f.events().some((e) => e.type === 'broker.denied' && e.runId === runId && e.code === 'lease_expired' && e.method === m))) {
        // Every method has met the expired bearer: now revoke it.
        f.clock.t -= 700_000;
        assert.ok(f.leases.revoke(child.record.id, 'operator').ok);
        phase = 2;
      }
      await sleep(100);
    }
    if (!exited) await jail.kill();
    const exit = await exitP;
    const tails = jail.tails();
    assert.equal(exit.exitCode, 0, tails.stderrTail);
    const line = tails.stdoutTail.split('\n').find((l) => l.startsWith('REPORT '));
    assert.ok(line, tails.stdoutTail.slice(-2000));
    const rep = JSON.parse(line!.slice('REPORT '.length));

    assert.equal(rep.hello, 'ok');
    for (const m of METHOD_NAMES) {
      if (requiredCapability(m) !== null) assert.equal(rep.caps[m].got, 'capability_denied', m);
      else assert.notEqual(rep.caps[m].got, 'capability_denied', m);
    }
    assert.deepEqual(rep.auth, { bad: 'unauthenticated', other: 'unauthenticated', missing: 'invalid_input' });
    for (const m of METHOD_NAMES) {
      assert.equal(rep.authAll.bad[m], 'unauthenticated', `bad bearer: ${m}`);
      assert.equal(rep.authAll.other[m], 'unauthenticated', `other run's bearer: ${m}`);
    }
    const sorted = [...METHOD_NAMES].sort();
    assert.deepEqual(rep.phases.byMethod.expired, sorted, 'every method refused with an expired bearer');
    assert.deepEqual(rep.phases.byMethod.revoked, sorted, 'every method refused with a revoked bearer');
    assert.equal(rep.hostile.bigLine, 'invalid_input');
    assert.equal(rep.hostile.bigLineClosed, true);
    for (const k of ['invalidJson', 'deepNesting', 'unknown', 'proto']) assert.equal(rep.hostile[k], 'invalid_input', k);
    assert.equal(rep.hostile.stillServed, 'ok');
    // The burst is refused before parsing, then cut at the abuse threshold: never all 10,000 answered.
    assert.ok((rep.hostile.burst.rate_limited ?? 0) > 0 && rep.hostile.burst.closed === 1, JSON.stringify(rep.hostile.burst));
    assert.equal(rep.hostile.afterAbuse, 'closed', 'an abusive run is cut off: its other connections too');
    assert.equal(rep.hostile.halfOpenClosed, true);
    assert.deepEqual(rep.phases.seen, ['expired', 'revoked']);
    assert.ok(served > 3);

    // Closing the run's socket writes its aggregated repeats: each line stands for `count` refusals.
    await f.broker.closeRun(runId);
    const denied = f.events().filter((e) => e.type === 'broker.denied' && e.runId === runId).flatMap((e) => Array.from({ length: typeof e.count === 'number' ? e.count : 1 }, () => e));
    const has = (code: string, method?: string) => denied.some((e) => e.code === code && (method === undefined || e.method === method));
    for (const m of METHOD_NAMES) if (requiredCapability(m) !== null) assert.ok(has('capability_denied', m), `ledger: ${m}`);
    assert.equal(denied.filter((e) => e.code === 'unauthenticated').length, 2 + 2 * METHOD_NAMES.length);
    for (const m of METHOD_NAMES) {
      assert.equal(denied.filter((e) => e.code === 'unauthenticated' && e.method === m).length, m === 'progress' ? 4 : 2, `ledger: bad + other bearer on ${m}`);
      assert.ok(has('lease_expired', m), `ledger: expired/revoked bearer on ${m}`);
    }
    assert.ok(has('rate_limited') && has('invalid_input'));
    assert.deepEqual(f.abused, [runId], 'a 10,000-message burst is sustained abuse');
    bc.close();
  } finally {
    await jail?.destroy().catch(() => {});
    await f.close();
  }
});
