/**
 * The `brig` bundle's router (src/cli/thin.ts): which command lines it runs itself (list, ref
 * read, wait, asked for no help) and whether a daemon listens — a real unix socket that accepts,
 * a stale socket file nobody listens on, and no file at all.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { daemonListening, isThinCommand, thinVersion } from '../../../src/cli/thin.js';

test('the thin commands are list, ref read and wait, without --help; every other line goes to the full CLI', () => {
  for (const argv of [['list'], ['list', '--json', '--all'], ['wait', 'r-1', '--json'], ['ref', 'read', 'ref_x', '--length', '8']]) assert.equal(isThinCommand(argv), true, argv.join(' '));
  for (const argv of [[], ['--version'], ['spawn', '--', 'list'], ['ref'], ['ref', 'list', 'r-1'], ['list', '--help'], ['wait', '-h'], ['lease', 'list'], ['listx']]) assert.equal(isThinCommand(argv), false, argv.join(' '));
});

test('a daemon listens only when its socket accepts: a stale socket file, a plain file or none is not one', async (t) => {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-thin-'));
  t.after(() => fs.promises.rm(dir, { recursive: true, force: true }));
  const sock = path.join(dir, 'brig.sock');
  assert.equal(await daemonListening(sock), false, 'no file');
  const server = net.createServer((c) => c.end());
  await new Promise<void>((r) => server.listen(sock, r));
  assert.equal(await daemonListening(sock), true, 'listening');
  await new Promise<void>((r) => server.close(() => r()));
  // A daemon killed hard leaves its socket file behind, and a connect to it is refused.
  const stale = path.join(dir, 'stale.sock');
  spawnSync(process.execPath, ['-e', "require('net').createServer().listen(process.argv[1], () => process.kill(process.pid, 'SIGKILL'))", stale]);
  assert.ok(fs.statSync(stale).isSocket(), 'the killed listener left its socket file');
  assert.equal(await daemonListening(stale), false, 'stale socket');
  await fs.promises.writeFile(path.join(dir, 'plain'), '');
  assert.equal(await daemonListening(path.join(dir, 'plain')), false, 'a file that is no socket');
});

test('brig --version is thin: package.json two levels above the entry (through a symlink); undefined when that is not brig’s', () => {
  const root = path.resolve(import.meta.dirname, '..', '..', '..');
  const version = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
  assert.equal(thinVersion(path.join(root, 'src', 'cli', 'bin.ts')), version);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-thin-version-'));
  try {
    fs.symlinkSync(path.join(root, 'src', 'cli', 'bin.ts'), path.join(dir, 'brig'));
    assert.equal(thinVersion(path.join(dir, 'brig')), version, 'a bin symlink is followed');
    fs.mkdirSync(path.join(dir, 'a', 'b'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'package.json'), '{"name":"other","version":"9.9.9"}');
    assert.equal(thinVersion(path.join(dir, 'a', 'b', 'x.js')), undefined, 'another package is not brig');
    assert.equal(thinVersion(path.join(dir, 'missing', 'x', 'y.js')), undefined);
    assert.equal(thinVersion(''), undefined, 'no entry path');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
