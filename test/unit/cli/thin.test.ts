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
import { daemonListening, isThinCommand } from '../../../src/cli/thin.js';

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
