import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fleetReport } from '../../../src/daemon/fleet.js';
import { FileLedger } from '../../../src/ledger/index.js';

test('fleet rolls the gate up from a real ledger: connections and bytes by rule, refusals by reason (also among all refusals as egress:<reason>), the window honoured, nothing of a host', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-fleet-egress-'));
  try {
    let now = new Date('2026-12-01T10:00:00Z');
    const l = new FileLedger({ dir, now: () => now });
    l.append({ type: 'egress.conn', runId: 'r-old', ruleId: 'pypi', host: 'pypi.org', bytesUp: 999, bytesDown: 999 });
    now = new Date('2026-12-03T10:00:00Z');
    l.append({ type: 'egress.conn', runId: 'r-1', ruleId: 'pypi', host: 'pypi.org', bytesUp: 100, bytesDown: 5000 });
    l.append({ type: 'egress.conn', runId: 'r-1', ruleId: 'pypi', host: 'files.pythonhosted.org', bytesUp: 50, bytesDown: 7000 });
    l.append({ type: 'egress.conn', runId: 'r-2', ruleId: 'gh', host: 'api.github.com', bytesUp: 10, bytesDown: 20 });
    l.append({ type: 'egress.deny', runId: 'r-1', reason: 'host_not_allowed', hostTail: 'evil.example', hostLen: 20, hostHash: 'abc' });
    l.append({ type: 'egress.deny', runId: 'r-2', reason: 'host_not_allowed', hostTail: 'x.example', hostLen: 9, hostHash: 'def' });
    l.append({ type: 'egress.deny', runId: 'r-2', reason: 'credential_leak', ruleId: 'gh', credential: 'gh' });
    l.append({ type: 'run.refused', code: 'capability_denied' });
    l.append({ type: 'egress.opened', runId: 'r-1', rules: ['pypi'] });
    await l.close();
    const f = await fleetReport({ list: async () => [], refs: { peek: async () => { throw new Error('no runs'); } }, ledgerDir: dir, now: () => new Date('2026-12-03T11:00:00Z') }, { sinceMinutes: 24 * 60 });
    assert.deepEqual(f.egress, {
      connections: 3,
      bytesUp: 160,
      bytesDown: 12020,
      byRule: { pypi: { connections: 2, bytesUp: 150, bytesDown: 12000 }, gh: { connections: 1, bytesUp: 10, bytesDown: 20 } },
      refusals: 3,
      refusalsByReason: { host_not_allowed: 2, credential_leak: 1 },
    });
    assert.equal(f.refusals.total, 4);
    assert.deepEqual(f.refusals.byKind, { egress: 3, spawn: 1 });
    assert.equal(f.refusals.byCode['egress:credential_leak'], 1);
    assert.ok(!JSON.stringify(f).includes('pypi.org') && !JSON.stringify(f).includes('evil'), 'rule ids and reasons only, never a host');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(`${dir}.anchor`, { force: true }); // the ledger's anchor sits beside its directory
  }
});
