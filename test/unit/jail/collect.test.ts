import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import { type ArchiveSource, collectArchive, MAX_DEPTH, MAX_PASS_OVERS, MAX_SKIP_RECORDS, PASSED_OVER, printableName, safeRelative, SCAN_SLACK } from '../../../src/jail/docker/collect.js';
import { isBrigError } from '../../../src/util/errors.js';
import { emptyFilesArchive } from '../../helpers/tar-headers.js';

type Entry = { name: string; type?: 'file' | 'directory' | 'symlink' | 'link' | 'fifo' | 'character-device'; data?: string; linkname?: string; mode?: number };

async function tarOf(entries: Entry[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const e of entries) {
    pack.entry({ name: e.name, type: e.type ?? 'file', linkname: e.linkname, mode: e.mode ?? 0o644 }, e.data ?? '');
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack as unknown as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

const CAPS = { perFileBytes: 1024, perRunBytes: 64 * 1024, maxEntries: 100 };

async function tmpdir(t: { after: (fn: () => void) => void }): Promise<string> {
  const d = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-collect-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

test('safeRelative refuses absolute, dotdot and foreign roots', () => {
  assert.deepEqual(safeRelative('out/a/b.txt', 'out'), { rel: 'a/b.txt' });
  assert.deepEqual(safeRelative('./out/./a', 'out'), { rel: 'a' });
  assert.deepEqual(safeRelative('/etc/passwd', 'out'), { reason: 'absolute_path' });
  assert.deepEqual(safeRelative('out/../../etc/passwd', 'out'), { reason: 'dotdot' });
  assert.deepEqual(safeRelative('other/x', 'out'), { reason: 'outside_root' });
});

// req: results:no-symlink results:no-escape
test('[INV-4] only regular files are copied; links, devices, fifos and escapes are skipped and reported', async (t) => {
  const base = await tmpdir(t);
  const dest = path.join(base, 'ref');
  const archive = await tarOf([
    { name: 'out/', type: 'directory' },
    { name: 'out/ok.txt', data: 'hello' },
    { name: 'out/sub/', type: 'directory' },
    { name: 'out/sub/deep.json', data: '{"a":1}', mode: 0o4755 },
    { name: 'out/passwd', type: 'symlink', linkname: '/etc/passwd' },
    { name: 'out/hard', type: 'link', linkname: 'out/ok.txt' },
    { name: 'out/fifo', type: 'fifo' },
    { name: 'out/tty', type: 'character-device' },
    { name: 'out/../../escape.txt', data: 'x' },
    { name: '/abs.txt', data: 'x' },
    { name: 'out/ok.txt', data: 'second copy must not overwrite' },
  ]);
  const rep = await collectArchive(Readable.from([archive]), 'out', dest, CAPS);
  assert.deepEqual(rep.files.map((f) => f.path).sort(), ['ok.txt', 'sub/deep.json']);
  assert.equal(rep.totalBytes, 5 + 7);
  assert.deepEqual(
    rep.skipped.map((s) => s.reason).sort(),
    ['absolute_path', 'character-device', 'conflict', 'dotdot', 'fifo', 'link', 'symlink'],
  );
  assert.equal(fs.readFileSync(path.join(dest, 'ok.txt'), 'utf8'), 'hello');
  const st = fs.statSync(path.join(dest, 'sub/deep.json'));
  assert.equal(st.mode & 0o7777, 0o644, 'no setuid or exec bit carried over');
  assert.equal(fs.existsSync(path.join(base, 'escape.txt')), false);
  assert.deepEqual(fs.readdirSync(base), ['ref'], 'no temp directory left behind');
});

// req: results:caps-refuse results:atomic
test('[INV-4] over the per-file cap is refused whole, not truncated, and leaves nothing', async (t) => {
  const base = await tmpdir(t);
  const dest = path.join(base, 'ref');
  const archive = await tarOf([{ name: 'out/small', data: 'x' }, { name: 'out/big', data: 'y'.repeat(2000) }]);
  await assert.rejects(collectArchive(Readable.from([archive]), 'out', dest, CAPS), (e) => isBrigError(e, 'ref_too_large'));
  assert.deepEqual(fs.readdirSync(base), []);
});

// req: results:caps-refuse
test('[INV-4] over the per-run cap is refused, also when the bytes are past the entry cap', async (t) => {
  const base = await tmpdir(t);
  const many = await tarOf(Array.from({ length: 5 }, (_, i) => ({ name: `out/f${i}`, data: 'z'.repeat(1000) })));
  await assert.rejects(collectArchive(Readable.from([many]), 'out', path.join(base, 'a'), { ...CAPS, perRunBytes: 4096 }), (e) => isBrigError(e, 'ref_too_large'));
  // Files skipped for the entry cap are still read through: their bytes count, a byte cap refuses.
  await assert.rejects(collectArchive(Readable.from([many]), 'out', path.join(base, 'b'), { ...CAPS, perRunBytes: 4096, maxEntries: 1 }), (e) => isBrigError(e, 'ref_too_large'));
  assert.deepEqual(fs.readdirSync(base), []);
});

test('[INV-4] files past the entry cap are skipped and reported; the ones before it are kept', async (t) => {
  const base = await tmpdir(t);
  const dest = path.join(base, 'ref');
  const lots = await tarOf([{ name: 'out/a-legit.txt', data: 'keep me' }, ...Array.from({ length: 20 }, (_, i) => ({ name: `out/m/e${String(i).padStart(2, '0')}`, data: '' }))]);
  const rep = await collectArchive(Readable.from([lots]), 'out', dest, { ...CAPS, maxEntries: 10 });
  assert.equal(rep.files.length, 10);
  assert.equal(rep.files[0]!.path, 'a-legit.txt');
  assert.deepEqual(rep.skipped.map((s) => s.reason), Array(11).fill('too_many_entries'));
  assert.equal(rep.skipped[0]!.path, 'm/e09');
  assert.equal(rep.skippedCount, 11);
  assert.equal(fs.readFileSync(path.join(dest, 'a-legit.txt'), 'utf8'), 'keep me');
  assert.deepEqual(fs.readdirSync(base), ['ref']);
});

test('[INV-4] the skip list is bounded; every skip is counted', async (t) => {
  const base = await tmpdir(t);
  const links = await tarOf(Array.from({ length: MAX_SKIP_RECORDS + 50 }, (_, i) => ({ name: `out/l${i}`, type: 'symlink' as const, linkname: '/etc/passwd' })));
  const rep = await collectArchive(Readable.from([links]), 'out', path.join(base, 'ref'), { ...CAPS, maxEntries: 10 });
  assert.equal(rep.skipped.length, MAX_SKIP_RECORDS);
  assert.equal(rep.skippedCount, MAX_SKIP_RECORDS + 50);
});

test('[INV-4] past the scan slack the rest of the archive is left unread, and what came before is kept', async (t) => {
  const base = await tmpdir(t);
  const dest = path.join(base, 'ref');
  // maxEntries 1 + SCAN_SLACK entries are read; the archive holds more (all empty files: 512 B each).
  const legit = await tarOf([{ name: 'out/a-legit.txt', data: 'kept' }]);
  const empties = emptyFilesArchive(Array.from({ length: SCAN_SLACK + 10 }, (_, i) => `out/z/${i}`));
  const archive = Readable.from((async function* () {
    yield legit.subarray(0, legit.length - 1024); // without its end-of-archive blocks
    yield* empties;
  })());
  const rep = await collectArchive(archive, 'out', dest, { ...CAPS, maxEntries: 1 });
  assert.deepEqual(rep.files.map((f) => f.path), ['a-legit.txt']);
  assert.equal(rep.skipped.at(-1)!.reason, 'too_many_entries');
  assert.equal(rep.skippedCount, SCAN_SLACK + 1, 'every entry read past the cap, plus the one that stopped the scan');
  assert.equal(fs.readFileSync(path.join(dest, 'a-legit.txt'), 'utf8'), 'kept');
});

test('an existing destination is refused, never merged into', async (t) => {
  const base = await tmpdir(t);
  const archive = await tarOf([{ name: 'out/a', data: 'a' }]);
  await assert.rejects(collectArchive(Readable.from([archive]), 'out', base, CAPS), (e) => isBrigError(e, 'invalid_input'));
});

// req: results:no-escape
test('[INV-4] names with newlines or terminal escapes are skipped, and reported escaped', async (t) => {
  const base = await tmpdir(t);
  const dest = path.join(base, 'ref');
  const archive = await tarOf([
    { name: 'out/', type: 'directory' },
    { name: 'out/line\nbreak.txt', data: 'x' },
    { name: 'out/\x1b[2Jclear.txt', data: 'x' },
    { name: 'out/a..b.txt', data: 'dots inside a name are just a name' },
  ]);
  const rep = await collectArchive(Readable.from([archive]), 'out', dest, CAPS);
  assert.deepEqual(rep.files.map((f) => f.path), ['a..b.txt']);
  assert.deepEqual(rep.skipped, [
    { path: 'out/line\\x0abreak.txt', reason: 'unsafe_name' },
    { path: 'out/\\x1b[2Jclear.txt', reason: 'unsafe_name' },
  ]);
  assert.ok(rep.skipped.every((s) => !/[\x00-\x1f]/.test(s.path)));
  assert.equal(printableName('a\tb'), 'a\\x09b');
});

// req: results:caps-refuse
test('[INV-4] a huge declared size is refused at the header even for a skipped entry', async (t) => {
  const base = await tmpdir(t);
  // Only the header is built: a reader that streamed the body would never finish.
  const header = tar.pack();
  header.entry({ name: 'out/bad\nname', size: 100 * 2 ** 30, type: 'file' }, () => undefined);
  const first: Buffer[] = [];
  for await (const c of header as unknown as AsyncIterable<Buffer>) {
    first.push(Buffer.from(c));
    break;
  }
  await assert.rejects(collectArchive(Readable.from(first), 'out', path.join(base, 'a'), CAPS), (e) => isBrigError(e, 'ref_too_large'));
  assert.deepEqual(fs.readdirSync(base), []);
});

test('[INV-4] a subtree deeper than the depth cap, or a path over the length cap, is skipped and reported once; its siblings are kept', async (t) => {
  const base = await tmpdir(t);
  const dest = path.join(base, 'ref');
  const chain = (n: number) => `out/nest/${Array(n).fill('d').join('/')}`;
  const deep = Array.from({ length: MAX_DEPTH + 20 }, (_, i) => ({ name: `${chain(i + 1)}/`, type: 'directory' as const }));
  const long = `out/long/${['x', 'y', 'z', 'w', 'v'].map((c) => c.repeat(250)).join('/')}`; // 1,263 bytes
  const archive = await tarOf([
    { name: 'out/', type: 'directory' },
    { name: 'out/a.txt', data: 'first' },
    ...deep,
    { name: `${chain(MAX_DEPTH + 20)}/bottom.txt`, data: 'lost' },
    { name: `${chain(MAX_DEPTH - 2)}/shallow-enough.txt`, data: 'kept' },
    { name: `${long}/`, type: 'directory' },
    { name: `${long}/f.txt`, data: 'lost too' },
    { name: 'out/z.txt', data: 'last' },
  ]);
  const rep = await collectArchive(Readable.from([archive]), 'out', dest, { ...CAPS, perRunBytes: 1 << 20, maxEntries: 1000 });
  assert.deepEqual(rep.files.map((f) => f.path), ['a.txt', `${chain(MAX_DEPTH - 2).slice(4)}/shallow-enough.txt`, 'z.txt']);
  assert.deepEqual(rep.skipped.map((s) => s.reason), ['too_deep', 'path_too_long']);
  assert.equal(rep.skipped[0]!.path, printableName(`${chain(MAX_DEPTH)}/`), 'the first directory past the cap stands for its subtree');
  assert.equal(rep.skippedCount, 21 + 1 + 2, 'every entry of both subtrees is counted (21 directories and a file, a directory and a file)');
  // Directories are made only as parents of files: the skipped nest leaves no empty husk.
  const walk = fs.readdirSync(dest, { recursive: true }).map(String);
  assert.ok(walk.every((p) => p.split(path.sep).length <= MAX_DEPTH), 'nothing deeper than the cap on disk');
  assert.ok(!walk.some((p) => p.startsWith('long')), 'the long-path subtree left nothing');
  assert.equal(fs.readFileSync(path.join(dest, 'z.txt'), 'utf8'), 'last');
});

// req: results:caps-refuse
test('[INV-4] the directories an output needs count against the per-run cap: empty files at the end of chains of their own are refused, not a free gigabyte', async (t) => {
  const base = await tmpdir(t);
  const chains = await tarOf(Array.from({ length: 100 }, (_, i) => ({ name: `out/${Array.from({ length: 10 }, (_, d) => `c${i}d${d}`).join('/')}/empty`, data: '' })));
  // 1,000 directories × 4 KiB = 4 MB of host directory blocks for 0 bytes of files.
  await assert.rejects(collectArchive(Readable.from([chains]), 'out', path.join(base, 'a'), { ...CAPS, perRunBytes: 1 << 20, maxEntries: 1000 }), (e) => isBrigError(e, 'ref_too_large') && /directories/.test(e.message));
  assert.deepEqual(fs.readdirSync(base), [], 'nothing left');
  // The same tree fits a cap that pays for its directories.
  const rep = await collectArchive(Readable.from([chains]), 'out', path.join(base, 'b'), { ...CAPS, perRunBytes: 8 << 20, maxEntries: 1000 });
  assert.equal(rep.files.length, 100);
});

/** Everything of one entry but the archive's end marker. */
async function entryBytes(e: Entry): Promise<Buffer> {
  const b = await tarOf([e]);
  return b.subarray(0, b.length - 1024);
}

/** The header of a file declaring `size` bytes, and nothing else. */
async function headerOf(name: string, size: number): Promise<Buffer> {
  const header = tar.pack();
  header.entry({ name, size, type: 'file' }, () => undefined);
  for await (const c of header as unknown as AsyncIterable<Buffer>) return Buffer.from(c);
  throw new Error('no header');
}

type Fake = Entry | { name: string; huge: number };

/**
 * An archive source like the jail's: each archive() is the tree from the start; a huge file's
 * body is zeros without end (a reader that streamed it would never finish); passOver replaces
 * it by brig's link, unless `stuck` (a jail that changed under the collection).
 */
function fakeSource(entries: Fake[], o: { stuck?: boolean } = {}): ArchiveSource & { opened: number; passed: string[] } {
  const passed: string[] = [];
  const src = {
    opened: 0,
    passed,
    archive: async () => {
      src.opened++;
      async function* gen(): AsyncGenerator<Buffer> {
        for (const e of entries) {
          if (!('huge' in e)) yield await entryBytes(e);
          else if (passed.includes(e.name) && !o.stuck) yield await entryBytes({ name: e.name, type: 'symlink', linkname: PASSED_OVER });
          else {
            yield await headerOf(e.name, e.huge);
            for (;;) yield Buffer.alloc(64 * 1024);
          }
        }
        yield Buffer.alloc(1024);
      }
      return Readable.from(gen());
    },
    passOver: async (name: string) => {
      passed.push(name);
    },
  };
  return src;
}

test('[INV-4] a file over the per-file cap is skipped (too_large) before any of its bytes is read; the archive is read again past it and the files before and after it are kept', async (t) => {
  const base = await tmpdir(t);
  const dest = path.join(base, 'ref');
  const src = fakeSource([{ name: 'out/a', data: 'alpha' }, { name: 'out/m-big', huge: 100 * 2 ** 30 }, { name: 'out/sub/', type: 'directory' }, { name: 'out/sub/c', data: 'gamma' }]);
  const rep = await collectArchive(src, 'out', dest, CAPS);
  assert.deepEqual(rep.files.map((f) => f.path), ['a', 'sub/c']);
  assert.deepEqual(rep.skipped, [{ path: 'm-big', reason: 'too_large' }]);
  assert.deepEqual(rep.tooLarge, [{ path: 'm-big', bytes: 100 * 2 ** 30 }]);
  assert.equal(rep.totalBytes, 10);
  assert.deepEqual([src.passed, src.opened], [['out/m-big'], 2]);
  assert.equal(fs.readFileSync(path.join(dest, 'sub/c'), 'utf8'), 'gamma');
  assert.deepEqual(fs.readdirSync(base), ['ref']);
});

test('[INV-4] over-cap files are passed over at most MAX_PASS_OVERS times, re-reading at most the per-run cap; past either the collection is refused whole', async (t) => {
  const base = await tmpdir(t);
  const many = fakeSource(Array.from({ length: MAX_PASS_OVERS + 1 }, (_, i) => ({ name: `out/big${String(i).padStart(2, '0')}`, huge: 2 ** 40 })));
  await assert.rejects(collectArchive(many, 'out', path.join(base, 'a'), CAPS), (e) => isBrigError(e, 'ref_too_large') && /more than 16 files/.test(e.message));
  assert.equal(many.passed.length, MAX_PASS_OVERS);
  const ok = fakeSource(Array.from({ length: MAX_PASS_OVERS }, (_, i) => ({ name: `out/big${String(i).padStart(2, '0')}`, huge: 2 ** 40 })));
  assert.equal((await collectArchive(ok, 'out', path.join(base, 'b'), CAPS)).tooLarge?.length, MAX_PASS_OVERS);
  // 4,000 bytes before each of two big files: the second pass-over would read 8,000 again, over a 4 KiB run cap.
  const heavy = fakeSource([...['a', 'b', 'c', 'd'].map((n) => ({ name: `out/${n}`, data: 'x'.repeat(1000) })), { name: 'out/e-big', huge: 2 ** 40 }, { name: 'out/f-big', huge: 2 ** 40 }]);
  await assert.rejects(collectArchive(heavy, 'out', path.join(base, 'c'), { ...CAPS, perRunBytes: 4096 }), (e) => isBrigError(e, 'ref_too_large') && /read again more than the per-run cap/.test(e.message));
  assert.deepEqual(fs.readdirSync(base), ['b']);
});

test('[INV-4] an over-cap file that cannot be passed over (a plain stream, a hostile name, a jail that changed) refuses the collection whole', async (t) => {
  const base = await tmpdir(t);
  const named = fakeSource([{ name: 'out/a', data: 'x' }, { name: 'out/bad\nname', huge: 2 ** 40 }]);
  await assert.rejects(collectArchive(named, 'out', path.join(base, 'a'), CAPS), (e) => isBrigError(e, 'ref_too_large') && /cannot be passed over/.test(e.message));
  assert.deepEqual(named.passed, []);
  const changed = fakeSource([{ name: 'out/a', data: 'x' }, { name: 'out/big', huge: 2 ** 40 }], { stuck: true });
  await assert.rejects(collectArchive(changed, 'out', path.join(base, 'b'), CAPS), (e) => isBrigError(e, 'ref_too_large') && /changed while it was collected/.test(e.message));
  assert.deepEqual(fs.readdirSync(base), []);
});

test('[INV-4] a redo finds the link an earlier collection left for a passed-over file and reports it too_large again', async (t) => {
  const base = await tmpdir(t);
  const archive = await tarOf([{ name: 'out/a', data: 'x' }, { name: 'out/big', type: 'symlink', linkname: PASSED_OVER }, { name: 'out/other', type: 'symlink', linkname: '/etc/passwd' }]);
  const rep = await collectArchive(Readable.from([archive]), 'out', path.join(base, 'ref'), CAPS);
  assert.deepEqual(rep.files.map((f) => f.path), ['a']);
  assert.deepEqual(rep.skipped, [{ path: 'big', reason: 'too_large' }, { path: 'other', reason: 'symlink' }]);
  assert.deepEqual(rep.tooLarge, [{ path: 'big' }]);
});
