/**
 * util/atomic-file.ts, the one atomic write every store uses: what a crash could show is
 * tested by what can be observed without pulling the plug — a concurrent reader only ever
 * sees a whole version, a failure at any step leaves the old target and no temp, the target
 * gets exactly the mode asked for, a symlink at the target is replaced, never written through.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { commitTemp, tempPathFor, writeFileAtomic, writeFileAtomicSync } from '../../../src/util/atomic-file.js';

async function tmpdir(t: import('node:test').TestContext): Promise<string> {
  const d = await fsp.mkdtemp(path.join(os.tmpdir(), 'brig-atomic-'));
  t.after(() => fsp.rm(d, { recursive: true, force: true }));
  return d;
}

const variants = [
  ['async', writeFileAtomic],
  ['sync', async (...a: Parameters<typeof writeFileAtomicSync>) => writeFileAtomicSync(...a)],
] as const;

for (const [name, write] of variants) {
  // req: results:atomic
  test(`[INV-4] ${name}: a concurrent reader sees the old content or the new, whole, never a mix or a cut`, async (t) => {
    const d = await tmpdir(t);
    const file = path.join(d, 'record.json');
    const version = (k: number) => Buffer.alloc(256 * 1024 + k, 0x41 + (k % 26));
    await write(file, version(0));
    let stop = false;
    let reads = 0;
    const reader = (async () => {
      while (!stop) {
        const got = await fsp.readFile(file);
        reads++;
        const k = got.length - 256 * 1024;
        assert.ok(k >= 0 && k < 40, `a read of ${got.length} bytes is no version`);
        assert.ok(got.equals(version(k)), `a read of version ${k} is not whole`);
      }
    })();
    for (let k = 1; k < 40; k++) {
      await write(file, version(k));
      await new Promise((r) => setImmediate(r));
    }
    stop = true;
    await reader;
    assert.ok(reads > 0);
    assert.ok((await fsp.readFile(file)).equals(version(39)));
    assert.deepEqual(await fsp.readdir(d), ['record.json'], 'no temp left beside it');
  });

  // req: results:atomic
  test(`[INV-4] ${name}: a failed write leaves the old target whole and no temp file`, async (t) => {
    const d = await tmpdir(t);
    const file = path.join(d, 'manifest.json');
    await write(file, 'old');
    // The write itself fails (not data): the temp was made and must go.
    await assert.rejects(write(file, 42 as unknown as string));
    assert.equal(await fsp.readFile(file, 'utf8'), 'old');
    assert.deepEqual(await fsp.readdir(d), ['manifest.json']);
    // The rename fails (a non-empty directory is in the way).
    const blocked = path.join(d, 'blocked');
    await fsp.mkdir(blocked);
    await fsp.writeFile(path.join(blocked, 'x'), 'x');
    await assert.rejects(write(blocked, 'new'));
    assert.deepEqual((await fsp.readdir(d)).sort(), ['blocked', 'manifest.json']);
    assert.deepEqual(await fsp.readdir(blocked), ['x']);
    // The directory is missing: nothing is made anywhere.
    await assert.rejects(write(path.join(d, 'nope', 'f'), 'new'), /ENOENT/);
    assert.deepEqual((await fsp.readdir(d)).sort(), ['blocked', 'manifest.json']);
  });

  test(`${name}: the target gets exactly the mode asked for (default 0600), whatever the umask or the old file's`, async (t) => {
    const d = await tmpdir(t);
    const file = path.join(d, 'f');
    const old = process.umask(0o077);
    try {
      await write(file, 'a', { mode: 0o644 });
      assert.equal(fs.statSync(file).mode & 0o777, 0o644, 'umask 077 does not narrow it');
    } finally {
      process.umask(old);
    }
    await write(file, 'b');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600, 'the default, not the old file\'s 0644');
    await write(file, 'c', { mode: 0o444 });
    assert.equal(fs.statSync(file).mode & 0o777, 0o444);
    await write(file, 'd', { mode: 0o4755 & 0o777 });
    assert.equal(fs.statSync(file).mode & 0o7777, 0o755);
    assert.equal(await fsp.readFile(file, 'utf8'), 'd');
  });

  // req: results:no-symlink
  test(`[INV-4] ${name}: a symlink at the target is replaced, the file it points to is never written`, async (t) => {
    const d = await tmpdir(t);
    const victim = path.join(d, 'victim');
    await fsp.writeFile(victim, 'untouched');
    const file = path.join(d, 'link');
    await fsp.symlink(victim, file);
    await write(file, 'new');
    assert.equal(await fsp.readFile(victim, 'utf8'), 'untouched');
    assert.ok((await fsp.lstat(file)).isFile());
    assert.equal(await fsp.readFile(file, 'utf8'), 'new');
  });
}

test('tempPathFor: a hidden random sibling in the same directory', () => {
  const a = tempPathFor('/x/y/refs.json');
  const b = tempPathFor('/x/y/refs.json');
  assert.equal(path.dirname(a), '/x/y');
  assert.match(path.basename(a), /^\.tmp-refs\.json-[0-9a-f]{12}$/);
  assert.notEqual(a, b);
});

test('commitTemp: renames a caller-written temp into place, removes it when the rename fails', async (t) => {
  const d = await tmpdir(t);
  const file = path.join(d, 'big.txt');
  const tmp = tempPathFor(file);
  await fsp.writeFile(tmp, 'streamed', { flag: 'wx' });
  await commitTemp(tmp, file);
  assert.equal(await fsp.readFile(file, 'utf8'), 'streamed');
  const tmp2 = tempPathFor(file);
  await fsp.writeFile(tmp2, 'x', { flag: 'wx' });
  await assert.rejects(commitTemp(tmp2, path.join(d, 'missing-dir', 'f')));
  assert.deepEqual(await fsp.readdir(d), ['big.txt']);
});
