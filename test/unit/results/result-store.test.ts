import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { FsResultStore, ResultRefSchema } from '../../../src/results/index.js';
import { Slicer } from '../../../src/slice/index.js';
import { isBrigError } from '../../../src/util/errors.js';

async function tmpStore(t: import('node:test').TestContext, opts: Partial<ConstructorParameters<typeof FsResultStore>[0]> = {}) {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-h3-store-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  return { home, store: new FsResultStore({ dir: path.join(home, 'results'), ...opts }) };
}

function* lines(n: number) {
  for (let i = 1; i <= n; i++) yield Buffer.from(`line ${i} ${'x'.repeat(i % 37)}\n`);
}

test('writeStream: sha256, bytes, lines, kind, preview, schema-valid, read-only file', async (t) => {
  const { store } = await tmpStore(t);
  const body = Buffer.concat([...lines(10_000)]);
  const ref = await store.writeStream('r1', 'root', 'log.txt', Readable.from(lines(10_000)));
  ResultRefSchema.parse(ref);
  assert.equal(ref.bytes, body.length);
  assert.equal(ref.lines, 10_000);
  assert.equal(ref.kind, 'text');
  assert.equal(ref.sha256, createHash('sha256').update(body).digest('hex'));
  assert.ok(Buffer.byteLength(ref.preview) <= 2048);
  assert.ok(body.toString().startsWith(ref.preview));
  assert.match(ref.ref, /^ref_[a-z2-7]{26}$/);
  const st = await fs.stat(store.resolvePath(ref));
  assert.equal(st.mode & 0o222, 0, 'materialized files are read-only');
  assert.deepEqual((await store.get(ref.ref)).sha256, ref.sha256);
  assert.deepEqual((await store.list('r1')).map((r) => r.ref), [ref.ref]);
});

test('read by line uses the sparse index and matches a full scan at every stride edge', async (t) => {
  const { store } = await tmpStore(t);
  const ref = await store.writeStream('r1', 'root', 'log.txt', Readable.from(lines(5000)));
  const all = Buffer.concat([...lines(5000)]).toString().split('\n');
  const s = new Slicer(store);
  for (const n of [1, 2, 1023, 1024, 1025, 2048, 2049, 4999, 5000]) {
    const r = await s.read(ref.ref, { line: n, lines: 2 });
    assert.ok(r.ok);
    const want = all.slice(n - 1, n + 1).filter((l) => l.length > 0);
    assert.equal(r.value.text, want.map((l) => `${l}\n`).join(''), `line ${n}`);
    assert.equal(r.value.more, Math.max(0, 5000 - (n - 1) - want.length));
  }
  const past = await s.read(ref.ref, { line: 5001 });
  assert.ok(past.ok);
  assert.equal(past.value.returned, 0);
});

test('a last line without a newline is a line; preview never splits a UTF-8 character', async (t) => {
  const { store } = await tmpStore(t);
  const text = `${'é'.repeat(1500)}\nlast`;
  const ref = await store.writeStream('r1', 'root', 'u.txt', Readable.from([Buffer.from(text)]));
  assert.equal(ref.lines, 2);
  assert.ok(Buffer.byteLength(ref.preview) <= 2048);
  assert.ok(!ref.preview.includes('\uFFFD'));
  const s = new Slicer(store);
  const r = await s.read(ref.ref, { line: 2 });
  assert.ok(r.ok);
  assert.equal(r.value.text, 'last');
});

// req: results:caps-refuse results:atomic
test('[INV-4] over the per-file cap is refused, not truncated, and leaves no half ref', async (t) => {
  const { home, store } = await tmpStore(t, { caps: { maxFileBytes: 1000 } });
  await assert.rejects(
    store.writeStream('r1', 'root', 'big.txt', Readable.from(lines(500))),
    (e: unknown) => isBrigError(e, 'ref_too_large'),
  );
  const runDir = store.runDir('root', 'r1');
  const left = await fs.readdir(runDir).catch(() => []);
  assert.deepEqual(left.filter((f) => f !== '.index'), [], 'no temp file and no final file');
  await assert.rejects(store.list('r1'), (e: unknown) => isBrigError(e, 'run_not_found'));
  assert.ok(home);
});

// req: results:caps-refuse
test('[INV-4] the per-run cap counts every ref of the run; a caller cap only narrows', async (t) => {
  const { store } = await tmpStore(t, { caps: { maxRunBytes: 3000 } });
  await store.writeStream('r1', 'root', 'a.txt', Readable.from([Buffer.alloc(2000, 97)]));
  await assert.rejects(store.writeStream('r1', 'root', 'b.txt', Readable.from([Buffer.alloc(1500, 97)])), (e: unknown) => isBrigError(e, 'ref_too_large'));
  await assert.rejects(
    store.writeStream('r2', 'root', 'c.txt', Readable.from([Buffer.alloc(600, 97)]), { maxFileBytes: 500 }),
    (e: unknown) => isBrigError(e, 'ref_too_large'),
  );
  const wide = await store.writeStream('r3', 'root', 'd.txt', Readable.from([Buffer.alloc(2500, 97)]), { maxRunBytes: 1e12 });
  assert.equal(wide.bytes, 2500);
});

// req: results:no-symlink
test('[INV-4] indexDir: regular files become refs; symlinks and hardlinks are skipped; outside dirs refused', async (t) => {
  const { home, store } = await tmpStore(t);
  const out = path.join(store.runDir('root', 'r1'), 'out');
  await fs.mkdir(path.join(out, 'sub'), { recursive: true });
  await fs.writeFile(path.join(out, 'rows.jsonl'), '{"a":1,"b":"x"}\n{"a":2,"b":"y"}\n');
  await fs.writeFile(path.join(out, 'sub', 't.csv'), 'name,"q,uoted"\nx,1\ny,2\nz,3\n');
  await fs.writeFile(path.join(out, 'blob.bin'), Buffer.from([0, 1, 2, 255]));
  await fs.writeFile(path.join(home, 'secret.txt'), 'SECRET');
  await fs.symlink(path.join(home, 'secret.txt'), path.join(out, 'link'));
  await fs.writeFile(path.join(out, 'h1'), 'hard');
  await fs.link(path.join(out, 'h1'), path.join(out, 'h2'));
  const m = await store.indexDir('r1', 'root', out);
  const byPath = Object.fromEntries(m.refs.map((r) => [r.path, r]));
  assert.deepEqual(Object.keys(byPath).sort(), ['out/blob.bin', 'out/rows.jsonl', 'out/sub/t.csv']);
  assert.equal(byPath['out/rows.jsonl']!.kind, 'jsonl');
  assert.equal(byPath['out/rows.jsonl']!.rows, 2);
  assert.deepEqual(byPath['out/rows.jsonl']!.columns, ['a', 'b']);
  assert.equal(byPath['out/sub/t.csv']!.kind, 'csv');
  assert.equal(byPath['out/sub/t.csv']!.rows, 3);
  assert.deepEqual(byPath['out/sub/t.csv']!.columns, ['name', 'q,uoted']);
  assert.equal(byPath['out/blob.bin']!.kind, 'binary');
  assert.equal(byPath['out/blob.bin']!.preview, '');
  assert.deepEqual(m.skipped.map((s) => `${s.path}:${s.reason}`).sort(), ['out/h1:hardlink', 'out/h2:hardlink', 'out/link:symlink']);
  await assert.rejects(store.indexDir('r1', 'root', home), (e: unknown) => isBrigError(e, 'invalid_input'));
  await assert.rejects(store.indexDir('r1', 'root', store.runDir('root', 'r2')), (e: unknown) => isBrigError(e, 'invalid_input'));
});

// req: results:no-escape
test('[INV-4] unsafe names and run ids are refused', async (t) => {
  const { store } = await tmpStore(t);
  for (const name of ['../x', '/etc/passwd', 'a/../../b', '.hidden', 'a//b', 'out/x', 'a\0b']) {
    await assert.rejects(store.writeStream('r1', 'root', name, Readable.from([Buffer.from('x')])), (e: unknown) => isBrigError(e, 'invalid_input'), name);
  }
  await assert.rejects(store.writeStream('../r1', 'root', 'a.txt', Readable.from([Buffer.from('x')])), (e: unknown) => isBrigError(e, 'invalid_input'));
  await assert.rejects(store.get('ref_../../etc'), (e: unknown) => isBrigError(e, 'ref_not_found'));
});

test('writeValue: a string becomes text, an object json; sweep removes expired runs only', async (t) => {
  let now = new Date('2026-01-01T00:00:00Z');
  const { store } = await tmpStore(t, { now: () => now, retentionMs: 1000 });
  const v = await store.writeValue('r1', 'root', { answer: 42 });
  assert.equal(v.kind, 'json');
  assert.equal(v.source, 'value');
  const s = await store.writeValue('r2', 'root', 'plain words');
  assert.equal(s.kind, 'text');
  assert.equal(s.path, 'result.txt');
  now = new Date('2026-01-01T00:00:00.500Z');
  const fresh = await store.writeValue('r3', 'root', [1]);
  assert.deepEqual(await store.sweep(new Date('2026-01-01T00:00:01.200Z')), { runs: 2, refs: 2, bytes: v.bytes + s.bytes });
  await assert.rejects(store.get(v.ref), (e: unknown) => isBrigError(e, 'ref_not_found'));
  assert.equal((await store.get(fresh.ref)).ref, fresh.ref);
});

test('the supervisor port: outDir, index (count of new refs), remove', async (t) => {
  const { store } = await tmpStore(t);
  const out = store.outDir('root', 'r9');
  await fs.mkdir(out, { recursive: true });
  await fs.writeFile(path.join(out, 'a.txt'), 'a\n');
  await fs.writeFile(path.join(out, 'b.csv'), 'x,y\n1,2\n');
  await store.writeValue('r9', 'root', { ok: true });
  assert.equal(await store.index('root', 'r9', out), 2);
  const refs = await store.list('r9');
  assert.equal(refs.length, 3);
  await store.remove('root', 'r9');
  await assert.rejects(store.list('r9'), (e: unknown) => isBrigError(e, 'run_not_found'));
  await assert.rejects(store.get(refs[0]!.ref), (e: unknown) => isBrigError(e, 'ref_not_found'));
  await assert.rejects(fs.access(store.runDir('root', 'r9')));
});

// req: results:atomic
test('[INV-4] a stream that fails half-way leaves no file, no temp file and no ref', async (t) => {
  const { store } = await tmpStore(t);
  async function* broken() {
    yield Buffer.from('first part\n'.repeat(1000));
    throw new Error('the child went away');
  }
  await assert.rejects(store.writeStream('r1', 'root', 'half.txt', Readable.from(broken())));
  const left = await fs.readdir(store.runDir('root', 'r1')).catch(() => []);
  assert.deepEqual(left.filter((f) => f !== '.index'), []);
  const ok = await store.writeStream('r1', 'root', 'half.txt', Readable.from([Buffer.from('whole\n')]));
  assert.equal((await store.list('r1')).length, 1, 'the same name can be written after a failure');
  assert.equal(ok.lines, 1);
});

test('[INV-4] indexDir refuses the whole directory when a file or the run is over its cap', async (t) => {
  const { store } = await tmpStore(t, { caps: { maxFileBytes: 100, maxRunBytes: 150 } });
  const out = store.outDir('root', 'r1');
  await fs.mkdir(out, { recursive: true });
  await fs.writeFile(path.join(out, 'big.txt'), 'x'.repeat(101));
  await assert.rejects(store.indexDir('r1', 'root', out), (e: unknown) => isBrigError(e, 'ref_too_large'));
  await fs.writeFile(path.join(out, 'big.txt'), 'x'.repeat(90));
  await fs.writeFile(path.join(out, 'big2.txt'), 'y'.repeat(90));
  await assert.rejects(store.indexDir('r1', 'root', out), (e: unknown) => isBrigError(e, 'ref_too_large'));
  await assert.rejects(store.list('r1'), (e: unknown) => isBrigError(e, 'run_not_found'), 'nothing was committed');
  await fs.rm(path.join(out, 'big2.txt'));
  await fs.writeFile(path.join(out, 'naïve name ✓.txt'), 'ok\n');
  const m = await store.indexDir('r1', 'root', out);
  assert.deepEqual(m.refs.map((r) => r.path).sort(), ['out/big.txt', 'out/naïve name ✓.txt']);
});

test('read by line: a long line before the one asked for is skipped, not blamed for the byte cap', async (t) => {
  const { store } = await tmpStore(t);
  // Line 1 is 1 MB (over the slicer's 256 KiB cap); lines after it are short.
  const body = `${'x'.repeat(1_000_000)}\nshort line two\nthree\n${'y'.repeat(300_000)}\nfive\nsix-no-newline`;
  const ref = await store.writeStream('r1', 'root', 'long.txt', Readable.from([Buffer.from(body)]));
  const s = new Slicer(store);
  const two = await s.read(ref.ref, { line: 2, lines: 2 });
  assert.ok(two.ok, JSON.stringify(two));
  assert.equal(two.value.text, 'short line two\nthree\n');
  assert.equal(two.value.more, 3);
  const five = await s.read(ref.ref, { line: 5, lines: 5 });
  assert.ok(five.ok, JSON.stringify(five));
  assert.equal(five.value.text, 'five\nsix-no-newline', 'the last line without a newline is read too');
  assert.equal(five.value.returned, 2);
  // The long line itself is still refused with a reason, and so is a slice that reaches it.
  const one = await s.read(ref.ref, { line: 1 });
  assert.ok(!one.ok);
  assert.equal(one.error.code, 'output_too_large');
  assert.match(one.error.message, /line 1 is longer than the 262144-byte cap/);
  const reach = await s.read(ref.ref, { line: 3, lines: 3 });
  assert.ok(reach.ok, JSON.stringify(reach));
  assert.equal(reach.value.text, 'three\n', 'cut before the long line 4');
  assert.equal(reach.value.more, 3);
  assert.match(reach.value.note ?? '', /cut at the byte cap/);
  // The byte cap counts a last line without a newline too.
  const small = new Slicer(store, { limits: { maxBytes: 12 } });
  const tail = await small.read(ref.ref, { line: 5, lines: 5 });
  assert.ok(tail.ok, JSON.stringify(tail));
  assert.equal(tail.value.text, 'five\n');
  assert.match(tail.value.note ?? '', /cut at the byte cap/);
});

test('a ref keeps at most 64 column names of at most 64 chars each, and says how many there were: a child cannot bloat the manifest through its header', async (t) => {
  const { store } = await tmpStore(t);
  const wide = await store.writeStream('r1', 'root', 'wide.csv', Readable.from([Buffer.from(`${','.repeat(65_000)}\n1\n`)]));
  assert.equal(wide.kind, 'csv');
  assert.equal(wide.columns?.length, 64);
  assert.equal(wide.columnCount, 65_001);
  const long = await store.writeStream('r1', 'root', 'long.jsonl', Readable.from([Buffer.from(`${JSON.stringify({ [`k${'x'.repeat(60_000)}`]: 1, b: 2 })}\n`)]));
  assert.deepEqual(long.columns?.map((c) => c.length), [64, 1]);
  assert.equal(long.columnCount, undefined, 'two columns: all of them kept');
  assert.ok(long.columns![0]!.endsWith('…'));
  // What the manifest keeps for the wide header is a few KiB, not the header's 64 KiB.
  const got = await store.get(wide.ref);
  assert.ok(got && JSON.stringify(got).length < 8192, `the ref's metadata is ${JSON.stringify(got).length} chars`);
  assert.ok(ResultRefSchema.safeParse(got).success);
});

test('a hidden file a child wrote under out/ is a readable ref; the store\'s own hidden names stay refused', async (t) => {
  const { store } = await tmpStore(t);
  const out = path.join(store.runDir('root', 'r1'), 'out');
  await fs.mkdir(path.join(out, '.config'), { recursive: true });
  await fs.writeFile(path.join(out, '.env'), 'A=1\n');
  await fs.writeFile(path.join(out, '.config', 'x.json'), '{"b":2}\n');
  const m = await store.indexDir('r1', 'root', out);
  assert.deepEqual(m.refs.map((r) => r.path).sort(), ['out/.config/x.json', 'out/.env']);
  const env = m.refs.find((r) => r.path === 'out/.env')!;
  const slicer = new Slicer(store);
  const r = await slicer.read(env.ref, { offset: 0, length: 100 });
  assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
  if (r.ok) assert.equal(r.value.text, 'A=1\n');
  for (const bad of ['.index/x', '.refs/y', 'out/.tmp-abc', 'out/../x', '.env']) {
    await assert.rejects(store.writeStream('r1', 'root', bad, Readable.from([Buffer.from('x')])), (e: unknown) => isBrigError(e, 'invalid_input'), bad);
  }
});
