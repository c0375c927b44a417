import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decideAdmission } from '../../../src/runs/admission.js';
import { AdmissionSwitch, readAdmission } from '../../../src/runs/admission-pause.js';
import { healthActions } from '../../../src/runs/health.js';
import { createRunRecord } from '../../../src/runs/record.js';
import { createSupervisor } from '../../../src/runs/supervisor.js';
import { DEFAULT_SETTINGS, type RunRecord, type RunStatus, type SupervisorSettings } from '../../../src/runs/types.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { FakeJailDriver } from '../../helpers/fakes/fake-jail.js';
import { MemoryLeases, NullBroker } from '../../helpers/fakes/memory-leases.js';
import { tempDir } from '../../helpers/temp-dir.js';

const T0 = new Date('2026-01-01T00:00:00Z');
const SCRIPT = 'export default async function (brig) { return 1 }';
let seq = 0;
function run(p: Partial<RunRecord> & { status?: RunStatus } = {}): RunRecord {
  const id = `r-pause${String(seq++).padStart(6, '0')}`;
  const base = createRunRecord({
    id, parent: null, callerId: 'operator', agent: 'default', kind: 'script', label: null, task: `task ${id}`,
    requestHash: `h-${id}`, now: T0, timeoutMs: 1000, maxSteps: 10, async: true, expectedOutputs: [], resumeOf: null,
  });
  return { ...base, ...p };
}
const req = (p: Partial<Parameters<typeof decideAdmission>[1]> = {}) => ({
  depth: 1, parentRunId: null, rootRunId: null, callerId: 'operator', agent: 'default', requestHash: 'h-new', ...p,
});
const PAUSED = { since: '2026-01-01T00:00:00.000Z' };

test('admission paused: a spawn with every slot free is queued, not admitted; open, the same spawn is admitted', () => {
  assert.deepEqual(decideAdmission([], req(), DEFAULT_SETTINGS, new Set(), PAUSED), { kind: 'queue', position: 1 });
  assert.deepEqual(decideAdmission([], req(), DEFAULT_SETTINGS, new Set(), null), { kind: 'admit' });
});

test('admission paused: a full queue refuses admission_paused (not queue_full) with the limit, the count and since when', () => {
  const s = { ...DEFAULT_SETTINGS, maxQueued: 2 };
  const queued = [run({ status: 'queued' }), run({ status: 'queued' })];
  const d = decideAdmission(queued, req(), s, new Set(), PAUSED);
  assert.equal(d.kind, 'refuse');
  if (d.kind !== 'refuse') return;
  assert.equal(d.error.code, 'admission_paused');
  assert.deepEqual(d.error.data, { limit: 2, current: 2, pausedSince: PAUSED.since });
  assert.match(d.error.hint, /brig admission resume/);
  // One below the bound still queues, behind the others.
  assert.deepEqual(decideAdmission(queued.slice(1), req(), s, new Set(), PAUSED), { kind: 'queue', position: 2 });
  // Open, the same full queue is the load's: queue_full.
  const open = decideAdmission([...queued, run({ status: 'running' })], req(), { ...s, maxConcurrent: 1 }, new Set(), null);
  assert.equal(open.kind === 'refuse' && open.error.code, 'queue_full');
});

test('admission paused: every other limit and the duplicate check hold as when open', () => {
  const depth = decideAdmission([], req({ depth: DEFAULT_SETTINGS.maxSpawnDepth + 1 }), DEFAULT_SETTINGS, new Set(), PAUSED);
  assert.equal(depth.kind === 'refuse' && depth.error.code, 'depth_exceeded');
  const r = run({ status: 'queued' });
  assert.deepEqual(decideAdmission([r], req({ requestHash: r.requestHash! }), DEFAULT_SETTINGS, new Set(), PAUSED), { kind: 'duplicate', runId: r.id });
});

test('admission paused: a queued run does not time out in the queue (the wait is the operator\'s); open, it does', () => {
  const s = { stuckKillThresholdMs: 60_000, ghostGraceMs: 1000, queueTimeoutMs: 100 };
  const q = run({ status: 'queued' });
  const later = new Date(T0.getTime() + 10_000);
  assert.deepEqual(healthActions([q], later, s, [q], true), []);
  assert.deepEqual(healthActions([q], later, s, [q], false).map((a) => a.code), ['queue_timeout']);
});

test('the admission switch: kept on disk (0600), read again by the next switch, a repeat neither moves `since` nor ledgers twice; the reason only as its sha256', () => {
  const dir = tempDir('brig-adm-');
  const file = path.join(dir, 'admission.json');
  const ledger = new MemoryLedger();
  let now = T0;
  const clock = { now: () => now };
  const sw = new AdmissionSwitch(file, ledger, clock);
  assert.equal(sw.paused, false);
  assert.equal(sw.set(true, { by: 'alice', reason: 'engine upgrade' }, 3), true);
  now = new Date(T0.getTime() + 5000);
  assert.equal(sw.set(true, { by: 'bob' }, 3), false);
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  const again = new AdmissionSwitch(file, new MemoryLedger(), clock);
  assert.deepEqual(again.state, { paused: true, since: T0.toISOString(), by: 'alice', reasonHash: createHash('sha256').update('engine upgrade').digest('hex') });
  assert.doesNotMatch(fs.readFileSync(file, 'utf8'), /engine upgrade/);
  assert.deepEqual(ledger.events, [{ type: 'admission.paused', by: 'alice', reasonHash: again.state.reasonHash, queued: 3 }]);
  assert.equal(again.set(false, {}, 0), true);
  assert.deepEqual(readAdmission(file), { paused: false, since: now.toISOString(), by: 'operator', reasonHash: null });
});

test('the admission switch: a file that is not what brig writes refuses the start (state_corrupt, naming the file); none is open', () => {
  const dir = tempDir('brig-adm-');
  const file = path.join(dir, 'admission.json');
  assert.equal(readAdmission(file).paused, false);
  for (const text of ['{"paused": "yes"}', 'not json', '{"paused": true, "since": null, "by": null, "reasonHash": null, "extra": 1}']) {
    fs.writeFileSync(file, text);
    assert.throws(() => new AdmissionSwitch(file, new MemoryLedger(), { now: () => T0 }), (e: Error & { code?: string }) => e.code === 'state_corrupt' && e.message.includes(file));
  }
});

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`never happened: ${what}`);
}

async function supervisor(home: string, o: { reconcile?: boolean; settings?: Partial<SupervisorSettings> } = {}) {
  const jail = new FakeJailDriver();
  const ledger = new MemoryLedger();
  const sup = createSupervisor({
    jail, leases: new MemoryLeases(), broker: new NullBroker(), ledger, tickMs: 10,
    paths: { runs: path.join(home, 'runs'), brokers: path.join(home, 'brokers'), admission: path.join(home, 'admission.json') },
    settings: { progressIntervalMs: 5, queueTimeoutMs: 50, ...(o.settings ?? {}) },
    ...(o.reconcile === false ? { reconcile: false } : {}),
  });
  await sup.start();
  return { sup, jail, ledger };
}

test('the supervisor paused: a spawn waits queued past the queue timeout with no jail made; resumed, the queue starts in order and each run completes', async () => {
  const home = tempDir('brig-adm-');
  const { sup, jail, ledger } = await supervisor(home, { settings: { maxConcurrent: 1, queueTimeoutMs: 400 } });
  try {
    assert.equal(sup.admission.pause({ by: 'alice' }).paused, true);
    const a = await sup.spawn({ task: 'first', script: SCRIPT, async: true });
    const b = await sup.spawn({ task: 'second', script: SCRIPT, async: true });
    assert.ok(a.ok && b.ok);
    await new Promise((r) => setTimeout(r, 600)); // past the queue timeout, many ticks
    assert.deepEqual([sup.peek(a.value.id)?.status, sup.peek(b.value.id)?.status], ['queued', 'queued']);
    assert.equal(jail.created.length, 0);
    assert.equal(sup.admission.status().queued, 2);
    const resumed = sup.admission.resume({ by: 'bob' });
    assert.deepEqual([resumed.paused, resumed.by], [false, 'bob']);
    // maxConcurrent 1: the first queued starts, the second waits for its slot (its queue clock
    // started again at the resume, so it does not time out for the wait while paused).
    await until(() => sup.peek(a.value.id)?.status === 'running', 'the first queued run running');
    assert.equal(sup.peek(b.value.id)?.status, 'queued');
    jail.jails.get(a.value.id)!.exit(0);
    const wa = await sup.wait(a.value.id);
    await until(() => sup.peek(b.value.id)?.status === 'running', 'the second queued run running');
    jail.jails.get(b.value.id)!.exit(0);
    const wb = await sup.wait(b.value.id);
    assert.ok(wa.ok && wb.ok);
    assert.deepEqual([wa.value.endReason, wb.value.endReason], ['completed', 'completed']);
        assert.deepEqual(ledger.events.filter((e) => e.type.startsWith('admission.')).map((e) => [e.type, e.by, e.queued]), [['admission.paused', 'alice', 0], ['admission.resumed', 'bob', 2]]);
  } finally {
    await sup.close();
  }
});

test('a supervisor that does not own the home (reconcile false) refuses a spawn while paused at once: it keeps no queue past itself', async () => {
  const home = tempDir('brig-adm-');
  const owner = await supervisor(home);
  owner.sup.admission.pause({});
  await owner.sup.close();
  const { sup, jail } = await supervisor(home, { reconcile: false });
  try {
    assert.equal(sup.admission.status().paused, true, 'the state is read from the home');
    const r = await sup.spawn({ task: 'one-shot', script: SCRIPT, async: true });
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.equal(r.error.code, 'admission_paused');
      assert.match(r.error.hint, /brig serve/);
    }
    assert.equal(jail.created.length, 0);
  } finally {
    await sup.close();
  }
});
