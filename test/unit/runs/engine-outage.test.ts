/**
 * The supervisor's side of an engine outage, over the fakes (the real engine behind a proxy:
 * test/integration/reliability/engine-outage.test.ts). The fake driver says whether its
 * engine answers (`engineAnswers`) and its jails fail or hang the way a refused or frozen
 * engine makes them: a kill is answered once recorded when the engine is silent; stopping and
 * collecting wait for the engine and the end carries what the child wrote; a failed release
 * is retried while the supervisor lives (ledgered once failed, once retried); a drain with a
 * silent engine ends within its window, the kill left pending for the next start.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BrigError } from '../../../src/util/errors.js';
import { createSupervisor, type SupervisorCore } from '../../../src/runs/supervisor.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { FakeJailDriver, type FakeJail } from '../../helpers/fakes/fake-jail.js';
import { MemoryLeases, NullBroker } from '../../helpers/fakes/memory-leases.js';

/** A fake engine that can go away: `down` makes its ping fail and its jails' calls refused. */
class BlinkingDriver extends FakeJailDriver {
  down = false;
  async engineAnswers(): Promise<boolean> {
    return !this.down;
  }
}

const refused = () => new BrigError('engine_unavailable', 'the Docker engine does not answer: connect ECONNREFUSED');

async function setup(t: { after(fn: () => Promise<void>): void }, jail = new BlinkingDriver()) {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-outage-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const ledger = new MemoryLedger();
  const sup = createSupervisor({ jail, leases: new MemoryLeases(), broker: new NullBroker(), ledger, tickMs: 10, paths: { runs: path.join(home, 'runs'), brokers: path.join(home, 'brokers') } });
  await sup.start();
  return { sup, jail, ledger, home };
}

async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`never happened: ${what}`);
}

async function running(sup: SupervisorCore, jail: FakeJailDriver): Promise<{ id: string; j: FakeJail }> {
  const r = await sup.spawn({ task: 'x', kind: 'command', argv: ['sleep', '60'], async: true });
  assert.ok(r.ok);
  await until(() => sup.peek(r.value.id)?.status === 'running', 'running');
  const j = jail.jails.get(r.value.id)!;
  j.outFiles = { 'kept.txt': 'kept' };
  return { id: r.value.id, j };
}

/** The jail's kill and collect are refused while the engine is down, as DockerJail's are. */
function refusedWhileDown(j: FakeJail, jail: BlinkingDriver): void {
  const kill = j.kill.bind(j);
  const collect = j.collect.bind(j);
  j.kill = async () => (jail.down ? Promise.reject(refused()) : kill());
  j.collect = async (...a) => (jail.down ? Promise.reject(refused()) : collect(...a));
}

// req: end:output-kept
test('[INV-8] a kill while the engine is down is answered once recorded; the child is stopped and collected once the engine is back', async (t) => {
  const { sup, jail, ledger } = await setup(t);
  const { id, j } = await running(sup, jail);
  refusedWhileDown(j, jail);
  jail.down = true;
  const k = await sup.kill(id, { confirm: true });
  assert.ok(k.ok);
  assert.deepEqual([k.value.status, k.value.pendingEnd?.reason, k.value.pendingEnd?.killedBy], ['materializing', 'killed', 'operator'], 'answered as recorded, not ended');
  assert.equal(j.killed, false, 'nothing reached the engine');
  jail.down = false;
  const w = await sup.wait(id);
  assert.ok(w.ok);
  assert.deepEqual([w.value.endReason, w.value.killedBy, w.value.partial, w.value.error], ['killed', 'operator', true, null]);
  assert.deepEqual(w.value.outputs, [{ path: 'kept.txt', bytes: 4 }]);
  await sup.idle(); // the release follows the envelope (issue 26)
  assert.ok(j.killed && j.destroyed);
  assert.deepEqual(ledger.events.filter((e) => e.type === 'run.release_failed').map((e) => [e.what, e.code]), [['stop', 'engine_unavailable']], 'the first refusal is ledgered, not each try');
  assert.deepEqual(ledger.events.filter((e) => e.type === 'run.release_retried').map((e) => e.what), ['stop']);
  await sup.close();
});

test('a kill with an engine that answers waits for the end, as before: the answer is the ended run', async (t) => {
  const { sup, jail } = await setup(t);
  const { id } = await running(sup, jail);
  const k = await sup.kill(id, { confirm: true });
  assert.ok(k.ok);
  assert.deepEqual([k.value.status, k.value.endReason], ['ended', 'killed']);
  await sup.close();
});

// req: end:released
test('[INV-8] a release step that failed is retried while the supervisor lives; the record keeps unreleased until it succeeds', async (t) => {
  const { sup, jail, ledger, home } = await setup(t);
  const { id, j } = await running(sup, jail);
  let tries = 0;
  const destroy = j.destroy.bind(j);
  j.destroy = async () => (++tries < 3 ? Promise.reject(refused()) : destroy());
  j.exit(0);
  const w = await sup.wait(id);
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'completed', 'the end does not wait for the release');
  assert.equal(w.value.unreleased, true);
  await until(() => j.destroyed, 'the destroy retried');
  const onDisk = async () => JSON.parse(await fs.readFile(path.join(home, 'runs', id, 'run.json'), 'utf8')) as { unreleased?: boolean };
  await until(async () => sup.peek(id)?.unreleased === undefined && (await onDisk()).unreleased === undefined, 'unreleased cleared, on disk too');
  assert.deepEqual(ledger.events.filter((e) => e.type === 'run.release_failed').map((e) => e.what), ['jail'], 'one line for the failure');
  assert.deepEqual(ledger.events.filter((e) => e.type === 'run.release_retried').map((e) => [e.what, e.attempts]), [['jail', 3]]);
  await sup.close();
});

test('a release retry stops with the supervisor: the next start finishes it (unreleased stays on the record)', async (t) => {
  const { sup, jail, home } = await setup(t);
  const { id, j } = await running(sup, jail);
  let tries = 0;
  j.destroy = async () => {
    tries++;
    throw refused();
  };
  j.exit(0);
  assert.ok((await sup.wait(id)).ok);
  await sup.close();
  const after = tries;
  await new Promise((r) => setTimeout(r, 1200));
  assert.equal(tries, after, 'no try after close');
  const onDisk = JSON.parse(await fs.readFile(path.join(home, 'runs', id, 'run.json'), 'utf8')) as { unreleased?: boolean };
  assert.equal(onDisk.unreleased, true);
});

// req: end:output-kept
test('[INV-8] a collection the engine cut is redone from nothing once it is back: the end carries the files, not engine_unavailable', async (t) => {
  const { sup, jail } = await setup(t);
  const { id, j } = await running(sup, jail);
  const collect = j.collect.bind(j);
  let tries = 0;
  j.collect = async (...a) => {
    if (++tries === 1) {
      await fs.mkdir(a[0], { recursive: true });
      await fs.writeFile(path.join(a[0], 'half'), 'x');
      throw refused();
    }
    return collect(...a);
  };
  j.exit(0);
  const w = await sup.wait(id);
  assert.ok(w.ok);
  assert.deepEqual([w.value.endReason, w.value.error, w.value.outputs], ['completed', null, [{ path: 'kept.txt', bytes: 4 }]]);
  assert.equal(tries, 2);
  await sup.close();
});

test('shutdown with a silent engine ends within its window: the kill is recorded pending and reported unfinished', async (t) => {
  const { sup, jail, ledger, home } = await setup(t);
  const { id, j } = await running(sup, jail);
  // A frozen engine: the kill never returns.
  j.kill = () => new Promise(() => {});
  jail.down = true;
  const rep = await sup.shutdown({ drainMs: 0 });
  assert.deepEqual(rep, { drained: [], killed: [], unfinished: [id], kept: [] });
  const onDisk = JSON.parse(await fs.readFile(path.join(home, 'runs', id, 'run.json'), 'utf8')) as { status: string; pendingEnd?: { reason: string; killedBy?: string } };
  assert.deepEqual([onDisk.status, onDisk.pendingEnd?.reason, onDisk.pendingEnd?.killedBy], ['materializing', 'killed', 'system']);
  assert.ok(ledger.events.some((e) => e.type === 'supervisor.shutdown' && e.unfinished === 1));
});
