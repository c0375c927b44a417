/**
 * [INV-8] The one door to a run's directory: every file brig keeps for a run is parsed when it
 * is read back, and one that is not what brig wrote is `state_corrupt` naming the run, the
 * file and the field — never cast into state; a failed release step is ledgered, not
 * swallowed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { RunStore } from '../../../src/runs/run-store.js';
import { createRunRecord } from '../../../src/runs/record.js';
import { createSupervisor } from '../../../src/runs/supervisor.js';
import type { BrigError } from '../../../src/util/errors.js';
import { FakeJailDriver } from '../../helpers/fakes/fake-jail.js';
import { MemoryLeases, NullBroker } from '../../helpers/fakes/memory-leases.js';

const record = (id: string) =>
  createRunRecord({ id, parent: null, callerId: 'operator', agent: 'default', kind: 'command', label: null, task: 't', requestHash: 'h', now: new Date(0), timeoutMs: 1000, maxSteps: 5, async: true, expectedOutputs: [], resumeOf: null });

async function store(t: { after(fn: () => Promise<void>): void }): Promise<RunStore> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-store-'));
  t.after(() => fs.rm(dir, { recursive: true, force: true }));
  return new RunStore(dir);
}

test('[INV-8] a record, a request and a packet read back parsed; each tampered file is state_corrupt naming its field', async (t) => {
  const s = await store(t);
  const rec = record('r-store0001');
  await s.save(rec);
  assert.deepEqual(await s.load(rec.id), rec);
  await s.writeJson(rec.id, 'request', { task: 't', agent: 'default', kind: 'command', argv: ['true'], artifact_refs: [], include_parent_history: 'none', expected_outputs: [], async: true });
  assert.deepEqual((await s.readRequest(rec.id))?.argv, ['true']);
  assert.equal(await s.readPacket(rec.id), null, 'no packet yet: none, not an error');

  const corrupt = async (p: Promise<unknown>) => (await p.then(() => assert.fail('read a bad file'), (e: BrigError) => e)) as BrigError;
  await fs.writeFile(s.file(rec.id, 'record'), JSON.stringify({ ...rec, status: 'sleeping' }));
  let e = await corrupt(s.load(rec.id));
  assert.equal(e.code, 'state_corrupt');
  assert.match(e.message, /run\.json of run r-store0001 .*status/);
  await fs.writeFile(s.file(rec.id, 'record'), '{"v":1, "id":');
  assert.equal((await corrupt(s.load(rec.id))).code, 'state_corrupt');
  // loadAll names the bad record instead of dropping it silently.
  await s.save(record('r-store0002'));
  const all = await s.loadAll();
  assert.deepEqual([all.records.map((r) => r.id), all.corrupt.map((x) => x.data.runId)], [['r-store0002'], ['r-store0001']]);

  await fs.writeFile(s.file(rec.id, 'request'), JSON.stringify({ task: 't', kind: 'command', argv: 'rm -rf /' }));
  e = await corrupt(s.readRequest(rec.id));
  assert.equal(e.code, 'state_corrupt');
  assert.match(e.message, /request\.json .*argv/);
  await fs.writeFile(s.file(rec.id, 'packet'), JSON.stringify({ v: 1, runId: rec.id, task: 't', lease: { id: 'l', caps: 'spawn' } }));
  assert.match((await corrupt(s.readPacket(rec.id))).message, /packet\.json .*lease/);
  await fs.writeFile(s.file(rec.id, 'agent'), JSON.stringify({ name: 'general', description: 'd', instructions: 'i', source: 'built-in', tools: ['rm_rf'] }));
  assert.match((await corrupt(s.readAgent(rec.id))).message, /agent\.json .*tools/);
});

test('[INV-8] a release step that fails is ledgered as run.release_failed (what, code), and the run still ends once', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-release-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const jail = new FakeJailDriver();
  const ledger = new MemoryLedger();
  const sup = createSupervisor({ jail, leases: new MemoryLeases(), broker: new NullBroker(), ledger, tickMs: 10, paths: { runs: path.join(home, 'runs'), brokers: path.join(home, 'brokers') } });
  await sup.start();
  const r = await sup.spawn({ task: 'x', kind: 'command', argv: ['true'], async: true });
  assert.ok(r.ok);
  for (let i = 0; i < 400 && sup.peek(r.value.id)?.status !== 'running'; i++) await new Promise((res) => setTimeout(res, 5));
  const j = jail.jails.get(r.value.id)!;
  j.destroy = async () => {
    throw Object.assign(new Error('engine gone'), { code: 'engine_unavailable' });
  };
  j.exit(0);
  const w = await sup.wait(r.value.id);
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'completed');
  await sup.idle(); // the release follows the envelope (issue 26)
  const failed = ledger.events.filter((e) => e.type === 'run.release_failed');
  assert.deepEqual(failed.map((e) => [e.runId, e.what, e.code]), [[r.value.id, 'jail', 'engine_unavailable']]);
  assert.equal(ledger.events.filter((e) => e.type === 'run.lifecycle_ended' && e.runId === r.value.id).length, 1);
  await sup.close();
});
