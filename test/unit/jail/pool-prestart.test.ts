/**
 * Agent-ready warm slots (issue 26), without an engine: which specs a pre-started runtime may
 * serve, the words the pool and the in-jail runtime share (pinned to each other), the shapes'
 * flavour, and the waiter's pre-start run end to end under the static busybox the child image
 * holds — the runtime started with exactly its three fixed variables and the cold path's
 * umask, ready before the waiter, its go only after the run's files are unpacked and the nonce
 * checked. (The reaped assignment itself kills every other process: it runs only in a jail,
 * test/integration/agents/agent-prestart.test.ts.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readKeptShapes, shapeKey, PoolShapes } from '../../../src/jail/docker/pool-shapes.js';
import { AGENT_RUNTIME_ARGV, assignmentHeader, childEnv, PRESTART_ARGV, PRESTART_NODE_FLAGS, PRESTART_GO, PRESTART_READY, prestartable, RUN_ENV, runEnvInput, waiterScript } from '../../../src/jail/docker/pool-waiter.js';
import { inputsArchive } from '../../../src/jail/docker/docker-jail.js';
import { CHILD_PATHS } from '../../../src/runs/launch.js';
import { PATHS } from '../../../src/child/paths.js';
import { PRESTART_FLAG, PRESTART_GO as CHILD_GO, PRESTART_READY as CHILD_READY, applyEnv, factsHold, parseRunEnv } from '../../../src/child/agent/prestart.js';

const NONCE = '0123456789abcdef0123456789abcdef';
const BUSYBOX = '/bin/busybox';

test('the pool and the in-jail runtime speak the same words: the cold agent argv, the flag, the ready line, the go, the env file', () => {
  assert.deepEqual(AGENT_RUNTIME_ARGV, [CHILD_PATHS.node, CHILD_PATHS.agentRuntime]);
  // The cold runtime's node and script, with V8 flags only between them (nothing that changes what runs).
  assert.deepEqual(PRESTART_ARGV, [AGENT_RUNTIME_ARGV[0], ...PRESTART_NODE_FLAGS, AGENT_RUNTIME_ARGV[1], PRESTART_FLAG]);
  assert.deepEqual(PRESTART_NODE_FLAGS, ['--no-lazy']);
  assert.equal(PRESTART_READY, CHILD_READY);
  assert.equal(`SIG${PRESTART_GO}`, CHILD_GO);
  assert.equal(`${CHILD_PATHS.workspace}/${RUN_ENV}`, PATHS.env);
});

test('prestartable: exactly the cold agent argv, and no variable node reads as it starts', () => {
  const env = { BRIG_RUN_ID: 'r-1', HOME: '/workspace' };
  assert.equal(prestartable({ argv: [...AGENT_RUNTIME_ARGV], env }), true);
  assert.equal(prestartable({ argv: [...AGENT_RUNTIME_ARGV], env: { ...env, GITHUB_TOKEN: 'placeholder' } }), true, 'a credential placeholder is applied after the go');
  assert.equal(prestartable({ argv: [CHILD_PATHS.node, CHILD_PATHS.runtime], env }), false, 'a script child');
  assert.equal(prestartable({ argv: [CHILD_PATHS.node, '/opt/brig/child/netrelay.js', '--', ...AGENT_RUNTIME_ARGV], env }), false, 'egress: the relay runs first');
  assert.equal(prestartable({ argv: [...AGENT_RUNTIME_ARGV, '--x'], env }), false);
  for (const k of ['NODE_OPTIONS', 'NODE_EXTRA_CA_CERTS', 'UV_THREADPOOL_SIZE', 'LD_PRELOAD', 'LC_ALL', 'LANG', 'TZ', 'OPENSSL_CONF', 'SSL_CERT_FILE']) {
    assert.equal(prestartable({ argv: [...AGENT_RUNTIME_ARGV], env: { ...env, [k]: 'x' } }), false, k);
  }
});

test('runEnvInput: the run\'s environment as the cold container gets it, 0400, read back by the runtime as is', () => {
  const spec = { env: { BRIG_RUN_ID: 'r-1', HOME: '/workspace', ODD: "it's $(id)\nline" } };
  const input = runEnvInput(spec);
  assert.equal(input.path, RUN_ENV);
  assert.equal(input.mode, 0o400);
  assert.deepEqual(parseRunEnv(String(input.data)), childEnv(spec));
  assert.deepEqual(childEnv(spec), { HOSTNAME: 'brig', BRIG_RUN_ID: 'r-1', HOME: '/workspace', ODD: spec.env.ODD, PATH: '/bin:/usr/bin' });
});

test('parseRunEnv refuses anything but {env: {NAME: string}}; applyEnv replaces the whole environment', () => {
  for (const bad of ['[]', '{}', '{"env":[]}', '{"env":{"1X":"a"}}', '{"env":{"A":1}}', '{"env":{"A=B":"c"}}', '{"env":{"A":"a\\u0000b"}}', 'not json']) {
    assert.throws(() => parseRunEnv(bad), Error, bad);
  }
  const target: NodeJS.ProcessEnv = { HOME: '/workspace', PATH: '/bin:/usr/bin', HOSTNAME: 'brig', STALE: 'x' };
  applyEnv({ BRIG_RUN_ID: 'r-1', HOME: '/workspace', PATH: '/bin:/usr/bin', HOSTNAME: 'brig' }, target);
  assert.deepEqual(target, { BRIG_RUN_ID: 'r-1', HOME: '/workspace', PATH: '/bin:/usr/bin', HOSTNAME: 'brig' });
});

test('factsHold: the image facts gathered before the go stand only for the same PATH and no other variable', () => {
  const start = { HOME: '/workspace', PATH: '/bin:/usr/bin', HOSTNAME: 'brig' };
  assert.equal(factsHold(start, { ...start, BRIG_RUN_ID: 'r-1' }), true);
  assert.equal(factsHold(start, { ...start, BRIG_RUN_ID: 'r-1', PATH: '/usr/local/bin:/bin' }), false);
  assert.equal(factsHold(start, { ...start, BRIG_RUN_ID: 'r-1', PYTHONPATH: '/x' }), false);
});

test('shapes: the agent-ready flavour is its own shape, kept in the file and read back', async (t) => {
  const l = { memoryMb: 512, cpu: 1, pids: 128, tmpfsMb: 64, diskMb: 1024 };
  assert.notEqual(shapeKey('img', l, true), shapeKey('img', l));
  assert.equal(shapeKey('img', l, false), shapeKey('img', l));
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-shapes-'));
  t.after(() => fs.promises.rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'warm-shapes.json');
  const shapes = new PoolShapes({ size: 2, maxShapes: 4, file });
  assert.equal(shapes.want('img', l, { learn: false, agent: true }), null, 'a child never teaches a flavour');
  assert.ok(shapes.want('img', l, { learn: true, agent: true }));
  assert.ok(shapes.want('img', l, { learn: true }));
  assert.equal([...shapes.values()].filter((s) => s.agent).length, 1);
  await shapes.saved();
  assert.deepEqual(readKeptShapes(file).map((s) => s.agent).sort(), [false, true]);
});

/** A stand-in runtime: prints its argv, environment and umask, waits for the go, then prints the env file the go found. */
const FAKE = `const fs = require('fs');
process.once('SIGUSR2', () => { console.log('GO ' + fs.readFileSync(process.env.HOME + '/.brig/env.json', 'utf8')); process.exit(7); });
const keep = setInterval(() => {}, 1 << 30);
console.log('START ' + JSON.stringify({ argv: process.argv.slice(2), env: process.env, umask: process.umask().toString(8) }));
process.stderr.write('${PRESTART_READY}\\n');`;

test('the waiter pre-starts the runtime (three fixed variables, umask 022, ready first) and gives it its go only after the nonce-checked assignment', async (t) => {
  if (!fs.existsSync(BUSYBOX)) return t.skip('no static busybox (make deps)');
  const root = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-prestart-'));
  t.after(() => fs.promises.rm(root, { recursive: true, force: true }));
  const ws = path.join(root, 'workspace');
  const runDir = path.join(root, 'run');
  await fs.promises.mkdir(ws);
  await fs.promises.mkdir(runDir);
  execFileSync('mkfifo', ['-m', '0600', path.join(runDir, 'go')]);
  const fake = path.join(root, 'fake-runtime.cjs');
  fs.writeFileSync(fake, FAKE);
  // The jail's paths moved under the temp root; node and the runtime the host's and the stand-in.
  // The reaper's sleep becomes an exit with the status it carries, and its kill of everything
  // left (for a jail's pid namespace only: here it would be the host's) a no-op.
  const script = waiterScript(NONCE, { sleep: ['/bin/sh', '-c', 'exit "$0"'] });
  assert.equal(script.split('kill -KILL -1 2>/dev/null').length, 2, 'the reaper kills what the runtime left, once');
  const waiter = script
    .replaceAll('/workspace', ws)
    .replaceAll('/run/brig', runDir)
    .replace('kill -KILL -1 2>/dev/null', ':')
    .replace(PRESTART_ARGV.slice(0, -1).map((a) => `'${a}'`).join(' '), `'${process.execPath}' '${fake}'`);
  const child = spawn(BUSYBOX, ['sh', '-c', waiter], { env: { PATH: '/bin:/usr/bin', HOME: ws, SLOT_SECRET: 'never-inherited' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b));
  child.stderr.on('data', (b: Buffer) => (err += b));
  const exited = new Promise<number | null>((r) => child.on('exit', r));
  for (let i = 0; i < 200 && !(err.includes(PRESTART_READY) && err.includes('brig-pool: ready')); i++) await new Promise((r) => setTimeout(r, 25));
  assert.match(err, /brig-pool: ready/);
  const start = JSON.parse(/^START (.*)$/m.exec(out)![1]!) as { argv: string[]; env: Record<string, string>; umask: string };
  assert.deepEqual(start.argv, [PRESTART_FLAG]);
  assert.deepEqual(start.env, { HOME: ws, PATH: '/bin:/usr/bin', HOSTNAME: 'brig' }, 'nothing of the waiter\'s environment, nothing of a run');
  assert.equal(start.umask, '22');
  assert.doesNotMatch(out, /^GO/m, 'no go before the assignment');
  const spec = { env: { BRIG_RUN_ID: 'r-1', HOME: ws } };
  const archive = await inputsArchive([runEnvInput(spec)]);
  const marker = `brig-end-${'ab'.repeat(16)}`;
  await fs.promises.writeFile(path.join(runDir, 'go'), Buffer.concat([Buffer.from(assignmentHeader(NONCE, marker)), archive]));
  assert.equal(await exited, 7, `the runtime's own status is the waiter's: ${err}`);
  assert.equal(fs.readFileSync(path.join(runDir, 'exit'), 'utf8'), '7\n', 'the status reported on the exit FIFO');
  assert.ok(out.endsWith(marker) && err.endsWith(marker), 'the marker from the first line ends both streams');
  const go = JSON.parse(/^GO (.*)$/m.exec(out)![1]!) as { env: Record<string, string> };
  assert.deepEqual(go.env, childEnv(spec), 'at its go the run\'s environment was there');
});
