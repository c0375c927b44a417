/**
 * The `brig` bundle's router (src/cli/thin.ts): which command lines it runs itself (list, ref
 * read, wait, asked for no help) and whether a daemon answers — a real unix socket that answers
 * the health probe, one that accepts and says nothing, a stale socket file nobody listens on,
 * and no file at all.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ApiClient } from '../../../src/light.js';
import { daemonAnswering, isThinCommand, thinVersion } from '../../../src/cli/thin.js';
import { openBrig } from '../../../src/cli/connect.js';
import { main } from '../../../src/cli/cli.js';
import { createRunRecord } from '../../../src/runs/record.js';

test('the thin commands are list, ref read and wait, without --help; every other line goes to the full CLI', () => {
  for (const argv of [['list'], ['list', '--json', '--all'], ['wait', 'r-1', '--json'], ['ref', 'read', 'ref_x', '--length', '8']]) assert.equal(isThinCommand(argv), true, argv.join(' '));
  for (const argv of [[], ['--version'], ['spawn', '--', 'list'], ['ref'], ['ref', 'list', 'r-1'], ['list', '--help'], ['wait', '-h'], ['lease', 'list'], ['listx']]) assert.equal(isThinCommand(argv), false, argv.join(' '));
});

test('a daemon answers only when its health probe does: one that accepts and says nothing, a stale socket file, a plain file or none is not one', async (t) => {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-thin-'));
  t.after(() => fs.promises.rm(dir, { recursive: true, force: true }));
  const sock = path.join(dir, 'brig.sock');
  assert.equal(await daemonAnswering(sock), undefined, 'no file');
  const seen: string[] = [];
  const server = net.createServer((c) => {
    seen.push('connection');
    c.once('data', (d) => {
      seen.push(d.toString('latin1').split('\r\n')[0]!);
      c.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 22\r\nConnection: close\r\n\r\n{"ok":true,"api":"v1"}');
    });
  });
  await new Promise<void>((r) => server.listen(sock, r));
  const api = await daemonAnswering(sock);
  assert.ok(api instanceof ApiClient, 'answering: its client');
  assert.deepEqual([api.socketPath, api.caller], [sock, 'cli'], 'the client the command is handed speaks for the CLI on that socket');
  assert.deepEqual(seen, ['connection', 'GET /v1/health HTTP/1.1'], 'one connection, one exchange: the health probe, no connect-only check before it');
  await new Promise<void>((r) => server.close(() => r()));
  // Something that accepts and closes is no daemon: the full CLI reads the home's files.
  const mute = net.createServer((c) => c.destroy());
  await new Promise<void>((r) => mute.listen(sock, r));
  assert.equal(await daemonAnswering(sock), undefined, 'accepts, never answers');
  await new Promise<void>((r) => mute.close(() => r()));
  // A daemon killed hard leaves its socket file behind, and a connect to it is refused.
  const stale = path.join(dir, 'stale.sock');
  spawnSync(process.execPath, ['-e', "require('net').createServer().listen(process.argv[1], () => process.kill(process.pid, 'SIGKILL'))", stale]);
  assert.ok(fs.statSync(stale).isSocket(), 'the killed listener left its socket file');
  assert.equal(await daemonAnswering(stale), undefined, 'stale socket');
  await fs.promises.writeFile(path.join(dir, 'plain'), '');
  assert.equal(await daemonAnswering(path.join(dir, 'plain')), undefined, 'a file that is no socket');
});

test('a command handed the daemon (CliIO.daemon) talks to it without probing it again: one request for `list`', async (t) => {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-thin-'));
  t.after(() => fs.promises.rm(dir, { recursive: true, force: true }));
  const sock = path.join(dir, 'brig.sock');
  const seen: string[] = [];
  const server = net.createServer((c) => {
    seen.push('connection');
    c.once('data', (d) => {
      seen.push(d.toString('latin1').split('\r\n')[0]!);
      c.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{"runs":[]}');
    });
  });
  await new Promise<void>((r) => server.listen(sock, r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  const io = { stdout: process.stdout, stderr: process.stderr, env: { BRIG_HOME: path.join(dir, 'elsewhere') }, isTTY: false, daemon: new ApiClient(sock, 'cli') };
  const brig = await openBrig(io);
  assert.equal(brig.mode, 'daemon');
  assert.deepEqual(await brig.list(), []);
  await brig.close();
  assert.deepEqual(seen, ['connection', 'GET /v1/runs HTTP/1.1'], 'the list request alone: no health probe, and the daemon handed over, not $BRIG_HOME\'s');
});

test('brig list through a daemon orders its rows without ICU collation (localeCompare builds a collator: ~17 ms of a thin start)', async (t) => {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-thin-'));
  t.after(() => fs.promises.rm(dir, { recursive: true, force: true }));
  const sock = path.join(dir, 'brig.sock');
  const rec = (id: string, at: string) => ({
    ...createRunRecord({ id, parent: null, callerId: 'operator', agent: 'default', kind: 'command', label: null, task: id, requestHash: `h-${id}`, now: new Date(at), timeoutMs: 60_000, maxSteps: 10, async: false, expectedOutputs: [], resumeOf: null }),
    status: 'ended' as const,
    endReason: 'completed' as const,
  });
  // Out of order on purpose: the CLI sorts what it is given.
  const body = JSON.stringify({ runs: [rec('r-000000000000000c', '2026-01-01T00:00:03.000Z'), rec('r-000000000000000a', '2026-01-01T00:00:01.000Z'), rec('r-000000000000000b', '2026-01-01T00:00:02.000Z')] });
  const server = net.createServer((c) => c.once('data', () => c.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)));
  await new Promise<void>((r) => server.listen(sock, r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  let out = '';
  const sink = { write: (c: string) => ((out += c), true) } as unknown as NodeJS.WritableStream;
  const collated: string[] = [];
  const localeCompare = String.prototype.localeCompare;
  String.prototype.localeCompare = function (this: string, ...a: Parameters<typeof localeCompare>) {
    collated.push(String(this));
    return localeCompare.apply(this, a);
  };
  try {
    assert.equal(await main(['list'], { stdout: sink, stderr: sink, env: {}, isTTY: false, daemon: new ApiClient(sock, 'cli') }), 0, out);
  } finally {
    String.prototype.localeCompare = localeCompare;
  }
  assert.deepEqual(out.trimEnd().split('\n').slice(1).map((l) => l.split(/\s+/)[0]), ['r-000000000000000a', 'r-000000000000000b', 'r-000000000000000c'], 'oldest first');
  assert.deepEqual(collated, [], 'no localeCompare on the way');
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
