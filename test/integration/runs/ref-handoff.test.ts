/**
 * Hand-off between children, on real jails: a lead passes a ResultRef of its own child as an
 * artifact of a new child, and the new child reads it read-only at /artifacts/<name>, straight
 * from the result store (no copy through the lead). Refused: a ref outside the lead's subtree
 * (answered as a ref that does not exist), a lead without `artifacts.read` (capability_denied),
 * a host path named by a child. The operator may hand any live ref.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, supervisorAt } from './fixture.js';

const WRITER = `import { writeFileSync } from 'node:fs';
export default async function () {
  writeFileSync('/workspace/out/data.csv', 'city,pop\\nOslo,709000\\nBergen,291000\\n');
  return 'wrote data.csv';
}`;

/** Reads what it was handed; tries to change it and to add a file beside it. */
const READER = `import fs from 'node:fs';
export default async function () {
  const names = fs.readdirSync('/artifacts');
  const content = fs.readFileSync('/artifacts/data.csv', 'utf8');
  let write = 'written';
  try { fs.writeFileSync('/artifacts/data.csv', 'overwritten'); } catch (e) { write = e.code; }
  let create = 'created';
  try { fs.writeFileSync('/artifacts/new.txt', 'x'); } catch (e) { create = e.code; }
  let chmod = 'changed';
  try { fs.chmodSync('/artifacts/data.csv', 0o666); } catch (e) { chmod = e.code; }
  return { names, content, write, create, chmod };
}`;

/** The lead: spawns the writer, hands its data.csv ref to the reader; tries a foreign ref and a host path. */
const LEAD = (foreign: string) => `export default async function (brig) {
  const tryIt = async (req) => { try { const r = await brig.spawn(req); return { code: 'allowed', end: r.endReason, result: r.result }; } catch (e) { return { code: e.code, message: e.message }; } };
  const a = await brig.spawn({ task: 'write data', script: ${JSON.stringify(WRITER)} });
  const ref = a.refs.find((r) => r.path === 'out/data.csv').ref;
  const handed = await tryIt({ task: 'read data', script: ${JSON.stringify(READER)}, artifact_refs: [ref] });
  const foreign = await tryIt({ task: 'read data', script: ${JSON.stringify(READER)}, artifact_refs: [${JSON.stringify(foreign)}] });
  const host = await tryIt({ task: 'read data', script: ${JSON.stringify(READER)}, artifact_refs: ['/etc/passwd'] });
  return { ref, handed, foreign, host };
}`;

// req: lease:enforced jail:no-host-paths
test('[INV-1] [INV-2] a lead hands its child\'s ResultRef to a new child: mounted read-only at /artifacts from the store; a foreign ref, a host path, a lead without artifacts.read are refused', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    // A ref of another tree: the lead may not hand it.
    const other = await c.supervisor.spawn({ task: 'another tree', script: WRITER });
    assert.ok(other.ok);
    const otherRef = (await c.refs.list(other.value.id));
    assert.ok(otherRef.ok);
    const foreign = otherRef.value.find((r) => r.path === 'out/data.csv')!.ref;

    const r = await c.supervisor.spawn({ task: 'hand off', script: LEAD(foreign), caps: ['exec', 'spawn', 'refs.read', 'artifacts.read'], timeout: 180_000 });
    assert.ok(r.ok);
    assert.equal(r.value.endReason, 'completed', `${r.value.error?.message} ${r.value.stderrTail}`);
    const out = r.value.result as Record<string, any>;
    assert.equal(out.handed.code, 'allowed', JSON.stringify(out.handed));
    assert.equal(out.handed.end, 'completed');
    assert.deepEqual(out.handed.result.names, ['data.csv'], 'named after the ref\'s file, at /artifacts/data.csv');
    assert.equal(out.handed.result.content, 'city,pop\nOslo,709000\nBergen,291000\n', 'the bytes the writer produced, from the store');
    assert.notEqual(out.handed.result.write, 'written', 'never writable');
    assert.equal(out.handed.result.create, 'EROFS');
    assert.notEqual(out.handed.result.chmod, 'changed');
    assert.equal(out.foreign.code, 'ref_not_found', 'a ref outside its subtree reads as one that does not exist');
    assert.equal(out.host.code, 'capability_denied', 'a child never names a host path');
    // The stored ref is unchanged, and the reader's record says which ref it was handed.
    const kids = await c.supervisor.list({ parentRunId: r.value.id });
    const reader = kids.find((k) => k.endReason === 'completed' && (k.result as { names?: unknown } | null)?.names)!;
    const arts = JSON.parse(fs.readFileSync(path.join(home, 'runs', reader.id, 'artifacts.json'), 'utf8')) as { name: string; ref?: string; hostPath: string }[];
    assert.deepEqual(arts.map((a) => [a.name, a.ref]), [['data.csv', out.ref]]);
    const stored = await c.refs.read(out.ref, { offset: 0, length: 100 });
    assert.ok(stored.ok);
    assert.equal(stored.value.text, 'city,pop\nOslo,709000\nBergen,291000\n');

    // A lead whose lease lacks artifacts.read cannot hand refs (its children could not mount them either).
    const narrow = await c.supervisor.spawn({ task: 'hand off, narrowly', script: LEAD(foreign), caps: ['exec', 'spawn', 'refs.read'], timeout: 180_000 });
    assert.ok(narrow.ok);
    const n = narrow.value.result as Record<string, any>;
    assert.equal(n.handed.code, 'capability_denied');
    assert.match(n.handed.message, /artifacts\.read/);

    // The operator may hand any live ref (here the foreign one) to a child of its own.
    const op = await c.supervisor.spawn({ task: 'read data', script: READER, artifact_refs: [foreign] });
    assert.ok(op.ok);
    assert.equal(op.value.endReason, 'completed', op.value.stderrTail);
    assert.deepEqual((op.value.result as { names: string[] }).names, ['data.csv']);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
