import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CHILD_REPLY_BYTES, fitReply, isDescendant } from '../../../src/runs/index.js';
import type { SliceOutput } from '../../../src/slice/index.js';

const run = (path: string[]) => ({ id: path[path.length - 1]!, rootRunId: path[0]!, path });

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
