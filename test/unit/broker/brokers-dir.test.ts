/**
 * [INV-2] The only host path of brig's own mounted into a jail — the run's broker socket
 * directory — lives under a runtime directory (/var/lib/brig/run/<hash> for root), never under the
 * home (a bind source under /root is a sensitive host path, CIS Docker §5.5). One per home,
 * derived from the home alone so a restarted supervisor finds its reattached children's
 * sockets; private (0700, ours) or refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { brigPaths, brokersDirFor } from '../../../src/config/index.js';
import { ensurePrivateDirs } from '../../../src/broker/index.js';

test('[INV-2] brokers: a runtime directory per home, outside it, deterministic, and short enough for a socket path', () => {
  const home = '/root/.brig';
  const root = brokersDirFor(home, 0);
  assert.match(root, /^\/var\/lib\/brig\/run\/[0-9a-f]{16}$/);
  assert.match(brokersDirFor(home, 1000), /^\/tmp\/brig-1000\/[0-9a-f]{16}$/);
  assert.equal(brokersDirFor(home, 0), root, 'the same home always gets the same directory (a restart reattaches)');
  assert.equal(brokersDirFor('/root/./.brig/', 0), root, 'as the home resolves');
  assert.notEqual(brokersDirFor('/root/.brig2', 0), root, 'two homes never share one');
  assert.notEqual(brokersDirFor('/home/a/.brig', 0), brokersDirFor('/home/b/.brig', 0));
  const home2 = path.join(os.tmpdir(), 'some-home');
  const p = brigPaths(home2);
  assert.equal(p.brokers, brokersDirFor(home2));
  assert.ok(!p.brokers.startsWith(home2), 'not under the home');
  for (const dir of [brokersDirFor('/x'.repeat(200), 0), brokersDirFor('/x'.repeat(200), 4294967294)]) {
    const sock = path.join(dir, `r-${'f'.repeat(16)}`, 'broker.sock');
    assert.ok(Buffer.byteLength(sock) <= 107, sock);
  }
});

test('ensurePrivateDirs: creates 0700, tightens a looser mode, refuses a symlink or another uid\'s directory', async (t) => {
  const base = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-private-'));
  t.after(() => fs.promises.rm(base, { recursive: true, force: true }));
  const a = path.join(base, 'a');
  const b = path.join(a, 'b');
  await ensurePrivateDirs(a, b);
  for (const d of [a, b]) assert.equal(fs.statSync(d).mode & 0o777, 0o700);
  fs.chmodSync(b, 0o755);
  await ensurePrivateDirs(a, b);
  assert.equal(fs.statSync(b).mode & 0o777, 0o700, 'a looser mode is tightened');

  const target = path.join(base, 'target');
  fs.mkdirSync(target, { mode: 0o700 });
  const link = path.join(base, 'link');
  fs.symlinkSync(target, link);
  await assert.rejects(ensurePrivateDirs(link), (e: { code?: string }) => e.code === 'invalid_input');

  if (process.getuid?.() === 0) {
    const theirs = path.join(base, 'theirs');
    fs.mkdirSync(theirs, { mode: 0o700 });
    fs.chownSync(theirs, 1234, 1234);
    await assert.rejects(ensurePrivateDirs(theirs), (e: { code?: string; message?: string }) => e.code === 'invalid_input' && /uid 1234/.test(e.message ?? ''));
  }
});
