/**
 * One pass over a child's output: the jail's collect feeds each file through the store's
 * observer while it writes it, and indexCollected describes the files from those scans
 * instead of reading them back — with the same refs indexDir would make, the same caps and
 * skips, and a re-read wherever a scan is missing, foreign or no longer matches the file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import { resultsPort } from '../../../src/daemon/compose.js';
import { collectArchive } from '../../../src/jail/docker/collect.js';
import type { CollectCaps, CollectObserver } from '../../../src/jail/types.js';
import { FsResultStore, ScannedFile, type ResultRef } from '../../../src/results/index.js';
import { isBrigError } from '../../../src/util/errors.js';

type Entry = { name: string; type?: 'file' | 'directory' | 'symlink' | 'link'; data?: string | Buffer; linkname?: string };

async function tarOf(entries: Entry[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const e of entries) pack.entry({ name: e.name, type: e.type ?? 'file', linkname: e.linkname, mode: 0o644 }, e.data ?? '');
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack as unknown as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

/** An archive read in small chunks, as the engine's HTTP stream hands it over. */
function chunked(buf: Buffer, size = 7001): Readable {
  return Readable.from((function* () {
    for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
  })());
}

const CAPS: CollectCaps = { perFileBytes: 1 << 20, perRunBytes: 4 << 20, maxEntries: 100 };

async function tmpStore(t: import('node:test').TestContext) {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-one-pass-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  return { home, store: new FsResultStore({ dir: path.join(home, 'results') }) };
}

const rows = Array.from({ length: 3000 }, (_, i) => `{"id":${i},"name":"n${i}"}\n`).join('');
const TREE: Entry[] = [
  { name: 'out/', type: 'directory' },
  { name: 'out/rows.jsonl', data: rows },
  { name: 'out/table.csv', data: 'a,b\n1,2\n3,4\n' },
  { name: 'out/blob.bin', data: Buffer.from([0, 1, 2, 3, 255, 10, 0]) },
  { name: 'out/empty.txt', data: '' },
  { name: 'out/sub/', type: 'directory' },
  { name: 'out/sub/doc.json', data: '{"deep": [1, 2, 3]}' },
  { name: 'out/sub/log', data: `${'é'.repeat(1500)}\nlast` },
  { name: 'out/passwd', type: 'symlink', linkname: '/etc/passwd' },
  { name: 'out/hard', type: 'link', linkname: 'out/table.csv' },
];

/** A ref minus what is random or time-bound, for comparing two runs' refs. */
const facts = ({ ref: _r, runId: _u, createdAt: _c, expiresAt: _e, ...rest }: ResultRef) => rest;

test('[INV-4] collect with the store\'s observer + indexCollected make the refs indexDir makes, line index included', async (t) => {
  const { store } = await tmpStore(t);
  const archive = await tarOf(TREE);
  // r1: one pass.
  const out1 = store.outDir('root', 'r1');
  await fs.mkdir(path.dirname(out1), { recursive: true });
  const rep = await collectArchive(chunked(archive), 'out', out1, CAPS, { observe: store.observe });
  assert.ok(rep.files.every((f) => f.observed instanceof ScannedFile), 'every collected file carries its scan');
  const m1 = await store.indexCollected('r1', 'root', out1, rep.files);
  // r2: the re-reading path over the same tree.
  const out2 = store.outDir('root', 'r2');
  await fs.mkdir(path.dirname(out2), { recursive: true });
  await collectArchive(chunked(archive), 'out', out2, CAPS);
  const m2 = await store.indexDir('r2', 'root', out2);

  assert.deepEqual(m1.refs.map((r) => r.path), ['out/blob.bin', 'out/empty.txt', 'out/rows.jsonl', 'out/sub/doc.json', 'out/sub/log', 'out/table.csv']);
  assert.deepEqual(m1.refs.map(facts), m2.refs.map(facts));
  assert.deepEqual(m1.skipped, m2.skipped);
  const byPath = new Map(m1.refs.map((r) => [r.path, r]));
  assert.equal(byPath.get('out/rows.jsonl')!.sha256, createHash('sha256').update(rows).digest('hex'));
  assert.deepEqual(
    m1.refs.map((r) => [r.kind, r.lines]),
    [['binary', 2], ['text', 0], ['jsonl', 3000], ['json', 1], ['text', 2], ['csv', 3]],
  );
  for (let i = 0; i < m1.refs.length; i++) assert.deepEqual(await store.lineIndex(m1.refs[i]!), await store.lineIndex(m2.refs[i]!));
  assert.deepEqual(await store.lineIndex(byPath.get('out/rows.jsonl')!), [0, 1024, 2048].map((k) => Buffer.byteLength(rows.split('\n').slice(0, k).map((l) => `${l}\n`).join(''))));
  for (const r of m1.refs) assert.equal((await fs.stat(store.resolvePath(r))).mode & 0o222, 0, 'made read-only as indexDir does');
  assert.deepEqual((await store.list('r1')).map((r) => r.ref), m1.refs.map((r) => r.ref));
});

test('indexCollected trusts a scan of its own of the very size on disk, and re-reads anything else', async (t) => {
  const { store } = await tmpStore(t);
  const out = store.outDir('root', 'r1');
  await fs.mkdir(path.dirname(out), { recursive: true });
  const archive = await tarOf([
    { name: 'out/same.txt', data: 'aaaa\n' },
    { name: 'out/grown.txt', data: 'bbbb\n' },
    { name: 'out/foreign.txt', data: 'cccc\n' },
    { name: 'out/unscanned.txt', data: 'dddd\n' },
  ]);
  const rep = await collectArchive(chunked(archive), 'out', out, CAPS, { observe: store.observe });
  // Same size, other bytes: the scan stands (proof that nothing was read back).
  await fs.writeFile(path.join(out, 'same.txt'), 'AAAA\n');
  // Another size: the scan no longer describes the file, so it is read.
  await fs.writeFile(path.join(out, 'grown.txt'), 'BBBBBBBB\n');
  const foreign = { bytes: 5, sha256: 'f'.repeat(64), lines: 1, lineIndex: Buffer.alloc(8), kind: 'text', preview: 'forged', rows: undefined, columns: undefined };
  const scans = rep.files
    .filter((f) => f.path !== 'unscanned.txt')
    .map((f) => (f.path === 'foreign.txt' ? { path: f.path, observed: foreign } : f));
  const m = await store.indexCollected('r1', 'root', out, scans);
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');
  const got = Object.fromEntries(m.refs.map((r) => [r.path, [r.bytes, r.sha256, r.preview]]));
  assert.deepEqual(got, {
    'out/same.txt': [5, sha('aaaa\n'), 'aaaa\n'],
    'out/grown.txt': [9, sha('BBBBBBBB\n'), 'BBBBBBBB\n'],
    'out/foreign.txt': [5, sha('cccc\n'), 'cccc\n'],
    'out/unscanned.txt': [5, sha('dddd\n'), 'dddd\n'],
  });
});

test('[INV-4] indexCollected keeps indexDir\'s caps: over the store\'s cap is refused whole, nothing committed', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-one-pass-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const store = new FsResultStore({ dir: path.join(home, 'results'), caps: { maxFileBytes: 100, maxRunBytes: 150 } });
  const out = store.outDir('root', 'r1');
  await fs.mkdir(path.dirname(out), { recursive: true });
  const rep = await collectArchive(chunked(await tarOf([{ name: 'out/a', data: 'x'.repeat(90) }, { name: 'out/b', data: 'y'.repeat(90) }])), 'out', out, CAPS, { observe: store.observe });
  await assert.rejects(store.indexCollected('r1', 'root', out, rep.files), (e: unknown) => isBrigError(e, 'ref_too_large'));
  await assert.rejects(store.list('r1'), (e: unknown) => isBrigError(e, 'run_not_found'));
});

// req: results:caps-refuse results:atomic
test('[INV-4] the observer sees each regular file\'s bytes only after the caps passed them; a refused file never ends, nothing is left', async (t) => {
  const base = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-observe-'));
  t.after(() => fs.rm(base, { recursive: true, force: true }));
  const seen = new Map<string, { bytes: Buffer[]; ended: boolean }>();
  const observe = (rel: string): CollectObserver => {
    const s = { bytes: [] as Buffer[], ended: false };
    seen.set(rel, s);
    return { update: (c) => void s.bytes.push(Buffer.from(c)), end: () => ((s.ended = true), rel.length) };
  };
  const ok = await tarOf([...TREE, { name: 'out/../escape', data: 'x' }, { name: '/abs', data: 'y' }]);
  const rep = await collectArchive(chunked(ok, 333), 'out', path.join(base, 'a'), CAPS, { observe });
  assert.deepEqual([...seen.keys()].sort(), ['blob.bin', 'empty.txt', 'rows.jsonl', 'sub/doc.json', 'sub/log', 'table.csv'], 'no observer for links, escapes or directories');
  for (const f of rep.files) {
    assert.ok(seen.get(f.path)!.ended);
    assert.equal(f.observed, f.path.length, 'end()\'s value is reported on the file');
    assert.ok(Buffer.concat(seen.get(f.path)!.bytes).equals(await fs.readFile(path.join(base, 'a', f.path))));
  }

  seen.clear();
  const caps = { perFileBytes: 1000, perRunBytes: 4000, maxEntries: 100 };
  const big = await tarOf([{ name: 'out/small', data: 'x' }, { name: 'out/big', data: 'y'.repeat(5000) }]);
  await assert.rejects(collectArchive(chunked(big, 100), 'out', path.join(base, 'b'), caps, { observe }), (e: unknown) => isBrigError(e, 'ref_too_large'));
  // The declared size refuses `big` at its header: no observer is even made for it.
  assert.deepEqual([...seen.keys()], ['small']);
  assert.deepEqual(await fs.readdir(base), ['a'], 'no temp or half directory left');
});

test('[INV-4] an observer that throws refuses the collection and leaves nothing', async (t) => {
  const base = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-observe-'));
  t.after(() => fs.rm(base, { recursive: true, force: true }));
  const observe = (rel: string): CollectObserver => ({
    update: () => {
      if (rel === 'table.csv') throw new Error('observer failed');
    },
    end: () => undefined,
  });
  await assert.rejects(collectArchive(chunked(await tarOf(TREE)), 'out', path.join(base, 'dest'), CAPS, { observe }), /observer failed/);
  assert.deepEqual(await fs.readdir(base), []);
});

test('[INV-4] resultsPort (the supervisor\'s view): observe + index({ collected }) index out/ from the collect\'s scans', async (t) => {
  const { store } = await tmpStore(t);
  const port = resultsPort(store);
  assert.ok(port.observe, 'the daemon\'s port hands collect an observer');
  const out = port.outDir('r-root01', 'r-kid001');
  await fs.mkdir(path.dirname(out), { recursive: true });
  const rep = await collectArchive(chunked(await tarOf([{ name: 'out/rows.jsonl', data: '{"a":1}\n{"a":2}\n' }])), 'out', out, CAPS, { observe: port.observe });
  // Same size, other bytes: only a port that used the scan reports the collected hash.
  await fs.writeFile(path.join(out, 'rows.jsonl'), '{"b":1}\n{"b":2}\n');
  assert.equal(await port.index('r-root01', 'r-kid001', out, { collected: rep.files, stdout: 'hi\n' }), 2);
  const refs = await store.list('r-kid001');
  const rowsRef = refs.find((r) => r.path === 'out/rows.jsonl')!;
  assert.equal(rowsRef.sha256, createHash('sha256').update('{"a":1}\n{"a":2}\n').digest('hex'));
  assert.deepEqual(rowsRef.columns, ['a']);
  // The store's own structural port does the same.
  const out2 = store.outDir('r-root01', 'r-kid002');
  const rep2 = await collectArchive(chunked(await tarOf([{ name: 'out/x.txt', data: 'x\n' }])), 'out', out2, CAPS, { observe: store.observe });
  assert.equal(await store.index('r-root01', 'r-kid002', out2, { collected: rep2.files }), 1);
});
