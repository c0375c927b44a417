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

/** 4000 quote-heavy lines (~330 KB): JSON escaping grows every slice of it. */
const BIG_WRITER = `import { writeFileSync } from 'node:fs';
export default async function () {
  const rows = [];
  for (let i = 0; i < 4000; i++) rows.push(JSON.stringify({ i, q: '"'.repeat(40), pad: 'p'.repeat(20) }));
  writeFileSync('/workspace/out/big.jsonl', rows.join('\\n') + '\\n');
  return { wrote: rows.length };
}`;

/** Spawns BIG_WRITER and hands back its ref id: the grandparent slices it. */
const MIDDLE = `export default async function (brig) {
  const c = await brig.spawn({ task: 'write big', script: ${JSON.stringify(BIG_WRITER)} });
  return { ref: c.refs.find((r) => r.path === 'out/big.jsonl').ref, run: c.runId };
}`;

const GRANDPARENT = `export default async function (brig) {
  const m = await brig.spawn({ task: 'delegate', script: ${JSON.stringify(MIDDLE)}, caps: ['spawn'] });
  if (!m.result) throw new Error('the middle run ended ' + m.endReason + ' without a result: ' + JSON.stringify(m.error));
  const h = brig.ref(m.result.ref);
  const size = (x) => Buffer.byteLength(JSON.stringify(x));
  const all = await h.read({ offset: 0, length: 1048576 });
  const lines = await h.read({ line: 1, lines: 10000 });
  const rows = await h.sql('SELECT * FROM ref', { maxRows: 10000 });
  const count = await h.sql('SELECT count(*) FROM ref');
  const grep = await h.grep('pad', { maxMatches: 10000 });
  const listed = await brig.refs(m.result.run);
  return {
    count: count.rows, listed: listed.map((r) => r.path).sort(),
    all: { size: size(all), bytes: Buffer.byteLength(all.text), more: all.more, note: all.note ?? null },
    lines: { size: size(lines), returned: lines.returned, more: lines.more },
    rows: { size: size(rows), returned: rows.returned, more: rows.more, first: rows.rows[0] },
    grep: { size: size(grep), returned: grep.returned, more: grep.more },
  };
}`;

/** The child chooses only the query: the coordinator's lockdown still applies. */
const HOSTILE = `export default async function (brig) {
  const c = await brig.spawn({ task: 'write data', script: ${JSON.stringify(WRITER)} });
  const h = c.refs.find((r) => r.path === 'out/data.jsonl');
  const out = {};
  const tries = {
    readText: () => h.sql("SELECT * FROM read_text('/etc/passwd')"),
    replacementScan: () => h.sql("SELECT * FROM '/etc/passwd'"),
    twoStatements: () => h.sql('SELECT 1; SELECT 2'),
    attach: () => h.sql("ATTACH '/tmp/x.db' AS x"),
    jqEnv: () => h.jq('$ENV'),
    jqInput: () => h.jq('input_filename'),
  };
  for (const [k, fn] of Object.entries(tries)) {
    try { out[k] = { ok: await fn() }; } catch (e) { out[k] = { code: e.code, message: e.message }; }
  }
  return out;
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
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

// req: lease:enforced
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
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

// req: slice:descendants-only
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
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

// req: envelope:bounded
test('[INV-3] a grandparent slices its grandchild\'s ref; every reply stays under the 48 KiB cap and says how much more there was', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'two levels down', script: GRANDPARENT, caps: ['spawn', 'refs.read'] });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', r.value.stderrTail);
    const v = r.value.result as Record<string, any>;
    assert.deepEqual(v.count, [[4000]]);
    assert.ok(v.listed.includes('out/big.jsonl'));
    for (const k of ['all', 'lines', 'rows', 'grep']) assert.ok(v[k].size <= 48 * 1024, `${k}: ${v[k].size} bytes`);
    assert.ok(v.all.bytes <= 32 * 1024 && v.all.bytes > 0 && v.all.more > 0, JSON.stringify(v.all));
    assert.ok(v.lines.returned > 0 && v.lines.returned + v.lines.more === 4000, JSON.stringify(v.lines));
    assert.ok(v.rows.returned > 0 && v.rows.returned <= 200 && v.rows.returned + v.rows.more === 4000, JSON.stringify(v.rows));
    assert.deepEqual(v.rows.first, [0, '"'.repeat(40), 'p'.repeat(20)]);
    assert.ok(v.grep.returned > 0 && v.grep.returned <= 100 && v.grep.more > 0, JSON.stringify(v.grep));
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

// req: slice:select-only slice:tools-empty-env
test('[INV-5] a child\'s hostile sql/jq through the broker meets the same lockdown: refused, no host file or env leaks', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'try to escape', script: HOSTILE, caps: ['spawn', 'refs.read'] });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', r.value.stderrTail);
    const v = r.value.result as Record<string, { ok?: any; code?: string; message?: string }>;
    for (const k of ['readText', 'replacementScan', 'twoStatements', 'attach']) {
      assert.ok(v[k]!.code === 'query_refused' || v[k]!.code === 'query_failed', `${k}: ${JSON.stringify(v[k])}`);
    }
    assert.equal(v.twoStatements!.code, 'query_refused');
    // jq runs with an empty environment and reads stdin: nothing of the host shows.
    const lines = (x: { ok?: any; code?: string }) => (x.ok ? (x.ok.text as string).split('\n').filter(Boolean) : []);
    assert.ok(v.jqEnv!.code !== undefined || lines(v.jqEnv!).every((l) => l === '{}'), JSON.stringify(v.jqEnv).slice(0, 300));
    assert.ok(v.jqInput!.code !== undefined || lines(v.jqInput!).every((l) => l === 'null' || l === '"<stdin>"'), JSON.stringify(v.jqInput).slice(0, 300));
    const text = JSON.stringify(v);
    assert.ok(!text.includes('root:x:0:0') && !text.includes(home) && !text.includes('/results/'), text.slice(0, 500));
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
