/**
 * Condensation of a result of any size, on real runs (real jails, the real result store):
 * a value too big for a broker line is spooled to its `result.json` ref, and the envelope is
 * condensed from that stored file — Level 3 cuts it 60/40 with the middle's error lines and
 * the ref to drill into, Level 2 feeds the model a bounded head + tail + error lines — never
 * from a placeholder sentence. A failed child's error and stderr tail are in its envelope, and
 * missing expected outputs are named on its status line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, textTurn } from '../../helpers/model-server.js';
import { freshHome, leftovers, supervisorAt } from '../runs/fixture.js';

/** A script whose result is one string of about `lines` × 60 chars: markers at both ends, an error line in the middle. */
const bigValue = (lines: number) => `export default async function () {
  const out = ['HEAD-MARKER: the first line of the result'];
  for (let i = 0; i < ${lines}; i++) {
    if (i === ${Math.floor(lines / 2)}) out.push('ERROR: shard 7 refused the write (quota exceeded)');
    out.push('row ' + i + ': ' + 'x'.repeat(50));
  }
  out.push('TAIL-MARKER: the last line of the result');
  return out.join('\\n');
}`;

// req: envelope:bounded
test('[INV-3] a 6 MB result is condensed from its stored file: Level 3 keeps its head, tail and the middle\'s error line, and names the ref — never a placeholder', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'a big result', script: bigValue(100_000), timeout: 120_000 });
    assert.ok(r.ok);
    assert.equal(r.value.endReason, 'completed', `${r.value.error?.message} ${r.value.stderrTail}`);
    assert.ok((r.value.resultSpooled ?? 0) > 5_000_000, 'the value was spooled to its file');
    const env = await c.refs.result(r.value.id);
    assert.ok(env.ok);
    const { condensed, envelope, refs } = env.value;
    const value = refs.find((x) => x.source === 'value')!;
    assert.equal(condensed.level, 3, 'no model: Level 3');
    assert.ok(condensed.originalTokens > 1_400_000, `the original is the whole result (${condensed.originalTokens} tokens), not a sentence about it`);
    assert.match(condensed.body, /^HEAD-MARKER: the first line/);
    assert.match(condensed.body, /TAIL-MARKER: the last line of the result$/);
    assert.match(condensed.body, /Preserved errors from the omitted part:\n- ERROR: shard 7 refused the write/);
    assert.match(condensed.body, new RegExp(`omitted — the full result is ResultRef ${value.ref} \\(result\\.json\\); drill in`));
    assert.doesNotMatch(envelope, /slice it\)/, 'not the placeholder sentence');
    assert.ok(condensed.body.length <= 16_000, `within maxResultTokens × 4 (${condensed.body.length})`);
    assert.match(envelope, new RegExp(`\\n- result\\.json — ${value.ref} json, [\\d.]+ (B|KB|MB)\\n`), 'the ref line names its path');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('Level 2 works from the stored file: the model is fed a bounded head + tail + the error lines of a 300 KB result, also with strategy always', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const summary = JSON.stringify({ summary: 'Five thousand rows; shard 7 refused a write.', conclusions: ['rows are uniform'], filePaths: [], actionableItems: ['retry shard 7'], errors: ['ERROR: shard 7 refused the write (quota exceeded)'], keyData: { rows: 5000 } });
  const m = await startModelServer({ script: () => textTurn(summary, { usage: { input: 1000, output: 60 } }) });
  t.after(() => m.close());
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in' }), { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const r = await c.supervisor.spawn({ task: 'a big result', script: bigValue(5000), timeout: 120_000 });
    assert.ok(r.ok);
    assert.equal(r.value.endReason, 'completed', r.value.stderrTail);
    const env = await c.refs.result(r.value.id);
    assert.ok(env.ok);
    assert.equal(env.value.condensed.level, 2);
    assert.match(env.value.envelope, /Summary: Five thousand rows; shard 7 refused a write\./);
    assert.equal(m.requests.length, 1);
    const fed = String(m.requests[0]!.body.messages.at(-1).content);
    assert.match(fed, /HEAD-MARKER/);
    assert.match(fed, /TAIL-MARKER/);
    assert.match(fed, /ERROR: shard 7 refused the write/);
    assert.doesNotMatch(fed, /slice it\)/);
    assert.ok(fed.length <= 4000 * 4 * 12 + 500, `bounded: ${fed.length} chars`);
    const look = await c.refs.result(r.value.id, { strategy: 'always' });
    assert.ok(look.ok);
    assert.equal(m.requests.length, 2);
    assert.match(String(m.requests[1]!.body.messages.at(-1).content), /HEAD-MARKER[\s\S]*TAIL-MARKER/, '`always` sends the result, not a sentence about it');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('errorPreservation: a failed child\'s error and stderr tail are in its envelope, and its missing expected outputs are on the status line', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const sh = 'echo partial > out/a.txt; for i in $(seq 1 40); do echo "trace line $i" >&2; done; echo "FATAL: cannot open input.csv" >&2; exit 3';
    const r = await c.supervisor.spawn({ task: 'fail loudly', kind: 'command', argv: ['sh', '-c', sh], expected_outputs: ['report.json', 'a.txt'], timeout: 60_000 });
    assert.ok(r.ok);
    assert.equal(r.value.endReason, 'failed');
    const env = await c.refs.result(r.value.id);
    assert.ok(env.ok);
    const e = env.value.envelope;
    assert.match(e, /^Status: Failed — missing expected output: report\.json$/m);
    assert.match(e, /^Error \[child_failed\]: the child exited with code 3$/m);
    assert.match(e, /^stderr \(last 20 lines\):$/m);
    assert.match(e, /^FATAL: cannot open input\.csv$/m);
    assert.match(e, /^trace line 40$/m);
    assert.doesNotMatch(e, /^trace line 5$/m, 'a tail, bounded');
    assert.match(e, /^- out\/a\.txt — ref_[a-z2-7]{26} text, 8 B, 1 line$/m, 'what it wrote before it failed is listed by path');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
