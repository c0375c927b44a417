import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { BrigError } from '../../../src/util/errors.js';
import { METHOD_NAMES, requiredCapability, type BrokerCall, type BrokerReply } from '../../../src/broker/index.js';
import { verifyLedger } from '../../../src/ledger/index.js';
import { BrokerTestClient } from '../../helpers/fakes/broker-test-client.js';
import { BrokerFixture } from './fixture.js';

const errCode = (r: BrokerReply) => (r.ok ? 'ok' : r.error.code);

test('hello returns the packet; the socket is 0600 in a 0700 dir, both the jail user\'s, outside the home; close removes it', async () => {
  const f = await BrokerFixture.create();
  try {
    const r = await f.run('run_a', { caps: ['llm'] });
    const sock = fs.statSync(r.handle.socketPath);
    const dir = fs.statSync(r.dir);
    assert.equal(sock.mode & 0o777, 0o600);
    assert.equal(dir.mode & 0o777, 0o700);
    if (process.getuid?.() === 0) assert.deepEqual([sock.uid, sock.gid, dir.uid, dir.gid], [65534, 65534, 65534, 65534]);
    assert.ok(!r.dir.startsWith(f.home + '/'), `${r.dir} is not under the home`);
    const c = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    const hello = await c.call('hello');
    assert.ok(hello.ok);
    const v = hello.result as { packet: unknown; methods: string[] };
    assert.deepEqual(v.packet, { task: 'opaque', runId: 'run_a' });
    assert.ok(v.methods.includes('llm.complete') && !v.methods.includes('spawn'));
    c.close();
    await r.handle.close();
    assert.equal(fs.existsSync(r.handle.socketPath), false);
  } finally {
    await f.close();
  }
});

// req: lease:enforced
test('[INV-1] every method is refused without its capability, and each denial lands in the ledger', async () => {
  const f = await BrokerFixture.create();
  try {
    const none = await f.run('run_none', { caps: [] });
    const all = await f.run('run_all');
    const cn = await BrokerTestClient.connect(none.handle.socketPath, none.token);
    const ca = await BrokerTestClient.connect(all.handle.socketPath, all.token);
    for (const m of METHOD_NAMES) {
      const cap = requiredCapability(m);
      const denied = await cn.call(m, {});
      const full = await ca.call(m, {});
      if (cap === null) {
        assert.notEqual(errCode(denied), 'capability_denied', m);
      } else {
        assert.equal(errCode(denied), 'capability_denied', m);
        assert.notEqual(errCode(full), 'capability_denied', `${m} with ${cap}`);
      }
    }
    const denials = f.events().filter((e) => e.type === 'broker.denied' && e.runId === 'run_none' && e.code === 'capability_denied');
    assert.deepEqual(
      denials.map((e) => e.method).sort(),
      METHOD_NAMES.filter((m) => requiredCapability(m) !== null).sort(),
    );
    cn.close();
    ca.close();
  } finally {
    await f.close();
  }
});

test('bad, other-run, expired and revoked bearers are refused and logged; other runs keep being served', async () => {
  const f = await BrokerFixture.create();
  try {
    const a = await f.run('run_a');
    const b = await f.run('run_b');
    const c = await BrokerTestClient.connect(a.handle.socketPath, a.token);
    assert.equal(errCode(await c.call('progress', {}, 'not-a-token')), 'unauthenticated');
    assert.equal(errCode(await c.call('progress', {}, b.token)), 'unauthenticated', "another run's bearer");
    assert.equal(errCode(await c.call('progress', {}, 42)), 'invalid_input');
    const cb = await BrokerTestClient.connect(b.handle.socketPath, b.token);
    assert.equal(errCode(await cb.call('progress', {}, a.token)), 'unauthenticated');
    assert.ok(f.leases.revoke(a.record.id, 'operator').ok);
    assert.equal(errCode(await c.call('hello')), 'lease_expired', 'revoked');
    assert.ok((await cb.call('hello')).ok, 'run_b is unaffected');
    f.clock.t += 600_001;
    assert.equal(errCode(await cb.call('hello')), 'lease_expired', 'expired');
    // The first of each kind is a line at once; a repeat is counted into the run's next aggregate line.
    const firsts = f.events().filter((e) => e.type === 'broker.denied').map((e) => `${e.runId}:${e.code}`);
    assert.deepEqual(firsts, ['run_a:unauthenticated', 'run_a:invalid_input', 'run_b:unauthenticated', 'run_a:lease_expired', 'run_b:lease_expired']);
    await f.broker.close();
    const every = f.events().filter((e) => e.type === 'broker.denied').flatMap((e) => Array.from({ length: typeof e.count === 'number' ? e.count : 1 }, () => `${e.runId}:${e.code}`));
    assert.deepEqual(every.sort(), ['run_a:unauthenticated', 'run_a:unauthenticated', 'run_a:invalid_input', 'run_b:unauthenticated', 'run_a:lease_expired', 'run_b:lease_expired'].sort());
    c.close();
    cb.close();
  } finally {
    await f.close();
  }
});

test('handlers get the verified identity with child-set identity fields stripped', async () => {
  const seen: BrokerCall[] = [];
  const f = await BrokerFixture.create({
    handlers: {
      progress: (call) => {
        seen.push(call);
        return { steers: [] };
      },
      spawn: () => {
        throw new BrigError('depth_exceeded', 'too deep');
      },
      checkpoint: () => {
        throw new Error('/host/secret/path exploded');
      },
    },
  });
  try {
    const r = await f.run('run_a');
    const c = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    const p = await c.call('run.progress', { line: 'step 1', runId: 'run_root', leaseId: 'ls_x', depth: 0 });
    assert.ok(p.ok);
    assert.equal(seen[0]!.runId, 'run_a');
    assert.equal(seen[0]!.leaseId, r.record.id);
    assert.deepEqual(seen[0]!.params, { line: 'step 1' });
    const s = await c.call('spawn', { request: { task: 'x' } });
    assert.ok(!s.ok && s.error.code === 'depth_exceeded' && s.error.hint.length > 0);
    const k = await c.call('checkpoint', { state: 1 });
    assert.ok(!k.ok && k.error.code === 'internal');
    assert.doesNotMatch(JSON.stringify(k), /secret/);
    const u = await c.call('llm.complete', { system: 'hi' });
    assert.ok(!u.ok && u.error.code === 'invalid_input' && /not available/.test(u.error.message));
    assert.ok(f.events().some((e) => e.type === 'broker.denied' && e.method === 'llm.complete' && e.code === 'invalid_input'), 'an unserved method is a ledgered refusal');
    const bad = await c.call('progress', { line: 7 });
    assert.equal(errCode(bad), 'invalid_input');
    assert.ok(f.events().some((e) => e.type === 'broker.stripped' && (e.fields as string[]).includes('runId')));
    // The same strip again and again is one fact, not one ledger line per call.
    const before = f.events().filter((e) => e.type === 'broker.stripped').length;
    for (let i = 0; i < 30; i++) await c.call('progress', { line: 'again', runId: 'run_other' });
    assert.equal(f.events().filter((e) => e.type === 'broker.stripped' && e.method === 'progress').length, 1, 'progress strips ledgered once');
    assert.ok(f.events().filter((e) => e.type === 'broker.stripped').length <= before + 1);
    c.close();
  } finally {
    await f.close();
  }
});

// req: events:ledger-no-content
test('[INV-7] broker ledger events carry no task text, params or log content', async () => {
  const f = await BrokerFixture.create();
  try {
    const r = await f.run('run_a');
    const c = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    await c.call('log', { level: 'info', message: 'SECRET-LOG-LINE' });
    await c.call('progress', { line: 'SECRET-PROGRESS', runId: 'x' });
    await c.call('nope', { x: 'SECRET-PARAM' });
    assert.deepEqual(f.broker.logTail('run_a').map((l) => l.message), ['SECRET-LOG-LINE']);
    c.close();
    await r.handle.close();
    const text = fs.readdirSync(f.paths.ledger).map((x) => fs.readFileSync(`${f.paths.ledger}/${x}`, 'utf8')).join('');
    assert.doesNotMatch(text, /SECRET|opaque/);
    assert.ok(verifyLedger(f.paths.ledger).ok);
  } finally {
    await f.close();
  }
});

test('a child that ends its writing side still gets every reply, then the broker closes', async () => {
  const f = await BrokerFixture.create();
  try {
    const r = await f.run('run_a');
    const c = await BrokerTestClient.connect(r.handle.socketPath, r.token);
    const replies = [c.reply(1), c.reply(2)];
    c.raw(JSON.stringify({ v: 1, id: 1, method: 'hello', token: r.token }) + '\n' + JSON.stringify({ v: 1, id: 2, method: 'log', token: r.token, params: { message: 'm' } }) + '\n');
    c.socket.end();
    const [a, b] = await Promise.all(replies);
    assert.ok(a?.ok && b?.ok);
    await c.whenClosed();
  } finally {
    await f.close();
  }
});
