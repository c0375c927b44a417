import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { brigPaths } from '../../../src/config/index.js';
import { LeaseStore, loadPolicyFile, shippedPoliciesDir } from '../../../src/lease/index.js';
import { verifyLedger } from '../../../src/ledger/index.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { brig } from './cli-io.js';

test('brig lease list / show / revoke over a small tree', async () => {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-lcli-'));
  try {
    const pol = loadPolicyFile(path.join(shippedPoliciesDir(), 'default.yaml'));
    assert.ok(pol.ok);
    const s = new LeaseStore({ dir: brigPaths(home).leases, policy: pol.value, ledger: new MemoryLedger() });
    const root = s.issueRoot({ profile: 'coordinator', runId: 'r0', rootRunId: 'r0', timeoutMs: 600_000 });
    assert.ok(root.ok);
    const kid = s.issueChild({ parentLeaseId: root.value.record.id, request: { caps: ['llm', 'spawn'], posture: { network: 'none' } }, profile: 'worker', runId: 'r1', rootRunId: 'r0', timeoutMs: 60_000 });
    assert.ok(kid.ok);

    const list = await brig(home, 'lease', 'list', '--json');
    assert.equal(list.code, 0);
    const leases = JSON.parse(list.out).leases;
    assert.equal(leases.length, 2);
    assert.ok(leases.every((l: Record<string, unknown>) => !('tokenHash' in l) && l.state === 'live'));
    assert.match((await brig(home, 'lease', 'list')).out, /LEASE\s+RUN/);

    const show = await brig(home, 'lease', 'show', kid.value.record.id);
    assert.equal(show.code, 0);
    assert.match(show.out, /granted caps:\s+llm/);
    assert.match(show.out, /spawn: capability_denied/);
    assert.match(show.out, /posture requested: network=none/);
    assert.match(show.out, new RegExp(`lineage[\\s\\S]*${root.value.record.id}`));
    const shown = JSON.parse((await brig(home, 'lease', 'show', kid.value.record.id, '--json')).out);
    assert.deepEqual(shown.lineage.map((l: { id: string }) => l.id), [kid.value.record.id, root.value.record.id]);

    const missing = await brig(home, 'lease', 'show', 'ls_00000000000000000000');
    assert.equal(missing.code, 4);
    assert.match(missing.err, /lease_not_found/);

    const unconfirmed = await brig(home, 'lease', 'revoke', root.value.record.id);
    assert.equal(unconfirmed.code, 2, 'like kill, a revoke asks for --confirm');
    assert.match(unconfirmed.err, /pass --confirm/);
    assert.ok(s.verify(kid.value.token, 'r1').ok, 'nothing was revoked');
    const quiet = await brig(home, 'lease', 'list', '-q');
    assert.deepEqual(quiet.out.trim().split('\n').sort(), [kid.value.record.id, root.value.record.id].sort(), '-q: ids only');
    const rv = await brig(home, 'lease', 'revoke', root.value.record.id, '--confirm');
    assert.equal(rv.code, 0);
    assert.match(rv.out, /revoked 2 lease/);
    assert.ok(!s.verify(kid.value.token, 'r1').ok, 'the in-process store sees the CLI revoke');
    const again = await brig(home, 'lease', 'revoke', root.value.record.id, '--confirm');
    assert.equal(again.code, 0);
    assert.match(again.out, /was already revoked by operator at .*\nrevoked 0 lease/);
    const after = JSON.parse((await brig(home, 'lease', 'list', '--json')).out).leases;
    assert.ok(after.every((l: { state: string }) => l.state === 'revoked'));
    fs.writeFileSync(path.join(brigPaths(home).leases, `${kid.value.record.id}.json`), '{"id":');
    const damaged = await brig(home, 'lease', 'list');
    assert.equal(damaged.code, 0);
    assert.match(damaged.err, new RegExp(`warning: lease file ${kid.value.record.id}\\.json is not a valid record`));
    assert.deepEqual(JSON.parse((await brig(home, 'lease', 'list', '--json')).out).unreadable, [kid.value.record.id]);
    const v = verifyLedger(brigPaths(home).ledger);
    assert.ok(v.ok && v.lines === 4, 'two lease.revoked lines and two close lines');
  } finally {
    await fs.promises.rm(home, { recursive: true, force: true });
  }
});

test('brig policy check: shipped policies pass, a misspelled key fails naming file, line and nearest key', async () => {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-pcli-'));
  try {
    const good = await brig(home, 'policy', 'check');
    assert.equal(good.code, 0);
    assert.match(good.out, /profile coordinator/);
    const file = path.join(home, 'typo.yaml');
    fs.writeFileSync(file, fs.readFileSync(path.join(shippedPoliciesDir(), 'default.yaml'), 'utf8').replace('  denylist:', '  denylist:').replace(/^denylist:/m, 'denylsit:'));
    const bad = await brig(home, 'policy', 'check', file);
    assert.equal(bad.code, 2);
    assert.match(bad.err, new RegExp(`${file.replace(/[.]/g, '\\.')}:\\d+: unknown key "denylsit"`));
    assert.match(bad.err, /Did you mean "denylist"/);
    const json = JSON.parse((await brig(home, 'policy', 'check', file, '--json')).out);
    assert.equal(json.ok, false);
    const missing = await brig(home, 'policy', 'check', path.join(home, 'nope.yaml'));
    assert.equal(missing.code, 2);
    assert.match(missing.err, new RegExp(`policy ${path.join(home, 'nope.yaml').replace(/[.]/g, '\\.')}: INVALID`));
    assert.match(missing.err, /ENOENT[\s\S]*Check the path/);
  } finally {
    await fs.promises.rm(home, { recursive: true, force: true });
  }
});
