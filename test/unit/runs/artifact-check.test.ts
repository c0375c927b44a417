import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { checkArtifact } from '../../../src/runs/artifact-check.js';

/**
 * Artifacts are bind-mounted read-only, but Docker 20.10's binds are not recursively
 * read-only and carry sockets: a tree with a submount, a socket, a device or a fifo, and any
 * system path, are refused before a run exists. Real sockets, fifos and a real tmpfs mount.
 */

function tmp(t: { after: (fn: () => void) => void }): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-art-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

const code = async (p: string) => {
  const r = await checkArtifact(p);
  return r.ok ? 'ok' : `${r.error.code}: ${r.error.message}`;
};

test('a plain file or tree of files is accepted', async (t) => {
  const d = tmp(t);
  fs.mkdirSync(path.join(d, 'src', 'deep'), { recursive: true });
  fs.writeFileSync(path.join(d, 'src', 'deep', 'a.ts'), 'x');
  assert.equal(await code(d), 'ok');
  assert.equal(await code(path.join(d, 'src', 'deep', 'a.ts')), 'ok');
});

test('system paths are refused, also through a symlink', async (t) => {
  for (const p of ['/', '/etc', '/run', '/var/run', '/proc/self', '/sys/kernel', '/dev']) assert.match(await code(p), /artifact_missing: .*system path/, p);
  const d = tmp(t);
  fs.symlinkSync('/etc', path.join(d, 'innocent'));
  assert.match(await code(path.join(d, 'innocent')), /real path \/etc is a system path/);
});

test('a tree holding a socket or a fifo is refused (the engine socket would be the whole host)', async (t) => {
  const d = tmp(t);
  fs.mkdirSync(path.join(d, 'sub'));
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(path.join(d, 'sub', 'engine.sock'), () => r()));
  t.after(() => srv.close());
  assert.match(await code(d), /sub\/engine\.sock is a socket/);
  const f = tmp(t);
  execFileSync('mkfifo', [path.join(f, 'pipe')]);
  assert.match(await code(f), /pipe is a fifo/);
});

test('a tree with another filesystem mounted under it is refused (binds are not recursively read-only)', async (t) => {
  if (process.getuid?.() !== 0) return t.skip('mounting a tmpfs needs root (CI runs as root)');
  const d = tmp(t);
  const sub = path.join(d, 'scratch');
  fs.mkdirSync(sub);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'brig-test', sub]);
  try {
    assert.match(await code(d), /scratch is another mount/);
  } finally {
    execFileSync('umount', [sub]);
  }
});
