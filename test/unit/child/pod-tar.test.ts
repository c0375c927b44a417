/**
 * The pod's second outputs reader (src/child/pod-tar.ts) on a real tree, beside the real busybox
 * tar the pod's first pass runs, read by brig's real collector (jail/docker/collect.ts): it walks
 * the tree in busybox tar's order (the collector checks it at the entry passed over), writes a tar
 * the collector takes as it takes busybox's, and a file over the per-file cap is passed over —
 * the first pass busybox's, the next ones pod-tar's with that entry a link to PASSED_OVER — with
 * the rest kept, as on Docker. A 1 GiB sparse file is announced at its size and never read.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { PASSED_OVER as POD_PASSED_OVER, podTar } from '../../../src/child/pod-tar.js';
import tar from 'tar-stream';
import { collectArchive, PASSED_OVER, type ArchiveSource } from '../../../src/jail/docker/collect.js';

const CAPS = { perFileBytes: 64 * 1024, perRunBytes: 8 * 1024 * 1024, maxEntries: 1000 };

function tree(t: { after(fn: () => void): void }, sparse = false): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-pod-tar-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const out = path.join(root, 'out');
  fs.mkdirSync(path.join(out, 'sub', 'deeper'), { recursive: true });
  fs.writeFileSync(path.join(out, 'a.txt'), 'abc');
  fs.writeFileSync(path.join(out, 'sub', 'deeper', 'b.bin'), Buffer.alloc(10_000, 7));
  fs.writeFileSync(path.join(out, `${'n'.repeat(150)}.txt`), 'long name');
  fs.writeFileSync(path.join(out, 'big.bin'), Buffer.alloc(100_000, 1));
  fs.writeFileSync(path.join(out, 'z-after.txt'), 'after the big one');
  fs.symlinkSync('/etc/passwd', path.join(out, 'passwd'));
  execFileSync('mkfifo', [path.join(out, 'pipe')]);
  if (sparse) {
    // A sparse GiB: its size is announced, its bytes never read.
    const fd = fs.openSync(path.join(out, 'sparse.img'), 'w');
    fs.ftruncateSync(fd, 1024 ** 3);
    fs.closeSync(fd);
  }
  return root;
}

/** busybox tar's archive of root/out, as the pod's first pass streams it (null: no busybox here). */
function busyboxTar(root: string): NodeJS.ReadableStream {
  return spawn('busybox', ['tar', '-c', '-f', '-', 'out'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] }).stdout;
}

const hasBusybox = (() => {
  try {
    execFileSync('busybox', ['tar', '--help'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** An ArchiveSource as the Kubernetes driver's collect makes it: busybox tar first, podTar (with the entries passed over) after. */
function source(root: string, passes: string[][], first: 'busybox' | 'pod-tar' = 'busybox'): ArchiveSource {
  const passed: string[] = [];
  return {
    archive: async () => {
      passes.push([...passed]);
      if (passed.length === 0 && first === 'busybox') return busyboxTar(root);
      const s = new PassThrough({ highWaterMark: 64 * 1024 });
      void podTar(root, 'out', new Set(passed), s, () => {}).finally(() => s.end());
      return s;
    },
    passOver: async (name) => void passed.push(name),
  };
}

/** The entries of an archive, in order: name and type. */
async function entries(stream: NodeJS.ReadableStream): Promise<string[]> {
  const x = tar.extract();
  const out: string[] = [];
  x.on('entry', (h, s, next) => {
    out.push(`${h.type} ${h.name}`);
    s.on('end', next);
    s.resume();
  });
  const done = new Promise<void>((r) => x.on('finish', () => r()));
  stream.pipe(x);
  await done;
  return out;
}

test('pod-tar walks the tree in busybox tar\'s order, entry for entry (the collector checks the order at the entry passed over)', async (t) => {
  if (!hasBusybox) return t.skip('busybox is not installed here: the order is compared with the image\'s own tar in the k8s tier');
  const root = tree(t);
  // More siblings than a sort would leave in place, and a socket (busybox leaves it out).
  for (let i = 0; i < 40; i++) fs.writeFileSync(path.join(root, 'out', 'sub', `f-${(i * 7919) % 97}.txt`), String(i));
  const s = new PassThrough();
  void podTar(root, 'out', new Set(), s, () => {}).finally(() => s.end());
  const ours = await entries(s);
  const theirs = await entries(busyboxTar(root));
  assert.deepEqual(ours.map((e) => e.replace(/\/$/, '')), theirs.map((e) => e.replace(/\/$/, '')));
  assert.ok(ours.length > 45, `${ours.length} entries compared`);
});

test('pod-tar writes what the collector takes as it takes busybox tar: files, dirs, a long name; a link and a fifo skipped, not followed or opened', async (t) => {
  const root = tree(t);
  const passes: string[][] = [];
  const dest = path.join(root, 'dest');
  const report = await collectArchive(source(root, passes, 'pod-tar'), 'out', dest, { ...CAPS, perFileBytes: 1024 * 1024 }, {});
  const files = report.files.map((f) => [f.path, f.bytes]).sort();
  assert.deepEqual(files, [['a.txt', 3], ['big.bin', 100_000], [`${'n'.repeat(150)}.txt`, 9], ['sub/deeper/b.bin', 10_000], ['z-after.txt', 17]].sort());
  assert.deepEqual(report.skipped.map((s) => [s.path, s.reason]).sort(), [['passwd', 'symlink'], ['pipe', 'fifo']]);
  assert.equal(fs.readFileSync(path.join(dest, 'sub', 'deeper', 'b.bin')).equals(Buffer.alloc(10_000, 7)), true, 'bytes exact');
  assert.equal(passes.length, 1, 'one pass');
});

test('a file over the per-file cap is passed over (busybox tar first, then pod-tar with it a link to PASSED_OVER), the rest kept; a sparse GiB is never read', async (t) => {
  if (!hasBusybox) return t.skip('busybox is not installed here: the k8s tier passes over in a real pod');
  const root = tree(t, true);
  const passes: string[][] = [];
  const dest = path.join(root, 'dest');
  assert.equal(POD_PASSED_OVER, PASSED_OVER, 'one string on both ends');
  const report = await collectArchive(source(root, passes), 'out', dest, CAPS, {});
  assert.deepEqual(report.files.map((f) => f.path).sort(), ['a.txt', `${'n'.repeat(150)}.txt`, 'sub/deeper/b.bin', 'z-after.txt'].sort(), 'everything else is kept');
  assert.deepEqual(report.tooLarge?.map((x) => x.path).sort(), ['big.bin', 'sparse.img']);
  assert.equal(report.tooLarge?.find((x) => x.path === 'sparse.img')?.bytes, 1024 ** 3, 'announced at its size');
  assert.equal(passes.length, 3, 'read again once per file passed over');
  assert.deepEqual([passes[0], passes[1]!.length, [...passes[2]!].sort()], [[], 1, ['out/big.bin', 'out/sparse.img']], 'each time without the bytes of those passed over before');
});
