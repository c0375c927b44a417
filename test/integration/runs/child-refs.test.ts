/**
 * A jailed parent drills into its own child's ResultRefs over the broker (real containers,
 * real DuckDB helper, real grep/jq): the SDK's handles slice with every verb; a lease without
 * `refs.read` is refused by the broker; a ref outside the caller's descendants (another
 * tree's, a sibling's) is answered like a missing one, and the refusal is in the ledger.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { brigPaths } from '../../../src/config/index.js';
import type { LedgerEvent } from '../../../src/ledger/index.js';
import { FsResultStore } from '../../../src/results/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, supervisorAt } from './fixture.js';

/** Writes 300 JSON lines to /workspace/out/data.jsonl. */
const WRITER = `import { writeFileSync } from 'node:fs';
export default async function () {
  const rows = [];
  for (let i = 0; i < 300; i++) rows.push(JSON.stringify({ i, kind: i % 3 === 0 ? 'fizz' : 'plain', name: 'item-' + i }));
  writeFileSync('/workspace/out/data.jsonl', rows.join('\\n') + '\\n');
  return { wrote: rows.length };
}`;

const SLICER = `export default async function (brig) {
  const c = await brig.spawn({ task: 'write data', script: ${JSON.stringify(WRITER)} });
  const h = c.refs.find((r) => r.path === 'out/data.jsonl');
  const sql = await h.sql('SELECT kind, count(*) AS n FROM ref GROUP BY kind ORDER BY kind');
  const grep = await h.grep('"item-42"', { maxMatches: 5 });
  const read = await h.read({ line: 11, lines: 2 });
  const bytes = await h.read({ offset: 0, length: 8 });
  const jq = await h.jq('select(.i == 7) | .name');
  const jp = await h.jsonpath('$.name');
  const listed = await brig.refs(c.runId);
  const again = await brig.ref(h.ref).sql('SELECT max(i) AS m FROM ref');
  return {
    child: c.runId, handle: h, listed: listed.map((r) => r.path).sort(),
    sql: sql.rows, grep: grep.text, grepReturned: grep.returned, read: read.text, bytes: bytes.text,
    jq: jq.text, jp: jp.rows.slice(0, 3), jpReturned: jp.returned, jpMore: jp.more, again: again.rows,
  };
}`;

const NO_CAP = `export default async function (brig) {
  const c = await brig.spawn({ task: 'write data', script: ${JSON.stringify(WRITER)} });
  const h = c.refs.find((r) => r.path === 'out/data.jsonl');
  const codes = {};
  for (const [name, fn] of [['read', () => h.read()], ['sql', () => h.sql('SELECT 1')], ['list', () => brig.refs(c.runId)]]) {
    try { await fn(); codes[name] = 'allowed'; } catch (e) { codes[name] = e.code; }
  }
  return { codes, handle: h ? h.ref : null };
}`;

/** Reads the ref id given in its task; reports the error code and message. */
const PROBE = `export default async function (brig) {
  try { await brig.ref(brig.task).sql('SELECT count(*) FROM ref'); return { code: 'allowed' }; }
  catch (e) { return { code: e.code, message: e.message }; }
}`;

const OUTSIDER = (foreign: { ref: string; run: string }) => `export default async function (brig) {
  const tryIt = async (fn) => { try { await fn(); return { code: 'allowed' }; } catch (e) { return { code: e.code, message: e.message }; } };
  const other = await tryIt(() => brig.ref(${JSON.stringify(foreign.ref)}).read());
  const otherList = await tryIt(() => brig.refs(${JSON.stringify(foreign.run)}));
  const missing = await tryIt(() => brig.ref('ref_aaaaaaaaaaaaaaaaaaaaaaaaaa').read());
  const first = await brig.spawn({ task: 'write data', script: ${JSON.stringify(WRITER)} });
  const ref = first.refs.find((r) => r.path === 'out/data.jsonl').ref;
  const sibling = await brig.spawn({ task: ref, script: ${JSON.stringify(PROBE)}, caps: ['refs.read'] });
  return { other, otherList, missing, sibling: sibling.result, siblingRun: sibling.runId, ref };
}`;

function ledgerEvents(home: string): LedgerEvent[] {
  const dir = brigPaths(home).ledger;
  return fs
    .readdirSync(dir)
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean))
    .map((l) => JSON.parse(l) as LedgerEvent);
}

test('[INV-5] a parent with refs.read slices its child\'s ref through the broker: sql, grep, read, jq, jsonpath', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'drill into my child', script: SLICER, caps: ['spawn', 'refs.read'] });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', r.value.stderrTail);
    const v = r.value.result as Record<string, any>;
    assert.deepEqual(v.handle, { ref: v.handle.ref, path: 'out/data.jsonl', kind: 'jsonl', bytes: v.handle.bytes, rows: 300 });
    assert.match(v.handle.ref, /^ref_[a-z2-7]{26}$/);
    assert.ok(v.listed.includes('out/data.jsonl') && v.listed.includes('result.json'), v.listed.join(','));
    assert.deepEqual(v.sql, [['fizz', 100], ['plain', 200]]);
    assert.equal(v.grepReturned, 1);
    assert.equal(v.grep, '43:{"i":42,"kind":"fizz","name":"item-42"}\n');
    assert.equal(v.read, '{"i":10,"kind":"plain","name":"item-10"}\n{"i":11,"kind":"plain","name":"item-11"}\n');
    assert.equal(v.bytes, '{"i":0,"');
    assert.equal(v.jq, '"item-7"\n');
    assert.deepEqual(v.jp, [['item-0'], ['item-1'], ['item-2']]);
    assert.equal(v.jpReturned + v.jpMore, 300);
    assert.deepEqual(v.again, [[299]]);
    assert.ok(!JSON.stringify(v).includes(home), 'no host path reaches the child');
    const child = await c.supervisor.get(v.child);
    assert.equal(child!.parentRunId, r.value.id);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home), []);
});

test('[INV-1] a parent without refs.read is refused from inside the jail (capability_denied), and the refusal is in the ledger', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'no slicing for me', script: NO_CAP, caps: ['spawn'] });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', r.value.stderrTail);
    const v = r.value.result as { codes: Record<string, string>; handle: string | null };
    assert.match(v.handle ?? '', /^ref_/, 'the summary still names the child\'s refs');
    assert.deepEqual(v.codes, { read: 'capability_denied', sql: 'capability_denied', list: 'capability_denied' });
    await c.ledger.flush();
    const denied = ledgerEvents(home).filter((e) => e.type === 'broker.denied' && e.runId === r.value.id && e.code === 'capability_denied');
    assert.deepEqual(denied.map((e) => e.method).sort(), ['refs.list', 'refs.read', 'refs.sql']);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home), []);
});

test('[INV-5] a run cannot slice refs outside its descendants (another tree, a sibling): answered like a missing ref, ledgered', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const a = await c.supervisor.spawn({ task: 'another tree', script: WRITER });
    assert.ok(a.ok, a.ok ? '' : a.error.message);
    assert.equal(a.value.endReason, 'completed', a.value.stderrTail);
    const aRefs = await new FsResultStore({ dir: brigPaths(home).results }).list(a.value.id);
    const foreign = aRefs.find((x) => x.path === 'out/data.jsonl')!;
    assert.ok(foreign, 'the other tree has a data ref');

    const b = await c.supervisor.spawn({ task: 'outsider', script: OUTSIDER({ ref: foreign.ref, run: a.value.id }), caps: ['spawn', 'refs.read'] });
    assert.ok(b.ok, b.ok ? '' : b.error.message);
    assert.equal(b.value.endReason, 'completed', b.value.stderrTail);
    const v = b.value.result as Record<string, { code: string; message: string }> & { siblingRun: string; ref: string };
    assert.equal(v.other!.code, 'ref_not_found');
    assert.equal(v.otherList!.code, 'run_not_found');
    assert.equal(v.missing!.code, 'ref_not_found');
    // The same words as a ref that does not exist: existence outside the subtree is not disclosed.
    assert.equal(v.other!.message.replace(foreign.ref, 'X'), v.missing!.message.replace('ref_aaaaaaaaaaaaaaaaaaaaaaaaaa', 'X'));
    assert.equal(v.sibling!.code, 'ref_not_found', 'a sibling cannot slice its sibling\'s ref');

    await c.ledger.flush();
    const events = ledgerEvents(home).filter((e) => e.type === 'broker.denied' && e.reason === 'not_descendant');
    assert.ok(events.some((e) => e.runId === b.value.id && e.method === 'refs.read' && e.code === 'ref_not_found'));
    assert.ok(events.some((e) => e.runId === b.value.id && e.method === 'refs.list' && e.code === 'run_not_found'));
    assert.ok(events.some((e) => e.runId === v.siblingRun && e.method === 'refs.sql'));
    // A truly missing ref is not a cross-tree probe and is not logged as one; no ref id is logged.
    assert.equal(events.length, 3);
    assert.ok(!JSON.stringify(events).includes(foreign.ref) && !JSON.stringify(events).includes(v.ref));
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home), []);
});
