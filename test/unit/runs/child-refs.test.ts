import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { FsResultStore } from '../../../src/results/index.js';
import { CHILD_REPLY_BYTES, ChildRefs, fitReply, isDescendant } from '../../../src/refs/index.js';
import type { RunRecord } from '../../../src/protocol/index.js';
import type { SliceOutput } from '../../../src/slice/index.js';
import type { BrigError } from '../../../src/util/errors.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';

const run = (path: string[]) => ({ id: path[path.length - 1]!, rootRunId: path[0]!, path });

// req: slice:descendants-only
test('[INV-5] isDescendant: children and grandchildren yes; itself, its parent, a sibling, another tree no', () => {
  assert.equal(isDescendant('r-p', 'r-root', run(['r-root', 'r-p', 'r-c'])), true);
  assert.equal(isDescendant('r-p', 'r-root', run(['r-root', 'r-p', 'r-c', 'r-g'])), true);
  assert.equal(isDescendant('r-root', 'r-root', run(['r-root', 'r-p', 'r-c'])), true);
  assert.equal(isDescendant('r-p', 'r-root', run(['r-root', 'r-p'])), false, 'not its own');
  assert.equal(isDescendant('r-p', 'r-root', run(['r-root'])), false, 'not its parent');
  assert.equal(isDescendant('r-p', 'r-root', run(['r-root', 'r-q'])), false, 'not a sibling');
  assert.equal(isDescendant('r-p', 'r-root', run(['r-root', 'r-q', 'r-x'])), false, "not a sibling's child");
  assert.equal(isDescendant('r-p', 'r-root', run(['r-other', 'r-y'])), false, 'not another tree');
  assert.equal(isDescendant('r-p', 'r-root', undefined), false, 'not an unknown run');
  // A record whose path does not end in its own id is inconsistent: refused.
  assert.equal(isDescendant('r-p', 'r-root', { id: 'r-c', rootRunId: 'r-root', path: ['r-root', 'r-p', 'r-z'] }), false);
  // Same path but claimed in another tree: refused.
  assert.equal(isDescendant('r-p', 'r-root', { id: 'r-c', rootRunId: 'r-other', path: ['r-root', 'r-p', 'r-c'] }), false);
});

test('[INV-5] isDescendant holds exactly when the caller is a strict ancestor on the path', () => {
  const id = fc.constantFrom('a', 'b', 'c', 'd', 'e');
  fc.assert(
    fc.property(fc.array(id, { minLength: 1, maxLength: 6 }), id, (p, caller) => {
      const target = { id: p[p.length - 1]!, rootRunId: p[0]!, path: p };
      assert.equal(isDescendant(caller, p[0]!, target), caller !== target.id && p.slice(0, -1).includes(caller));
    }),
  );
});

const base = (o: Partial<SliceOutput>): SliceOutput => ({ ref: 'ref_x', verb: 'sql', returned: 0, unit: 'rows', more: 0, moreExact: true, ...o });

test('fitReply: a small slice is untouched; rows and text are cut under the reply cap and say so', () => {
  const small = base({ rows: [[1], [2]], returned: 2 });
  assert.equal(fitReply(small), small);

  const rows = Array.from({ length: 400 }, (_, i) => [i, 'x'.repeat(300)]);
  const cut = fitReply(base({ rows, returned: 400, more: 5 }));
  assert.ok(Buffer.byteLength(JSON.stringify(cut)) <= CHILD_REPLY_BYTES);
  assert.equal(cut.returned, cut.rows!.length);
  assert.equal(cut.more, 5 + 400 - cut.rows!.length);
  assert.deepEqual(cut.rows![0], rows[0]);
  assert.match(cut.note!, /cut to fit/);

  // Quotes double under JSON escaping: the encoded size is what counts.
  const text = '"\\'.repeat(40_000) + 'é€😀'.repeat(3000);
  const t = fitReply(base({ verb: 'read', unit: 'bytes', text, encoding: 'utf8' }));
  assert.ok(Buffer.byteLength(JSON.stringify(t)) <= CHILD_REPLY_BYTES);
  assert.ok(text.startsWith(t.text!) && t.text!.length > 0);
  assert.equal(t.moreExact, false);
  assert.ok(t.more >= 1);
  assert.ok(!/[\uD800-\uDBFF]$/.test(t.text!), 'no lone high surrogate at the cut');

  const b64 = fitReply(base({ verb: 'read', unit: 'bytes', text: 'QUJD'.repeat(20_000), encoding: 'base64' }));
  assert.equal(b64.text!.length % 4, 0);
  assert.ok(Buffer.byteLength(JSON.stringify(b64)) <= CHILD_REPLY_BYTES);
});

/** A tree root → p → c, a sibling q, and another tree x; each run has one text ref. */
async function tree(t: { after: (fn: () => Promise<void>) => void }) {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'brig-child-refs-'));
  t.after(() => fsp.rm(dir, { recursive: true, force: true }));
  const store = new FsResultStore({ dir });
  const runs = new Map<string, RunRecord>();
  const add = (p: string[]) => runs.set(p[p.length - 1]!, { id: p[p.length - 1]!, rootRunId: p[0]!, path: p, parentRunId: p.length > 1 ? p[p.length - 2]! : null } as RunRecord);
  [['root'], ['root', 'p'], ['root', 'p', 'c'], ['root', 'q'], ['x']].forEach(add);
  const refOf: Record<string, string> = {};
  for (const r of runs.values()) refOf[r.id] = (await store.writeStream(r.id, r.rootRunId, 'n.txt', Readable.from([Buffer.from(`hello from ${r.id}\n`)]))).ref;
  const ledger = new MemoryLedger();
  const refs = new ChildRefs({ store, ledger, getRun: async (id) => runs.get(id) });
  return { refs, refOf, ledger };
}

// req: slice:descendants-only
test('[INV-5] ChildRefs: a descendant\'s ref reads; its own, a sibling\'s, another tree\'s are ref_not_found and ledgered without the ref id', async (t) => {
  const { refs, refOf, ledger } = await tree(t);
  const call = (runId: string, method: string, params: unknown) => (refs.handlers[method as keyof typeof refs.handlers] as (c: object) => Promise<unknown>)({ runId, leaseId: `l-${runId}`, method, params });
  const read = (await call('root', 'refs.read', { ref: refOf.c, line: 1 })) as SliceOutput;
  assert.equal(read.text, 'hello from c\n');
  const listed = (await call('p', 'refs.list', { run: 'c' })) as { refs: { ref: string; path: string; kind: string }[]; more: number };
  assert.deepEqual(listed, { refs: [{ ref: refOf.c, path: 'n.txt', kind: 'text', bytes: 13 }], more: 0 });
  for (const [caller, target] of [['p', 'p'], ['p', 'q'], ['p', 'root'], ['p', 'x'], ['c', 'p']] as const) {
    await assert.rejects(call(caller, 'refs.read', { ref: refOf[target] }), (e: BrigError) => e.code === 'ref_not_found', `${caller} → ${target}`);
  }
  await assert.rejects(call('p', 'refs.read', { ref: 'ref_aaaaaaaaaaaaaaaaaaaaaaaaaa' }), (e: BrigError) => e.code === 'ref_not_found');
  await assert.rejects(call('p', 'refs.list', { run: 'q' }), (e: BrigError) => e.code === 'run_not_found');
  await assert.rejects(call('p', 'refs.list', { run: '../root' }), (e: BrigError) => e.code === 'run_not_found');
  await assert.rejects(call('ghost', 'refs.read', { ref: refOf.c }), (e: BrigError) => e.code === 'not_running');
  const denied = ledger.events.filter((e) => e.type === 'broker.denied');
  assert.equal(denied.length, 7, 'five cross-subtree reads and two lists; a missing ref is not a probe');
  assert.ok(denied.every((e) => e.reason === 'not_descendant' && e.leaseId === `l-${e.runId}`));
  assert.ok(!Object.values(refOf).some((r) => JSON.stringify(denied).includes(r)), 'no ref id in the ledger');
});
