/**
 * Refusals decided inside the supervisor's handlers (not by the broker's own checks) reach the
 * ledger too: a real jailed child kills and steers another tree's live run, spawns with a host
 * path as an artifact, reads a ref that does not exist and one of another tree. Each lands as
 * a content-free `broker.denied` — once, never twice.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { brigPaths } from '../../../src/config/index.js';
import type { LedgerEvent } from '../../../src/ledger/index.js';
import { FsResultStore } from '../../../src/results/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, SILENT, supervisorAt, until } from '../runs/fixture.js';

const WRITER = `import { writeFileSync } from 'node:fs';
export default async function () { writeFileSync('/workspace/out/data.txt', 'other tree\\n'); return 1; }`;

const MISSING_REF = 'ref_aaaaaaaaaaaaaaaaaaaaaaaaaa';

const PROBER = (other: { run: string; ref: string }) => `export default async function (brig) {
  const tryIt = async (fn) => { try { await fn(); return 'allowed'; } catch (e) { return e.code; } };
  return {
    kill: await tryIt(() => brig.kill(${JSON.stringify(other.run)})),
    steer: await tryIt(() => brig.steer(${JSON.stringify(other.run)}, 'obey me')),
    artifact: await tryIt(() => brig.spawn({ task: 'take the host', script: 'export default async () => 1', artifact_refs: ['/etc/hostname'] })),
    missingRef: await tryIt(() => brig.ref(${JSON.stringify(MISSING_REF)}).read()),
    foreignRef: await tryIt(() => brig.ref(${JSON.stringify(other.ref)}).read()),
  };
}`;

function ledgerEvents(home: string): LedgerEvent[] {
  const dir = brigPaths(home).ledger;
  return fs
    .readdirSync(dir)
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean))
    .map((l) => JSON.parse(l) as LedgerEvent);
}

test('[INV-7] every refusal a handler decides for a real child reaches the ledger once: kill/steer of another tree, a host-path artifact, a missing and a foreign ref', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const w = await c.supervisor.spawn({ task: 'other tree, with a ref', script: WRITER });
    assert.ok(w.ok, w.ok ? '' : w.error.message);
    assert.equal(w.value.endReason, 'completed', w.value.stderrTail);
    const foreign = (await new FsResultStore({ dir: brigPaths(home).results }).list(w.value.id)).find((x) => x.path === 'out/data.txt')!;
    assert.ok(foreign);
    const other = await c.supervisor.spawn({ task: 'other tree, live', script: SILENT, async: true, timeout: 120_000 });
    assert.ok(other.ok, other.ok ? '' : other.error.message);
    await until(async () => (await c.supervisor.get(other.value.id))?.status === 'running', 'the other tree runs');

    const p = await c.supervisor.spawn({ task: 'probe', script: PROBER({ run: other.value.id, ref: foreign.ref }), caps: ['spawn', 'kill', 'steer', 'refs.read'] });
    assert.ok(p.ok, p.ok ? '' : p.error.message);
    assert.equal(p.value.endReason, 'completed', p.value.stderrTail);
    assert.deepEqual(p.value.result, { kill: 'run_not_found', steer: 'run_not_found', artifact: 'capability_denied', missingRef: 'ref_not_found', foreignRef: 'ref_not_found' });
    assert.equal((await c.supervisor.get(other.value.id))?.status, 'running', 'the other tree was not touched');
    assert.ok((await c.supervisor.kill(other.value.id, { confirm: true })).ok);

    await c.ledger.flush();
    const denied = ledgerEvents(home).filter((e) => e.type === 'broker.denied' && e.runId === p.value.id);
    const kinds = denied.map((e) => `${e.method}:${e.code}${e.reason ? `:${e.reason}` : ''}`).sort();
    assert.deepEqual(kinds, ['child.kill:run_not_found', 'child.steer:run_not_found', 'refs.read:ref_not_found', 'refs.read:ref_not_found:not_descendant', 'spawn:capability_denied']);
    assert.ok(denied.every((e) => e.leaseId === p.value.leaseId));
    // Content-free (INV-7): no ref id, run id of the target, task or message text.
    const text = JSON.stringify(denied);
    for (const s of [foreign.ref, MISSING_REF, other.value.id, 'obey me', '/etc/hostname']) assert.ok(!text.includes(s), s);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
