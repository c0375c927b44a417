/**
 * The daemon's log from a real `brig serve --log-file`: JSON lines with levels; one line per
 * API request (request id, caller, method, route template, status, ms) at debug, a refusal at
 * info; each run's lifecycle, its lease released (not "revoked") at its end; no task text,
 * steer text or run id inside a route; `--log-level warn` keeps info lines out. And `brig
 * serve &` on a terminal: its log goes to $BRIG_HOME/brig.log, not over the prompt.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome } from './serve-proc.js';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { ApiClient } from '../../../src/client/index.js';
import { until } from '../runs/fixture.js';

const MAIN = path.resolve(import.meta.dirname, '../../../dist/cli/main.js');

type Line = Record<string, unknown> & { level: string; msg: string };

const read = (file: string): Line[] => fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line);

test('brig serve --log-file: API requests and run lifecycles as JSON lines, nothing of the task; --log-level warn filters', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const file = path.join(h.home, 'brig.log');
  const serve = await h.serve(['--log-file', file]);
  const r = await h.run(['spawn', '--json', '--task', 'SECRET-TASK-TEXT', '--', 'sh', '-c', 'echo hi > out/a.txt']);
  assert.equal(r.code, 0, r.stderr);
  const runId = (JSON.parse(r.stdout) as { runId: string }).runId;
  await h.run(['list']);
  await h.run(['wait', 'r-doesnotexist']);
  await serve.signal('SIGTERM');
  const lines = read(file);
  assert.ok(lines.every((l) => typeof l.level === 'string' && typeof l.msg === 'string' && typeof l.time === 'string'), 'every line has a level, a message and a time');
  const api = lines.filter((l) => l.msg === 'api');
  assert.ok(api.some((l) => l.route === '/v1/runs/{run}/wait' && l.status === 404 && l.level === 'info'), 'a refused request is visible at info, its run id templated away');
  assert.deepEqual(api.filter((l) => l.status === 200), [], 'a served request is a debug line: at info the terminal sees none');
  assert.ok(api.every((l) => !String(l.route).includes('r-')), 'routes are templates');
  const mine = lines.filter((l) => l.runId === runId).map((l) => l.msg);
  assert.deepEqual(mine.filter((m) => m.startsWith('run ')), ['run spawned', 'run started', 'run ended']);
  assert.ok(!mine.includes('lease revoked'), 'a normal end is no revocation');
  assert.equal(lines.find((l) => l.runId === runId && l.msg === 'run ended')!.endReason, 'completed');
  assert.ok(lines.some((l) => l.msg === 'daemon serving'));
  assert.doesNotMatch(fs.readFileSync(file, 'utf8'), /SECRET-TASK-TEXT/);
  assert.equal((fs.statSync(file).mode & 0o777).toString(8), '600');

  const quiet = path.join(h.home, 'quiet.log');
  const serve2 = await h.serve(['--log-file', quiet, '--log-level', 'warn']);
  await h.run(['list']);
  await serve2.signal('SIGTERM');
  assert.deepEqual(fs.existsSync(quiet) ? read(quiet).filter((l) => l.level === 'info') : [], [], 'no info line at warn');
});

test('brig serve --log-level debug: each request line names its request id (echoed as X-Request-Id) and its caller — cli, console, or http', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const file = path.join(h.home, 'brig.log');
  const serve = await h.serve(['--log-file', file, '--log-level', 'debug', '--ui']);
  const r = await h.run(['spawn', '--json', '--', 'sh', '-c', 'echo hi > out/a.txt']);
  assert.equal(r.code, 0, r.stderr);
  const runId = (JSON.parse(r.stdout) as { runId: string }).runId;
  const url = new URL((JSON.parse(serve.stdout().split('\n')[0]!) as { console: string }).console);
  const viaConsole = await fetch(`${url.origin}/api/v1/runs`, { headers: { authorization: `Bearer ${url.searchParams.get('token')}`, 'x-brig-client': 'cli' } });
  assert.equal(viaConsole.status, 200);
  const consoleId = viaConsole.headers.get('x-request-id');
  assert.match(consoleId ?? '', /^rq_[0-9a-f]{12}$/);
  const raw = await new Promise<{ id: string | undefined }>((resolve, reject) =>
    http
      .get({ socketPath: h.paths.socket, path: '/v1/health', headers: { 'x-request-id': 'mine-42' } }, (res) => {
        res.resume();
        resolve({ id: res.headers['x-request-id'] as string | undefined });
      })
      .on('error', reject),
  );
  assert.equal(raw.id, 'mine-42', "a caller's own plain request id is kept");
  await serve.signal('SIGTERM');
  const api = read(file).filter((l) => l.msg === 'api');
  const spawnLine = api.find((l) => l.method === 'POST' && l.route === '/v1/runs');
  assert.ok(spawnLine, 'the spawn request');
  assert.equal(spawnLine.level, 'debug');
  assert.equal(spawnLine.caller, 'cli');
  assert.match(String(spawnLine.reqId), /^rq_[0-9a-f]{12}$/);
  assert.equal(new Set(api.map((l) => l.reqId)).size, api.length, 'one id per request');
  assert.equal(api.find((l) => l.reqId === consoleId)?.caller, 'console', 'what comes through the console is the console\'s, whatever the page says');
  assert.equal(api.find((l) => l.reqId === 'mine-42')?.caller, 'http', 'an unnamed caller is http');
  const released = read(file).find((l) => l.runId === runId && l.msg === 'lease released');
  assert.equal(released?.level, 'debug');
  assert.equal(released?.released, 'run_completed');
});

test('brig serve & on a terminal: the log goes to $BRIG_HOME/brig.log (said once), never over the prompt', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  // A real pseudo-terminal (util-linux script): the daemon in the background of a shell, as the README runs it.
  const term = spawn('script', ['-qfec', `${process.execPath} ${MAIN} serve --log-level debug & echo "pid=$!"; wait`, '/dev/null'], {
    env: { ...process.env, BRIG_HOME: h.home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let screen = '';
  term.stdout.on('data', (c: Buffer) => (screen += c.toString()));
  const exited = new Promise((r) => term.once('exit', r));
  t.after(async () => {
    if (term.exitCode === null) term.kill('SIGKILL');
    await exited;
  });
  await until(async () => screen.includes('brig serving on') && (await ApiClient.probe(h.paths.socket)), `serve up on a terminal (${screen})`, 300);
  const r = await h.run(['spawn', '--json', '--', 'sh', '-c', 'echo hi > out/a.txt']);
  assert.equal(r.code, 0, r.stderr);
  const pid = Number(/pid=(\d+)/.exec(screen)?.[1]);
  process.kill(pid, 'SIGTERM');
  await exited;
  const log = path.join(h.home, 'brig.log');
  assert.match(screen, new RegExp(`log: ${log.replace(/[.]/g, '\\.')}`), 'it says where its log goes');
  assert.doesNotMatch(screen, /"level"/, 'no JSON log line on the terminal');
  const lines = read(log);
  assert.ok(lines.some((l) => l.msg === 'api' && l.caller === 'cli'), 'the lines are in the file');
  assert.ok(lines.some((l) => l.msg === 'run ended'));
});
