/**
 * The child image's cache by file identity: a remembered hash or probe output is used only while
 * the file it came from is unchanged (any write moves its ctime), and a cache that is missing,
 * corrupt or of another version is empty — never an error, never a wrong tag.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ImageCache } from '../../../src/jail/docker/image-cache.js';
import { fingerprint, planChildImage } from '../../../src/jail/docker/image.js';

function tmp(t: { after: (fn: () => void) => void }): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-imgcache-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}
const sha = (s: string) => crypto.createHash('sha256').update(s).digest('hex');

test('a file is hashed again exactly when its identity changed, and the saved cache serves the next process', async (t) => {
  const d = tmp(t);
  const f = path.join(d, 'lib.so');
  const file = path.join(d, 'cache.json');
  fs.writeFileSync(f, 'one');
  const a = new ImageCache(file);
  assert.equal(await a.contentSha(f), sha('one'));
  await a.save();
  assert.ok(fs.existsSync(file));
  assert.equal((fs.statSync(file).mode & 0o777).toString(8), '600');
  // A second process: the same content is not read (proven by planting a wrong remembered hash
  // under the file's true identity: the cache is trusted while the identity holds)…
  const planted = JSON.parse(fs.readFileSync(file, 'utf8')) as { files: Record<string, { id: string; sha: string }> };
  planted.files[f]!.sha = 'remembered';
  fs.writeFileSync(file, JSON.stringify(planted));
  assert.equal(await new ImageCache(file).contentSha(f), 'remembered');
  // …and any write to the file (same size, mtime set back) moves its ctime: hashed again.
  const st = fs.statSync(f);
  fs.writeFileSync(f, 'two');
  fs.utimesSync(f, st.atime, st.mtime);
  assert.equal(await new ImageCache(file).contentSha(f), sha('two'));
});

test('a probe runs again when one of its inputs changed; a corrupt cache is empty', async (t) => {
  const d = tmp(t);
  const bin = path.join(d, 'busybox');
  const file = path.join(d, 'cache.json');
  fs.writeFileSync(bin, 'v1');
  let runs = 0;
  const probe = (c: ImageCache) => c.probe('applets', [bin], async () => [`run ${++runs}`]);
  const c = new ImageCache(file);
  assert.deepEqual(await probe(c), ['run 1']);
  await c.save();
  assert.deepEqual(await probe(new ImageCache(file)), ['run 1'], 'remembered');
  fs.appendFileSync(bin, 'x');
  assert.deepEqual(await probe(new ImageCache(file)), ['run 2'], 'the binary changed');
  fs.writeFileSync(file, '{not json');
  assert.deepEqual(await probe(new ImageCache(file)), ['run 3'], 'a corrupt cache is empty');
});

test('the child image tag is the same with and without the cache', async (t) => {
  const d = tmp(t);
  const runtime = path.join(d, 'child');
  fs.mkdirSync(runtime);
  fs.writeFileSync(path.join(runtime, 'runtime.js'), 'export const v = 1;\n');
  const src = { nodePath: fs.realpathSync(process.execPath), busyboxPath: '/bin/busybox', childRuntimeDir: runtime };
  const plain = await fingerprint(await planChildImage(src));
  const cache = new ImageCache(path.join(d, 'cache.json'));
  assert.equal(await fingerprint(await planChildImage(src, cache), cache), plain);
  await cache.save();
  const again = new ImageCache(path.join(d, 'cache.json'));
  assert.equal(await fingerprint(await planChildImage(src, again), again), plain, 'from the saved cache');
  fs.writeFileSync(path.join(runtime, 'runtime.js'), 'export const v = 2;\n');
  const later = new ImageCache(path.join(d, 'cache.json'));
  assert.notEqual(await fingerprint(await planChildImage(src, later), later), plain, 'a changed runtime file changes the tag through the cache too');
});
