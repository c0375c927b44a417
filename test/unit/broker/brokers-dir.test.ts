/**
 * [INV-2] The only host path of brig's own mounted into a jail — the run's broker socket
 * directory — lives under a runtime directory (/var/lib/brig/run/<hash> for root), never under the
 * home (a bind source under /root is a sensitive host path, CIS Docker §5.5). One per home,
 * derived from the home (and, for another uid, $XDG_RUNTIME_DIR) so a restarted supervisor
 * finds its reattached children's sockets; private (0700, ours) or refused; for another uid,
 * never a path another local user can take first.
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
  assert.match(brokersDirFor(home, 1000, {}), /^\/root\/\.brig\/run\/[0-9a-f]{16}$/, 'another uid without $XDG_RUNTIME_DIR: under its (private) home');
  assert.equal(brokersDirFor(home, 0), root, 'the same home always gets the same directory (a restart reattaches)');
  assert.equal(brokersDirFor('/root/./.brig/', 0), root, 'as the home resolves');
  assert.notEqual(brokersDirFor('/root/.brig2', 0), root, 'two homes never share one');
  assert.notEqual(brokersDirFor('/home/a/.brig', 0), brokersDirFor('/home/b/.brig', 0));
  const home2 = path.join(os.tmpdir(), 'some-home');
  const p = brigPaths(home2);
  assert.equal(p.brokers, brokersDirFor(home2));
  if (process.getuid?.() === 0) assert.ok(!p.brokers.startsWith(home2), 'root\'s: not under the home');
  const sock = path.join(brokersDirFor('/x'.repeat(200), 0), `r-${'f'.repeat(16)}`, 'broker.sock');
  assert.ok(Buffer.byteLength(sock) <= 107, sock);
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

/** A uid that is not root: ours when we are not root, else a made-up one we chown to. */
const me = process.getuid?.() ?? 0;
const USER = me === 0 ? 4242 : me;
const own = (p: string) => {
  if (me === 0) fs.chownSync(p, USER, USER);
};
const SOCKET_TAIL = `/r-${'f'.repeat(16)}/broker.sock`;

async function scratch(t: { after: (fn: () => void) => void }): Promise<string> {
  const d = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-rt-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

test('[INV-2] a non-root supervisor: a local user who made /tmp/brig-<uid> first does not get its sockets, nor blocks it', async (t) => {
  const squat = `/tmp/brig-${USER}`;
  const mine = !fs.existsSync(squat);
  if (mine) {
    fs.mkdirSync(squat, { mode: 0o777 });
    t.after(() => fs.rmSync(squat, { recursive: true, force: true }));
  }
  const home = path.join(await scratch(t), '.brig');
  const dir = brokersDirFor(home, USER, {});
  assert.ok(!dir.startsWith(`${squat}/`), `the brokers directory ${dir} is not under the guessable /tmp/brig-${USER}`);
  assert.equal(dir, path.join(home, 'run', path.basename(dir)), 'a private directory under the home');
});

test('[INV-2] a non-root supervisor uses $XDG_RUNTIME_DIR when it is a 0700 directory of its own; not a looser, foreign or linked one', async (t) => {
  const base = await scratch(t);
  const home = path.join(base, '.brig');
  const xdg = path.join(base, 'xdg');
  fs.mkdirSync(xdg, { mode: 0o700 });
  own(xdg);
  const dir = brokersDirFor(home, USER, { XDG_RUNTIME_DIR: xdg });
  assert.match(dir, new RegExp(`^${xdg}/brig/[0-9a-f]{16}$`));
  assert.equal(brokersDirFor(home, USER, { XDG_RUNTIME_DIR: xdg }), dir, 'the same home always gets the same directory');
  const underHome = path.join(home, 'run', path.basename(dir));
  fs.chmodSync(xdg, 0o755);
  assert.equal(brokersDirFor(home, USER, { XDG_RUNTIME_DIR: xdg }), underHome, 'a looser mode: not used');
  fs.chmodSync(xdg, 0o700);
  assert.equal(brokersDirFor(home, USER + 1, { XDG_RUNTIME_DIR: xdg }).startsWith(xdg), false, 'another uid\'s: not used');
  const link = path.join(base, 'xdg-link');
  fs.symlinkSync(xdg, link);
  assert.equal(brokersDirFor(home, USER, { XDG_RUNTIME_DIR: link }), underHome, 'a symlink: not used');
  assert.equal(brokersDirFor(home, USER, { XDG_RUNTIME_DIR: 'relative/dir' }), underHome, 'a relative path: not used');
  assert.equal(brokersDirFor(home, USER, { XDG_RUNTIME_DIR: path.join(base, 'gone') }), underHome, 'a missing one: not used');
});

test('[INV-2] a non-root supervisor whose home is too long for a socket path gets a random private directory under /tmp, recorded in the home', async (t) => {
  const base = await scratch(t);
  const home = path.join(base, 'h'.repeat(100), '.brig');
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  const dir = brokersDirFor(home, USER, {});
  const parent = path.dirname(dir);
  t.after(() => fs.rmSync(parent, { recursive: true, force: true }));
  assert.match(parent, /^\/tmp\/brig-[A-Za-z0-9]{6}$/);
  assert.notEqual(parent, `/tmp/brig-${USER}`, 'not a name anyone can guess');
  assert.ok(Buffer.byteLength(dir + SOCKET_TAIL) <= 107, dir);
  const st = fs.lstatSync(parent);
  assert.ok(st.isDirectory() && (st.mode & 0o777) === 0o700);
  own(parent);
  assert.equal(brokersDirFor(home, USER, {}), dir, 'the recorded directory is used again (a restart reattaches)');
  // Gone (a reboot cleaned /tmp), or put back by someone else: a fresh one, never theirs.
  fs.rmSync(parent, { recursive: true });
  fs.mkdirSync(parent, { mode: 0o777 });
  const again = brokersDirFor(home, USER, {});
  t.after(() => fs.rmSync(path.dirname(again), { recursive: true, force: true }));
  assert.notEqual(path.dirname(again), parent);
  assert.match(path.dirname(again), /^\/tmp\/brig-[A-Za-z0-9]{6}$/);
  // An XDG directory too long for a socket path is passed over the same way.
  const longXdg = path.join(base, 'x'.repeat(70));
  fs.mkdirSync(longXdg, { mode: 0o700 });
  own(longXdg);
  const short = path.join(base, '.brig2');
  assert.equal(brokersDirFor(short, USER, { XDG_RUNTIME_DIR: longXdg }).startsWith(longXdg), false);
});

test('[INV-2] a non-root supervisor keeps its runtime directory across a restart with another environment (the choice is recorded in the home)', (t) => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-rt-'));
  const xdg = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-xdg-'));
  t.after(() => {
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(xdg, { recursive: true, force: true });
  });
  fs.chmodSync(home, 0o700);
  fs.chmodSync(xdg, 0o700);
  // The XDG directory is the supervisor's uid's own (as root here: given to a made-up uid).
  const uid = process.getuid!() === 0 ? 4242 : process.getuid!();
  if (process.getuid!() === 0) fs.chownSync(xdg, uid, uid);
  const first = brokersDirFor(home, uid, { XDG_RUNTIME_DIR: xdg });
  assert.equal(path.dirname(first), path.join(xdg, 'brig'));
  // Restarted by a service manager with no XDG_RUNTIME_DIR: the same directory, not the home's.
  assert.equal(brokersDirFor(home, uid, {}), first);
});
