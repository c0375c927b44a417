import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LeaseStore, loadPolicyFile, shippedPoliciesDir, grantWithin, type Policy } from '../../../src/lease/index.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { ManualTimers } from '../../helpers/fakes/manual-time.js';

function policy(): Policy {
  const r = loadPolicyFile(path.join(shippedPoliciesDir(), 'default.yaml'));
  assert.ok(r.ok);
  return r.value;
}

async function withStore(fn: (s: LeaseStore, ctx: { dir: string; ledger: MemoryLedger; clock: { t: number } }) => void | Promise<void>): Promise<void> {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-lease-'));
  const clock = { t: Date.parse('2026-01-01T00:00:00Z') };
  const ledger = new MemoryLedger();
  const dir = path.join(home, 'leases');
  try {
    await fn(new LeaseStore({ dir, policy: policy(), ledger, now: () => clock.t }), { dir, ledger, clock });
  } finally {
    await fs.promises.rm(home, { recursive: true, force: true });
  }
}

test('a root lease is the profile inside root; token verifies for its run only', () =>
  withStore((s, { ledger, dir }) => {
    const r = s.issueRoot({ profile: 'coordinator', runId: 'run_a', rootRunId: 'run_a', timeoutMs: 60_000 });
    assert.ok(r.ok);
    const { record, token } = r.value;
    assert.equal(record.depth, 1, 'the operator is depth 0');
    assert.ok(record.caps.includes('spawn'));
    assert.equal(record.limits.timeoutMs, 60_000);
    assert.equal(Date.parse(record.expiresAt) - Date.parse(record.issuedAt), 60_000);
    assert.notEqual(record.tokenHash, token);
    assert.ok(!fs.readFileSync(path.join(dir, `${record.id}.json`), 'utf8').includes(token), 'the token is never stored');
    assert.equal(fs.statSync(path.join(dir, `${record.id}.json`)).mode & 0o777, 0o600);
    assert.ok(s.verify(token, 'run_a').ok);
    const other = s.verify(token, 'run_b');
    assert.ok(!other.ok && other.error.code === 'unauthenticated');
    const bad = s.verify(token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A'), 'run_a');
    assert.ok(!bad.ok && bad.error.code === 'unauthenticated');
    assert.ok(!s.verify(undefined, 'run_a').ok);
    assert.ok(!s.verify('x'.repeat(10_000), 'run_a').ok);
    assert.equal(ledger.events.filter((e) => e.type === 'lease.issued').length, 1);
  }));

// req: lease:caps-intersect lease:limits-min
test('[INV-1] a child is parent ∩ request ∩ profile; refusals are recorded and logged', () =>
  withStore((s, { ledger }) => {
    const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000 });
    assert.ok(root.ok);
    const c = s.issueChild({
      parentLeaseId: root.value.record.id,
      request: { caps: ['llm', 'exec', 'net.egress', 'spawn'], limits: { memoryMb: 99_999 } },
      profile: 'worker',
      runId: 'r1',
      rootRunId: 'r0',
      timeoutMs: 30_000,
    });
    assert.ok(c.ok);
    const rec = c.value.record;
    assert.deepEqual(rec.caps, ['llm']);
    assert.deepEqual(
      rec.refused.map((r) => `${r.what}:${r.code}`),
      ['exec:capability_denied', 'net.egress:denylisted', 'spawn:capability_denied', 'memoryMb:limit_clamped'],
    );
    assert.equal(rec.depth, 2);
    assert.equal(rec.limits.timeoutMs, 30_000);
    assert.ok(grantWithin(rec, root.value.record));
    assert.deepEqual(s.lineage(rec.id).map((r) => r.id), [rec.id, root.value.record.id]);
    const ev = ledger.events.find((e) => e.type === 'lease.issued' && e.leaseId === rec.id);
    assert.deepEqual(ev?.refused, ['exec:capability_denied', 'net.egress:denylisted', 'spawn:capability_denied', 'memoryMb:limit_clamped']);
  }));

test('posture downgrade, no spawn cap, past maxDepth and unknown parent are refused as values and logged', () =>
  withStore((s, { ledger }) => {
    const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000 });
    assert.ok(root.ok);
    const base = { parentLeaseId: root.value.record.id, profile: 'coordinator', rootRunId: 'r0', timeoutMs: 1000 };
    const loose = s.issueChild({ ...base, request: { posture: { network: 'egress' } }, runId: 'x1' });
    assert.ok(!loose.ok && loose.error.code === 'posture_downgrade');
    const worker = s.issueChild({ ...base, request: undefined, profile: 'worker', runId: 'w1' });
    assert.ok(worker.ok);
    const grand = s.issueChild({ ...base, parentLeaseId: worker.value.record.id, request: undefined, runId: 'w2' });
    assert.ok(!grand.ok && grand.error.code === 'capability_denied');
    let parent = root.value.record.id;
    let depthErr: string | undefined;
    for (let i = 1; i <= 5; i++) {
      const r = s.issueChild({ ...base, parentLeaseId: parent, request: undefined, runId: `d${i}` });
      if (!r.ok) {
        depthErr = `${i}:${r.error.code}`;
        break;
      }
      parent = r.value.record.id;
    }
    assert.equal(depthErr, '3:depth_exceeded', 'root maxDepth 3: leases at depths 1, 2, 3');
    const none = s.issueChild({ ...base, parentLeaseId: 'ls_00000000000000000000', request: undefined, runId: 'n1' });
    assert.ok(!none.ok && none.error.code === 'lease_not_found');
    assert.deepEqual(
      ledger.events.filter((e) => e.type === 'lease.refused').map((e) => e.code),
      ['posture_downgrade', 'capability_denied', 'depth_exceeded', 'lease_not_found'],
    );
  }));

test('expiry: a token past its expiry is refused, and a child never outlives its parent', () =>
  withStore((s, { clock }) => {
    const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 10_000 });
    assert.ok(root.ok);
    clock.t += 5_000;
    const c = s.issueChild({ parentLeaseId: root.value.record.id, request: undefined, profile: 'worker', runId: 'r1', rootRunId: 'r0', timeoutMs: 60_000 });
    assert.ok(c.ok);
    assert.equal(c.value.record.expiresAt, root.value.record.expiresAt);
    clock.t += 5_000;
    const v = s.verify(c.value.token, 'r1');
    assert.ok(!v.ok && v.error.code === 'lease_expired');
    const late = s.issueChild({ parentLeaseId: root.value.record.id, request: undefined, profile: 'worker', runId: 'r2', rootRunId: 'r0', timeoutMs: 1 });
    assert.ok(!late.ok && late.error.code === 'lease_expired');
  }));

test('revoke revokes the whole subtree, tells listeners, survives a restart', () =>
  withStore((s, { dir, ledger, clock }) => {
    const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000 });
    assert.ok(root.ok);
    const mk = (parent: string, runId: string, profile = 'coordinator') => {
      const r = s.issueChild({ parentLeaseId: parent, request: undefined, profile, runId, rootRunId: 'r0', timeoutMs: 60_000 });
      assert.ok(r.ok);
      return r.value;
    };
    const a = mk(root.value.record.id, 'a');
    const a1 = mk(a.record.id, 'a1');
    const a2 = mk(a.record.id, 'a2', 'worker');
    const b = mk(root.value.record.id, 'b');
    const heard: string[] = [];
    s.onRevoked((recs, by) => heard.push(...recs.map((r) => `${r.runId}:${by}`)));
    const rv = s.revoke(a.record.id, 'operator');
    assert.ok(rv.ok);
    assert.equal(rv.value[0]!.runId, 'a', 'the revoked lease first, then its subtree');
    assert.deepEqual(rv.value.map((r) => r.runId).sort(), ['a', 'a1', 'a2']);
    assert.deepEqual(heard.sort(), ['a1:operator', 'a2:operator', 'a:operator']);
    for (const [t, run] of [[a.token, 'a'], [a1.token, 'a1'], [a2.token, 'a2']] as const) {
      const v = s.verify(t, run);
      assert.ok(!v.ok && v.error.code === 'lease_expired');
    }
    assert.ok(s.verify(b.token, 'b').ok);
    assert.equal(ledger.events.filter((e) => e.type === 'lease.revoked').length, 3);
    const again = new LeaseStore({ dir, policy: policy(), ledger, now: () => clock.t });
    assert.equal(again.list().length, 5);
    assert.equal(again.get(a2.record.id)?.revoked?.by, 'operator');
    assert.ok(again.verify(b.token, 'b').ok);
    assert.ok(!again.verify(a1.token, 'a1').ok);
    const miss = again.revoke('ls_ffffffffffffffffffff', 'operator');
    assert.ok(!miss.ok && miss.error.code === 'lease_not_found');
    assert.ok(!again.revoke('../../etc/passwd', 'operator').ok);
  }));

test('a revoke by another process is seen on the next verify; a revoked ancestor ends a child', () =>
  withStore((s, { dir, ledger, clock }) => {
    const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000 });
    assert.ok(root.ok);
    const c = s.issueChild({ parentLeaseId: root.value.record.id, request: undefined, profile: 'worker', runId: 'r1', rootRunId: 'r0', timeoutMs: 60_000 });
    assert.ok(c.ok);
    const mid = s.issueChild({ parentLeaseId: root.value.record.id, request: undefined, profile: 'coordinator', runId: 'r2', rootRunId: 'r0', timeoutMs: 60_000 });
    assert.ok(mid.ok);
    const cli = new LeaseStore({ dir, policy: policy(), ledger, now: () => clock.t });
    // Simulate a lost cascade: mark only the root revoked on disk.
    const rootRec = cli.get(root.value.record.id)!;
    fs.writeFileSync(path.join(dir, `${rootRec.id}.json`), JSON.stringify({ ...rootRec, revoked: { by: 'operator', at: rootRec.issuedAt } }));
    const v = s.verify(c.value.token, 'r1');
    assert.ok(!v.ok && v.error.code === 'lease_expired');
    // A coordinator child not itself marked (the lost cascade) cannot issue a grandchild either.
    const g = s.issueChild({ parentLeaseId: mid.value.record.id, request: undefined, profile: 'worker', runId: 'r9', rootRunId: 'r0', timeoutMs: 60_000 });
    assert.ok(!g.ok && g.error.code === 'lease_expired', 'no grandchild under a revoked ancestor');
  }));

test('a corrupt lease file is no lease (fail closed)', () =>
  withStore((s, { dir }) => {
    const root = s.issueRoot({ profile: 'worker', runId: 'r0', rootRunId: 'r0', timeoutMs: 1000 });
    assert.ok(root.ok);
    fs.writeFileSync(path.join(dir, `${root.value.record.id}.json`), '{"id": "broken"');
    assert.ok(!s.verify(root.value.token, 'r0').ok);
    assert.equal(s.get(root.value.record.id), undefined);
  }));

test('a child whose ancestor record is missing or unreadable is no lease (fail closed)', () =>
  withStore((s, { dir }) => {
    const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000 });
    assert.ok(root.ok);
    const c = s.issueChild({ parentLeaseId: root.value.record.id, request: undefined, profile: 'coordinator', runId: 'r1', rootRunId: 'r0', timeoutMs: 60_000 });
    assert.ok(c.ok);
    const g = s.issueChild({ parentLeaseId: c.value.record.id, request: undefined, profile: 'worker', runId: 'r2', rootRunId: 'r0', timeoutMs: 60_000 });
    assert.ok(g.ok);
    assert.ok(s.verify(g.value.token, 'r2').ok, 'verifies while the lineage is whole');
    // A revoked root whose record then vanishes must not leave its subtree live.
    const cFile = path.join(dir, `${c.value.record.id}.json`);
    const cText = fs.readFileSync(cFile, 'utf8');
    fs.writeFileSync(cFile, '{"garbled":');
    const mid = s.verify(g.value.token, 'r2');
    assert.ok(!mid.ok);
    assert.equal(mid.error.code, 'lease_expired');
    assert.match(mid.error.message, /missing or unreadable ancestor/);
    fs.writeFileSync(cFile, cText);
    assert.ok(s.verify(g.value.token, 'r2').ok, 'whole again');
    fs.rmSync(path.join(dir, `${root.value.record.id}.json`));
    for (const [token, run] of [[c.value.token, 'r1'], [g.value.token, 'r2']] as const) {
      const v = s.verify(token, run);
      assert.ok(!v.ok);
      assert.match(v.error.message, /missing or unreadable ancestor/);
    }
    // Nor can such a lease issue children.
    const kid = s.issueChild({ parentLeaseId: c.value.record.id, request: undefined, profile: 'worker', runId: 'r3', rootRunId: 'r0', timeoutMs: 60_000 });
    assert.ok(!kid.ok);
    assert.equal(kid.error.code, 'lease_expired');
    assert.match(kid.error.message, /missing or unreadable ancestor/);
  }));

// req: events:ledger-no-content
test('[INV-7] a profile name a child made up never reaches the ledger', () =>
  withStore((s, { ledger }) => {
    const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000 });
    assert.ok(root.ok);
    const text = 'summarise the secret quarterly numbers';
    const c = s.issueChild({ parentLeaseId: root.value.record.id, request: undefined, profile: text, runId: 'r1', rootRunId: 'r0', timeoutMs: 60_000 });
    assert.ok(!c.ok && c.error.code === 'invalid_input');
    const refused = ledger.events.filter((e) => e.type === 'lease.refused');
    assert.equal(refused.length, 1);
    assert.equal(refused[0]!.profile, '(unknown)');
    assert.doesNotMatch(JSON.stringify(ledger.events), /quarterly/);
    const gone = s.issueChild({ parentLeaseId: 'ls_00000000000000000000', request: undefined, profile: text, runId: 'r2', rootRunId: 'r0', timeoutMs: 60_000 });
    assert.ok(!gone.ok);
    assert.doesNotMatch(JSON.stringify(ledger.events), /quarterly/);
    assert.equal(ledger.events.filter((e) => e.type === 'lease.issued')[0]!.profile, 'coordinator', 'a real profile name is kept');
  }));

test('watchRevocations: a revoke written by another process reaches this store\'s listeners once', () =>
  withStore(async (s, { dir, ledger, clock }) => {
    const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000 });
    assert.ok(root.ok);
    const kid = s.issueChild({ parentLeaseId: root.value.record.id, request: undefined, profile: 'worker', runId: 'r1', rootRunId: 'r0', timeoutMs: 60_000 });
    assert.ok(kid.ok);
    const heard: string[] = [];
    s.onRevoked((recs, by) => heard.push(...recs.map((r) => `${r.runId}:${by}`)));
    const timers = new ManualTimers();
    const stop = s.watchRevocations(50, timers);
    try {
      const cli = new LeaseStore({ dir, ledger, now: () => clock.t });
      assert.ok(cli.revoke(root.value.record.id, 'operator').ok);
      // The periodic scan comes round three times (the directory watch may have told it first).
      for (let i = 0; i < 3; i++) timers.fire();
      assert.deepEqual(heard.sort(), ['r0:operator', 'r1:operator']);
      assert.ok(s.revoke(root.value.record.id, 'operator').ok);
      assert.equal(heard.length, 2, 'already-announced revokes are not announced again');
    } finally {
      stop();
    }
    assert.equal(timers.live, 0, 'stopping the watch clears its timer');
  }));

test('watchRevocations: a leases directory removed under a running watcher is no crash, and revokes are heard again once it is back', () =>
  withStore(async (s, { dir, ledger, clock }) => {
    const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000 });
    assert.ok(root.ok);
    const heard: string[] = [];
    s.onRevoked((recs, by) => heard.push(...recs.map((r) => `${r.runId}:${by}`)));
    const timers = new ManualTimers();
    const stop = s.watchRevocations(20, timers);
    try {
      const saved = `${dir}.saved`;
      fs.renameSync(dir, saved);
      // Several scans run with the directory gone: a throw from the timer would end the process.
      for (let i = 0; i < 6; i++) timers.fire();
      fs.renameSync(saved, dir);
      const cli = new LeaseStore({ dir, ledger, now: () => clock.t });
      assert.ok(cli.revoke(root.value.record.id, 'operator').ok);
      timers.fire();
      assert.deepEqual(heard, ['r0:operator']);
    } finally {
      stop();
    }
  }));

test('a run holds one live lease: a second issue is refused until the first is revoked; then the new token verifies and the old one does not, also after a restart', () =>
  withStore((s, { dir, ledger, clock }) => {
    const first = s.issueRoot({ profile: 'worker', runId: 'run_q', rootRunId: 'run_q', timeoutMs: 60_000 });
    assert.ok(first.ok);
    const twice = s.issueRoot({ profile: 'worker', runId: 'run_q', rootRunId: 'run_q', timeoutMs: 60_000 });
    assert.ok(!twice.ok && /already holds a lease/.test(twice.error.message), 'a live lease is never doubled');
    // A run a crash caught starting: the dead launch's lease is revoked, the run launches again.
    assert.ok(s.revoke(first.value.record.id, 'system', 'run_requeued').ok);
    clock.t += 1000;
    const again = s.issueRoot({ profile: 'worker', runId: 'run_q', rootRunId: 'run_q', timeoutMs: 60_000 });
    assert.ok(again.ok, again.ok ? '' : again.error.message);
    assert.ok(s.verify(again.value.token, 'run_q').ok);
    assert.ok(!s.verify(first.value.token, 'run_q').ok, 'the dead launch\'s token proves nothing');
    assert.equal(s.byRunId('run_q')?.id, again.value.record.id);
    const restarted = new LeaseStore({ dir, policy: policy(), ledger, now: () => clock.t });
    assert.ok(restarted.verify(again.value.token, 'run_q').ok, 'the index built from disk names the live one');
    assert.ok(!restarted.verify(first.value.token, 'run_q').ok);
    const third = restarted.issueRoot({ profile: 'worker', runId: 'run_q', rootRunId: 'run_q', timeoutMs: 60_000 });
    assert.ok(!third.ok, 'still one live lease after a restart');
  }));

/** A root lease (run r0) and its child's (run r1). */
function family(s: LeaseStore) {
  const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000 });
  assert.ok(root.ok);
  const kid = s.issueChild({ parentLeaseId: root.value.record.id, request: {}, profile: 'worker', runId: 'r1', rootRunId: 'r0', timeoutMs: 60_000 });
  assert.ok(kid.ok);
  return { root: root.value, kid: kid.value };
}

/** Reads of files under `dir` while `fn` runs (basenames, in order). */
function readsUnder<T>(dir: string, fn: () => T): { value: T; reads: string[] } {
  const reads: string[] = [];
  const real = fs.readFileSync;
  (fs as { readFileSync: unknown }).readFileSync = (...a: Parameters<typeof fs.readFileSync>) => (String(a[0]).startsWith(dir) && reads.push(path.basename(String(a[0]))), real(...a));
  try {
    return { value: fn(), reads };
  } finally {
    (fs as { readFileSync: unknown }).readFileSync = real;
  }
}

test('the store finds leases through their index: a start reads none, a verify and a revoke read the index and their own family, never the home', () =>
  withStore((s, { dir, ledger, clock }) => {
    const { root, kid } = family(s);
    // A home's history: forty ended runs.
    for (let i = 0; i < 40; i++) {
      const old = s.issueRoot({ profile: 'worker', runId: `old${i}`, rootRunId: `old${i}`, timeoutMs: 60_000 });
      assert.ok(old.ok);
      assert.ok(s.revoke(old.value.record.id, 'system', 'run_completed').ok);
    }
    assert.equal(fs.readFileSync(path.join(dir, 'index.jsonl'), 'utf8').trim().split('\n').length, 42, 'one line per lease issued');
    assert.equal(fs.statSync(path.join(dir, 'index.jsonl')).mode & 0o777, 0o600);
    const own = new Set(['index.jsonl', `${root.record.id}.json`, `${kid.record.id}.json`]);
    const fresh = readsUnder(dir, () => new LeaseStore({ dir, policy: policy(), ledger, now: () => clock.t })).value;
    const start = readsUnder(dir, () => new LeaseStore({ dir, policy: policy(), ledger, now: () => clock.t }));
    assert.deepEqual(start.reads, [], 'a store that has asked nothing has read nothing');
    const verified = readsUnder(dir, () => fresh.verify(root.token, 'r0'));
    assert.ok(verified.value.ok);
    assert.deepEqual(verified.reads.filter((f) => !own.has(f)), [], `the verify read the index and the lease: ${verified.reads.join(', ')}`);
    const revoked = readsUnder(dir, () => fresh.revoke(root.record.id, 'operator'));
    assert.ok(revoked.value.ok);
    assert.deepEqual(revoked.value.value.map((r) => r.runId), ['r0', 'r1'], 'the cascade reaches the child');
    assert.deepEqual(revoked.reads.filter((f) => !own.has(f)), [], `the revoke read its family only: ${revoked.reads.join(', ')}`);
    // A run that holds no lease (one that failed before its lease, a cut launch): the index, not the home.
    const none = readsUnder(dir, () => fresh.byRunId('never-leased'));
    assert.equal(none.value, undefined);
    assert.deepEqual(none.reads.filter((f) => f !== 'index.jsonl'), [], `no record read for a run without a lease: ${none.reads.join(', ')}`);
  }));

test('the leases index is a cache: a home without one is read once and gets one; a record with no line is found and its line written again; a line with no record is ignored', () =>
  withStore((s, { dir, ledger, clock }) => {
    const a = s.issueRoot({ profile: 'worker', runId: 'ra', rootRunId: 'ra', timeoutMs: 60_000 });
    const b = s.issueRoot({ profile: 'worker', runId: 'rb', rootRunId: 'rb', timeoutMs: 60_000 });
    assert.ok(a.ok && b.ok);
    const index = path.join(dir, 'index.jsonl');
    // A home from before the index.
    fs.rmSync(index);
    const legacy = new LeaseStore({ dir, policy: policy(), ledger, now: () => clock.t });
    const first = readsUnder(dir, () => legacy.verify(a.value.token, 'ra'));
    assert.ok(first.value.ok);
    assert.ok(first.reads.includes(`${b.value.record.id}.json`), 'every record read once');
    assert.equal(fs.readFileSync(index, 'utf8').trim().split('\n').length, 2, 'and the index written');
    // A crash between a record and its line (the line for rb lost), and a line whose record is gone.
    fs.writeFileSync(index, fs.readFileSync(index, 'utf8').split('\n').filter((l) => !l.includes('"rb"')).join('\n') + `{"id":"ls_${'0'.repeat(20)}","run":"rb","parent":null,"at":"2099-01-01T00:00:00.000Z"}\nnot json\n`);
    const after = new LeaseStore({ dir, policy: policy(), ledger, now: () => clock.t });
    const again = after.issueRoot({ profile: 'worker', runId: 'rb', rootRunId: 'rb', timeoutMs: 60_000 });
    assert.ok(!again.ok && /already holds a lease/.test(again.error.message), 'rb\'s live lease is found without its line');
    assert.ok(after.verify(b.value.token, 'rb').ok);
    assert.match(fs.readFileSync(index, 'utf8'), new RegExp(b.value.record.id), 'its line written again');
  }));

test('a wrong index line cannot keep a revoked parent\'s child alive: the child\'s own record is what verify checks', () =>
  withStore((s, { dir, ledger, clock }) => {
    const { root, kid } = family(s);
    // The child's line names no parent: the cascade through the index misses it.
    const index = path.join(dir, 'index.jsonl');
    fs.writeFileSync(index, fs.readFileSync(index, 'utf8').replace(`"parent":"${root.record.id}"`, '"parent":null'));
    const other = new LeaseStore({ dir, policy: policy(), ledger, now: () => clock.t });
    const revoked = other.revoke(root.record.id, 'operator');
    assert.ok(revoked.ok);
    assert.deepEqual(revoked.value.map((r) => r.runId), ['r0'], 'the cascade found no child through the wrong line');
    const v = other.verify(kid.token, 'r1');
    assert.ok(!v.ok, 'the child is refused all the same: its record names its revoked parent');
  }));

test('a child issued by another store after this one read its index is still in the cascade (the directory changed under it)', () =>
  withStore((s, { dir, ledger, clock }) => {
    const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000 });
    assert.ok(root.ok);
    assert.ok(s.verify(root.value.token, 'r0').ok, 'this store has its index');
    const other = new LeaseStore({ dir, policy: policy(), ledger, now: () => clock.t });
    const kid = other.issueChild({ parentLeaseId: root.value.record.id, request: {}, profile: 'worker', runId: 'r1', rootRunId: 'r0', timeoutMs: 60_000 });
    assert.ok(kid.ok);
    const revoked = s.revoke(root.value.record.id, 'operator');
    assert.ok(revoked.ok);
    assert.deepEqual(revoked.value.map((r) => r.runId), ['r0', 'r1']);
    assert.ok(!s.verify(kid.value.token, 'r1').ok, 'the child\'s bearer is refused');
    assert.equal(s.byRunId('r1')?.revoked?.by, 'operator');
  }));

test('watchRevocations: the periodic scan reads no lease while the directory is unchanged, and reads them when another process revoked', () =>
  withStore(async (s, { dir, ledger, clock }) => {
    const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000 });
    assert.ok(root.ok);
    // The directory's last change more than the coarse clock's margin ago.
    const old = new Date(Date.now() - 10_000);
    fs.utimesSync(dir, old, old);
    const heard: string[] = [];
    s.onRevoked((recs, by) => heard.push(...recs.map((r) => `${r.runId}:${by}`)));
    const timers = new ManualTimers();
    const stop = s.watchRevocations(50, timers);
    const reads: string[] = [];
    const real = fs.readFileSync;
    (fs as { readFileSync: unknown }).readFileSync = (...a: Parameters<typeof fs.readFileSync>) => (String(a[0]).startsWith(dir) && reads.push(String(a[0])), real(...a));
    try {
      for (let i = 0; i < 3; i++) timers.fire();
      assert.deepEqual(reads, [], 'an unchanged directory: nothing read');
      const cli = new LeaseStore({ dir, ledger, now: () => clock.t });
      assert.ok(cli.revoke(root.value.record.id, 'operator').ok);
      timers.fire();
      assert.ok(reads.length > 0, 'a changed directory is read');
      assert.deepEqual(heard, ['r0:operator']);
    } finally {
      (fs as { readFileSync: unknown }).readFileSync = real;
      stop();
    }
  }));
