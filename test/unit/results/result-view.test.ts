/**
 * The bounded view of a stored result (results/result-view.ts) and condensation over it: the
 * head, the tail and the error lines of a file of any size, an agent's `{"answer": …}` and a
 * JSON string decoded as they stream (escapes split across chunks included), and Level 3 over
 * a view equal to Level 3 over the text it views.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { condense, headTail, headTailView, viewFile, viewOf } from '../../../src/results/index.js';

function tmpFile(t: { after(fn: () => void): void }, content: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-view-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const f = path.join(dir, 'result.json');
  fs.writeFileSync(f, content);
  return f;
}

const text = (n: number) => ['HEAD line', ...Array.from({ length: n }, (_, i) => (i === Math.floor(n / 2) ? 'Traceback: ERROR in the middle' : `row ${i} ${'é'.repeat(20)} "quoted" \\ tab\t`)), 'TAIL line'].join('\n');

test('an agent value is viewed as its decoded answer; what follows the answer (files, partial) is parsed on its own', async (t) => {
  const answer = text(20_000);
  const f = tmpFile(t, JSON.stringify({ answer, files: ['/workspace/out/a.md'], partial: true, endReason: 'max_steps' }));
  const { view, answerRest } = await viewFile(f, { headChars: 1000, tailChars: 800 });
  assert.equal(view.chars, answer.length, 'counted in decoded chars, not JSON bytes');
  assert.equal(view.head, answer.slice(0, 1000));
  assert.equal(view.tail, answer.slice(answer.length - 800));
  assert.deepEqual(answerRest, { files: ['/workspace/out/a.md'], partial: true, endReason: 'max_steps' });
  const err = view.errors.find((e) => e.line.includes('Traceback'))!;
  assert.equal(answer.slice(err.at, err.at + 9), 'Traceback', 'an error line knows where it starts');
});

test('a JSON string value and a raw text are viewed as their text', async (t) => {
  const s = text(5000);
  const str = await viewFile(tmpFile(t, JSON.stringify(s)), { headChars: 300, tailChars: 300 });
  assert.equal(str.view.chars, s.length);
  assert.equal(str.view.tail, s.slice(-300));
  const raw = await viewFile(tmpFile(t, s), { headChars: 300, tailChars: 300 });
  assert.equal(raw.view.chars, s.length);
  assert.equal(raw.view.head, s.slice(0, 300));
});

test('the decoded answer is the same whatever the chunking (escapes and UTF-8 split across 256 KiB reads)', async (t) => {
  // Long enough to cross several reads, with escapes everywhere (\\n, \\t, \\", \\\\, \\u….).
  const answer = Array.from({ length: 60_000 }, (_, i) => `${i}\t"x"\\ \u0001 ${'ü'.repeat(i % 7)}\n`).join('');
  const f = tmpFile(t, JSON.stringify({ answer }));
  const { view } = await viewFile(f, { headChars: answer.length, tailChars: answer.length });
  assert.equal(view.chars, answer.length);
  assert.equal(view.head, answer);
  assert.equal(view.tail, answer);
});

test('Level 3 over a view equals Level 3 over the whole text (property)', () => {
  fc.assert(
    fc.property(fc.string({ minLength: 0, maxLength: 4000 }), fc.integer({ min: 50, max: 3000 }), (s, budget) => {
      const whole = headTail(s, budget, true);
      const v = viewOf(s);
      // A view that holds only a bounded head and tail still cuts the same text.
      const bounded = { ...v, head: s.slice(0, budget), tail: s.slice(Math.max(0, s.length - budget)) };
      return headTailView(bounded, budget, true) === whole;
    }),
  );
});

test('a view never passes through (Level 1) unless it is the whole text, and its original is the whole size', async () => {
  const v = { chars: 10_000_000, head: 'HEAD ', tail: ' TAIL', errors: [{ at: 5_000_000, line: 'ERROR: in the middle' }] };
  const c = await condense(v, { maxResultTokens: 4000 });
  assert.equal(c.level, 3);
  assert.equal(c.originalTokens, 2_500_000);
  assert.match(c.body, /^HEAD [\s\S]*ERROR: in the middle[\s\S]* TAIL$/);
  const whole = await condense(viewOf('short'), { maxResultTokens: 4000 });
  assert.equal(whole.level, 1);
  assert.equal(whole.body, 'short');
});

test('error lines are error reports, not prose that names an error', async () => {
  const { isErrorLine } = await import('../../../src/results/result-view.js');
  for (const l of ['ERROR: disk quota exceeded', 'FATAL: out of memory in worker 3', 'Traceback (most recent call last):', 'TypeError: x is not a function', 'error: cannot open input.csv', 'sh: /etc/x: Permission denied', 'the job exited with code 3', '2024-01-01 12:00 ERROR upstream E503'])
    assert.ok(isErrorLine(l), l);
  for (const l of ['- Google demonstrated below-threshold error correction on Willow', 'note 7: qubit coherence, error rates and yield', 'errors are rare in this dataset', 'the exception proves the rule'])
    assert.ok(!isErrorLine(l), l);
});
