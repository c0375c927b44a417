/**
 * [INV-1] The one pre-check of a spawn (runs/intake.ts checkSpawn): the same refusals whether
 * a face asks first (`check`) or spawns, and nothing is created by either refusal.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { BrigError, err, ok } from '../../../src/util/errors.js';
import { createSupervisor } from '../../../src/runs/supervisor.js';
import { FakeJailDriver } from '../../helpers/fakes/fake-jail.js';
import { MemoryLeases, NullBroker } from '../../helpers/fakes/memory-leases.js';

class PolicyLeases extends MemoryLeases {
  checkProfile(name: string) {
    return ['root', 'worker'].includes(name) ? ok(undefined) : err(new BrigError('invalid_input', `no profile "${name}"`, { hint: 'Did you mean "worker"?' }));
  }
}

test('[INV-1] check answers the request as it would be admitted, and the refusal a spawn would give — creating nothing', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-check-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const jail = new FakeJailDriver();
  const sup = createSupervisor({ jail, leases: new PolicyLeases(), broker: new NullBroker(), ledger: new MemoryLedger(), paths: { runs: path.join(home, 'runs'), brokers: path.join(home, 'brokers') } });
  await sup.start();
  t.after(() => sup.close());
  const c = await sup.check({ task: 'x', kind: 'command', argv: ['true'], profile: 'worker' });
  assert.ok(c.ok);
  assert.deepEqual([c.value.agent, c.value.async, c.value.artifact_refs, c.value.include_parent_history], ['default', false, [], 'none'], 'defaults filled as intake fills them');
  for (const bad of [{ task: 'x', kind: 'command' as const, argv: ['true'], profile: 'wroker' }, { task: '', kind: 'command' as const, argv: ['true'] }, { task: 'x', kind: 'command' as const }]) {
    const asked = await sup.check(bad);
    const spawned = await sup.spawn(bad);
    assert.ok(!asked.ok && !spawned.ok);
    assert.deepEqual([spawned.error.code, spawned.error.message], [asked.error.code, asked.error.message], 'check and spawn refuse alike');
  }
  assert.equal(jail.created.length, 0, 'no jail');
  assert.deepEqual(await sup.list(), [], 'no run');
});
