import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { ContentScan } from '../../../src/results/content-scan.js';
import { csvHasHeader, headTail, utf8Boundary } from '../../../src/results/index.js';
import { parseJsonPath } from '../../../src/slice/index.js';

// req: envelope:bounded
test('[INV-3] head+tail never exceeds its budget; under it the text is untouched', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 5000 }), fc.integer({ min: 300, max: 4000 }), fc.boolean(), (text, budget, keep) => {
      const out = headTail(text, budget, keep);
      if (text.length <= budget) assert.equal(out, text);
      else {
        assert.ok(out.length <= budget, `${out.length} > ${budget}`);
        assert.match(out, /omitted/);
      }
    }),
    { numRuns: 300 },
  );
});

test('the one-pass scan: sha256, line count and every stride-th line offset, however the stream is chunked', () => {
  fc.assert(
    fc.property(
      fc.array(fc.string({ maxLength: 12 }), { maxLength: 60 }),
      fc.boolean(),
      fc.array(fc.integer({ min: 1, max: 17 }), { minLength: 1, maxLength: 8 }),
      (lines, trailingNewline, cuts) => {
        const text = lines.join('\n') + (trailingNewline && lines.length > 0 ? '\n' : '');
        const buf = Buffer.from(text);
        const scan = new ContentScan(4);
        let i = 0;
        let c = 0;
        while (i < buf.length) {
          const n = cuts[c++ % cuts.length]!;
          scan.update(buf.subarray(i, i + n));
          i += n;
        }
        const r = scan.finish();
        assert.equal(r.sha256, createHash('sha256').update(buf).digest('hex'));
        assert.equal(r.bytes, buf.length);
        const starts = [0];
        for (let j = 0; j < buf.length; j++) if (buf[j] === 10 && j + 1 < buf.length) starts.push(j + 1);
        const expectedLines = buf.length === 0 ? 0 : starts.length;
        assert.equal(r.lines, expectedLines);
        assert.deepEqual(r.offsets, starts.filter((_, k) => k % 4 === 0));
      },
    ),
    { numRuns: 400 },
  );
});

test('a UTF-8 cut never splits a character', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.nat(1200), (s, limit) => {
      const b = Buffer.from(s);
      const n = utf8Boundary(b, limit);
      assert.ok(n <= Math.min(limit, b.length));
      // The cut decodes to a prefix of the string (a split character would decode to U+FFFD,
      // which the string itself may also contain — so compare, don't search for it).
      assert.ok(s.startsWith(b.subarray(0, n).toString('utf8')));
    }),
    { numRuns: 500 },
  );
});

// req: slice:jsonpath-compiled
test('[INV-5] jsonpath: any input either fails cleanly or compiles to a path of the closed shape', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 40 }), fc.stringMatching(/^\$(\.[a-z_]{1,5}|\[[0-9]{1,3}\]|\[\*\]|\['[a-z ]{1,5}'\])*$/)), (expr) => {
      const r = parseJsonPath(expr);
      if (r.ok) assert.match(r.value.duckPath, /^\$(\."[^"'\\]+"|\[\d+\]|\[\*\]|\.\*)*$/);
    }),
    { numRuns: 1000 },
  );
});

test('a csv header is decided from the head: numbers below a word make a header, numbers on the first line make data', () => {
  const h = (s: string) => csvHasHeader(Buffer.from(s));
  assert.equal(h('id,name\n1,ada\n2,alan\n'), true);
  assert.equal(h('1,ada\n2,alan\n'), false);
  assert.equal(h('alice,bob\ncarol,dave\n'), true, 'text only: a header, as DuckDB assumes');
  assert.equal(h('7,8,9\n'), false, 'one line of numbers is data');
  assert.equal(h('a,b,c\n'), true);
  assert.equal(h(''), true);
  assert.equal(h('x,,1\n1,2,3\n'), true, 'a word over a number column');
  assert.equal(h(',2\n1,3\n'), false, 'an empty first value fits a number column');
  // Whatever the text, the decision is a boolean and never throws.
  fc.assert(fc.property(fc.string({ maxLength: 300 }), (s) => typeof h(s) === 'boolean'));
});
