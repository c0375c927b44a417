import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Clock, SupervisorHooks } from '../../../src/runs/ports.js';
import { createSupervisor, type SupervisorCore } from '../../../src/runs/supervisor.js';
import type { SupervisorSettings } from '../../../src/runs/types.js';
import { RunStore } from '../../../src/runs/run-store.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { FakeJailDriver } from '../../helpers/fakes/fake-jail.js';
import { MemoryLeases, NullBroker } from '../../helpers/fakes/memory-leases.js';
import { tempDir } from '../../helpers/temp-dir.js';

export const SCRIPT = 'export default async function (brig) { return 1 }';

export async function setupSup(
  o: { settings?: Partial<SupervisorSettings>; hooks?: SupervisorHooks; clock?: Clock; home?: string; jail?: FakeJailDriver; leases?: MemoryLeases; ledger?: MemoryLedger } = {},
) {
  const home = o.home ?? tempDir('brig-sup-');
  const jail = o.jail ?? new FakeJailDriver();
  const leases = o.leases ?? new MemoryLeases();
  const ledger = o.ledger ?? new MemoryLedger();
  const sup = createSupervisor({
    jail, leases, broker: new NullBroker(), ledger, tickMs: 10,
    paths: { runs: path.join(home, 'runs'), brokers: path.join(home, 'brokers') },
    settings: { progressIntervalMs: 5, ...(o.settings ?? {}) },
    ...(o.hooks ? { hooks: o.hooks } : {}),
    ...(o.clock ? { clock: o.clock } : {}),
  });
  const report = await sup.start();
  // The run records on disk, read as any other process would.
  const store = new RunStore(path.join(home, 'runs'));
  return { sup, jail, leases, ledger, home, report, store };
}

export async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`never happened: ${what}`);
}
