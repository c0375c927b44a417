/**
 * [INV-5] grep and jq over a ref: empty environment, bounded output, killed at the timeout.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { FsResultStore } from '../../../src/results/index.js';
import { Slicer } from '../../../src/slice/index.js';
import { boundedExec } from '../../../src/slice/bounded-exec.js';

async function setup(t: import('node:test').TestContext) {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-h3-tools-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const body = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ id: i, msg: i % 100 === 0 ? `ERROR disk ${i}` : `ok ${i}` })).join('\n') + '\n';
  const ref = await store.writeStream('run-t', 'root-t', 'events.jsonl', Readable.from([Buffer.from(body)]));
  // A secret in OUR environment must never show up in a tool's view of the world.
  process.env.BRIG_H3_TEST_SECRET = 'SECRET_ENV_VALUE_33';
  t.after(() => delete process.env.BRIG_H3_TEST_SECRET);
  return { home, store, ref };
}

// req: slice:tools-empty-env
test('[INV-5] jq: $ENV, env and input_filename leak nothing; -leading filter is not an option', async (t) => {
  const { home, store, ref } = await setup(t);
  const s = new Slicer(store);
  const r = await s.jq(ref.ref, 'select(.id == 0) | [$ENV, env, input_filename]');
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(r.value.text?.trim(), '[{},{},"<stdin>"]', 'no env, no host path: jq reads the ref from stdin');
  assert.ok(!r.value.text?.includes('SECRET_ENV_VALUE_33'));
  assert.ok(!r.value.text?.includes(home));
  const neg = await s.jq(ref.ref, '-1');
  assert.ok(neg.ok, JSON.stringify(neg));
  assert.match(neg.value.text ?? '', /^-1\n/);
  const imp = await s.jq(ref.ref, '# comment\n import "secret" as $s; $s');
  assert.ok(!imp.ok);
  assert.equal(imp.error.code, 'query_refused');
  const bad = await s.jq(ref.ref, '.[');
  assert.ok(!bad.ok);
  assert.equal(bad.error.code, 'query_failed');
  assert.ok(!bad.error.message.includes(home));
});

// req: slice:tools-empty-env
test('[INV-5] jq: a runaway expression dies at the timeout', async (t) => {
  const { store, ref } = await setup(t);
  const s = new Slicer(store, { limits: { timeoutMs: 1500 } });
  const r = await s.jq(ref.ref, 'def f: f; f');
  assert.ok(!r.ok);
  assert.equal(r.error.code, 'timeout');
});

// req: slice:tools-empty-env
test('[INV-5] jq: output past the cap is cut and says so', async (t) => {
  const { store, ref } = await setup(t);
  const s = new Slicer(store, { limits: { maxBytes: 1000 } });
  const r = await s.jq(ref.ref, 'repeat(.)');
  assert.ok(r.ok, JSON.stringify(r));
  assert.ok((r.value.text ?? '').length <= 1000);
  assert.ok(r.value.more > 0);
  assert.match(r.value.note ?? '', /more/);
});

// req: slice:tools-empty-env
test('[INV-5] grep: matches with line numbers, "N more", context, ignoreCase; env is empty', async (t) => {
  const { store, ref } = await setup(t);
  const s = new Slicer(store);
  const r = await s.grep(ref.ref, 'error disk', { maxMatches: 5, ignoreCase: true });
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(r.value.returned, 5);
  assert.equal(r.value.more, 25);
  assert.match(r.value.text ?? '', /^1:\{"id":0,"msg":"ERROR disk 0"\}/);
  const ctx = await s.grep(ref.ref, 'ERROR disk 100"', { context: 1 });
  assert.ok(ctx.ok);
  assert.equal(ctx.value.text, '100-{"id":99,"msg":"ok 99"}\n101:{"id":100,"msg":"ERROR disk 100"}\n102-{"id":101,"msg":"ok 101"}\n');
  for (const bad of [{ context: Number.NaN }, { context: -1 }, { context: 1.5 }, { maxMatches: 0 }, { maxMatches: Number.NaN }]) {
    const r2 = await s.grep(ref.ref, 'ERROR', bad);
    assert.ok(!r2.ok, `accepted ${JSON.stringify(bad)}`);
    assert.equal(r2.error.code, 'invalid_input', `${JSON.stringify(bad)} → ${r2.error.message}`);
    assert.match(r2.error.message, /(context|maxMatches) must be an integer/);
  }
  const dash = await s.grep(ref.ref, '-e');
  assert.ok(dash.ok, 'a pattern starting with - is a pattern, not an option');
  assert.equal(dash.value.returned, 0);
  // grep and jq are started by boundedExec (ToolRunner runs every tool through it): what it starts sees no environment at all (the
  // secret set in setup is in ours), and its working directory is a fresh empty one.
  const env = await boundedExec({ cmd: '/usr/bin/env', args: [], timeoutMs: 5000, maxBytes: 4096 });
  assert.equal(env.code, 0);
  assert.equal(env.stdout.toString('utf8'), '', 'empty environment');
  assert.ok(process.env.BRIG_H3_TEST_SECRET, 'control: our own environment has the secret');
  const ls = await boundedExec({ cmd: '/bin/ls', args: ['-A'], timeoutMs: 5000, maxBytes: 4096 });
  assert.equal(ls.stdout.toString('utf8'), '', 'empty working directory');
});

// req: slice:tools-empty-env
test('[INV-5] grep: a catastrophic pattern cannot hang anything', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-h3-redos-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const line = `${'a'.repeat(5000)}!\n`;
  const ref = await store.writeStream('run-r', 'root-r', 'a.txt', Readable.from([Buffer.from(line.repeat(200))]));
  const s = new Slicer(store, { limits: { timeoutMs: 2000 } });
  // Back-references defeat grep's DFA: this is exponential in a backtracking matcher.
  const r = await s.grep(ref.ref, '^(a|a?)+\\1{5}(a*)*\\2$');
  assert.ok(r.ok || ['timeout', 'query_failed'].includes(r.error.code), JSON.stringify(r));
  const after = await s.grep(ref.ref, '!$', { maxMatches: 1 });
  assert.ok(after.ok, 'the slicer still answers afterwards');
  assert.equal(after.value.returned, 1);
});
