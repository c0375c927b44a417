import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/compose.js';
import { DockerJailDriver, ownerForHome } from '../../../src/jail/index.js';
import { LeaseStore } from '../../../src/lease/index.js';
import type { RunRecord } from '../../../src/runs/index.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';

const CHILD = `export default async function (brig) { for (;;) { await brig.progress('tick'); await new Promise((r) => setTimeout(r, 100)); } }`;
const PARENT = `export default async function (brig) { await brig.spawn({ task: 'loop', profile: 'worker', script: ${JSON.stringify(CHILD)} }); }`;

// req: end:one-reason
test('[INV-8] revoking a lease in the middle of a run ends that run and its descendants (killed)', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-rv-'));
  const c = await compose(loadConfig({ BRIG_HOME: home }), { reconcile: false });
  try {
    await c.supervisor.start();
    const r = await c.supervisor.spawn({ task: 'parent', profile: 'researcher', script: PARENT, async: true, timeout: 60_000 });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    let runs = await c.supervisor.list();
    for (let i = 0; i < 300 && !(runs.length === 2 && runs.every((x) => x.status === 'running')); i++) {
      await new Promise((res) => setTimeout(res, 100));
      runs = await c.supervisor.list();
    }
    assert.equal(runs.length, 2, 'a parent and its child are running');
    const root = runs.reduce((a, b) => (a.depth <= b.depth ? a : b));
    // Revoke as the CLI does: another LeaseStore over the same directory; the daemon side
    // hears it through watchRevocations().
    const stop = c.leases.watchRevocations(100);
    try {
      const cli = new LeaseStore({ dir: path.join(home, 'leases'), ledger: new MemoryLedger() });
      const rv = cli.revoke(root.leaseId!, 'operator');
      assert.ok(rv.ok);
      assert.deepEqual(new Set(rv.value.map((x) => x.runId)), new Set(runs.map((x) => x.id)));
      const ended: RunRecord[] = [];
      for (const x of runs) {
        const w = await c.supervisor.wait(x.id, { timeoutMs: 60_000 });
        assert.ok(w.ok);
        ended.push(w.value);
      }
      for (const e of ended) assert.deepEqual([e.status, e.endReason], ['ended', 'killed'], e.id);
      // The revoker is an operator: every run in the revoked subtree says so.
      for (const e of ended) assert.equal(e.killedBy, 'operator', e.id);
    } finally {
      stop();
    }
  } finally {
    await c.close().catch(() => {});
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    // The supervisor may still finish a background append after close: retry the removal.
    await fs.promises.rm(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
});
