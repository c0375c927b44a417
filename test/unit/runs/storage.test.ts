import { test } from 'node:test';
import assert from 'node:assert/strict';
import { storageRefusal } from '../../../src/runs/admission.js';
import { createSupervisor } from '../../../src/runs/supervisor.js';
import { httpStatusOf } from '../../../src/util/errors.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { FakeJailDriver } from '../../helpers/fakes/fake-jail.js';
import { MemoryLeases, NullBroker } from '../../helpers/fakes/memory-leases.js';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SCRIPT, until } from './setup.js';
import { tempDir } from '../../helpers/temp-dir.js';

const MiB = 1024 * 1024;

test('storageRefusal: a writer holding what the disk refused, or free space below the reserve, refuses storage_full (HTTP 507); otherwise nothing', () => {
  assert.equal(storageRefusal({ freeBytes: 100 * MiB, held: [] }, 64 * MiB), undefined);
  assert.equal(storageRefusal({ held: [] }, 64 * MiB), undefined, 'unknown space: not refused on a guess');
  assert.equal(storageRefusal({ freeBytes: 1, held: [{ what: 'ledger line(s)', count: 0 }] }, 0), undefined);
  const low = storageRefusal({ freeBytes: 3 * MiB, held: [] }, 64 * MiB)!;
  assert.equal(low.code, 'storage_full');
  assert.equal(httpStatusOf(low.code), 507);
  assert.match(low.message, /3\.0 MiB free, below its reserve of 64\.0 MiB/);
  assert.deepEqual(low.data, { freeBytes: 3 * MiB, minFreeBytes: 64 * MiB });
  const held = storageRefusal({ freeBytes: 900 * MiB, held: [{ what: 'ledger line(s)', count: 12 }] }, 64 * MiB)!;
  assert.equal(held.code, 'storage_full');
  assert.match(held.message, /12 ledger line\(s\) wait in memory for space/);
  assert.match(low.hint ?? '', /Free space .*BRIG_HOME/);
});

test('a supervisor whose home is full refuses new runs storage_full, ledgered as any refusal; runs already live go on and end as usual', async () => {
  const home = tempDir('brig-sup-');
  const ledger = new MemoryLedger();
  const jail = new FakeJailDriver();
  let free = 500 * MiB;
  let heldLines = 0;
  const sup = createSupervisor({
    jail, leases: new MemoryLeases(), broker: new NullBroker(), ledger, tickMs: 10,
    paths: { runs: path.join(home, 'runs'), brokers: path.join(home, 'brokers') },
    settings: { progressIntervalMs: 5, minFreeBytes: 64 * MiB },
    storage: { space: () => ({ freeBytes: free, totalBytes: 1024 * MiB }), held: () => [{ what: 'ledger line(s)', count: heldLines }] },
  });
  await sup.start();
  try {
    const live = await sup.spawn({ task: 'before', script: SCRIPT, async: true });
    assert.ok(live.ok);
    await until(() => sup.peek(live.value.id)?.status === 'running', 'running');
    free = 10 * MiB;
    const low = await sup.spawn({ task: 'while low', script: SCRIPT, async: true });
    assert.equal(low.ok ? 'admitted' : low.error.code, 'storage_full');
    free = 500 * MiB;
    heldLines = 40;
    const held = await sup.spawn({ task: 'while held', script: SCRIPT, async: true });
    assert.equal(held.ok ? 'admitted' : held.error.code, 'storage_full');
    assert.equal(sup.peekAll().length, 1, 'nothing was admitted, nothing half made');
    assert.deepEqual(ledger.events.filter((e) => e.type === 'run.refused').map((e) => e.code), ['storage_full']);
    // The live run is untouched: it ends as it would have.
    for (const j of jail.jails.values()) j.exit(0);
    await until(() => sup.peek(live.value.id)?.endReason === 'completed', 'the live run completed');
    heldLines = 0;
    const after = await sup.spawn({ task: 'space is back', script: SCRIPT, async: true });
    assert.ok(after.ok, 'admitted again once the home has room');
    await until(() => sup.peek(after.value.id)?.status === 'running', 'the new run running');
    for (const j of jail.jails.values()) if (j.started) j.exit(0);
    await until(() => sup.peek(after.value.id)?.status === 'ended', 'the new run ended');
  } finally {
    await sup.close();
    await fs.rm(home, { recursive: true, force: true, maxRetries: 5 });
  }
});
