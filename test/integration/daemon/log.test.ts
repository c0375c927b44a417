/**
 * The daemon's log from a real `brig serve --log-file`: JSON lines with levels; one line per
 * API request (method, route template, status, ms); each run's lifecycle; no task text, steer
 * text or run id inside a route; `--log-level warn` keeps info lines out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome } from './serve-proc.js';

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
  assert.ok(api.some((l) => l.method === 'POST' && l.route === '/v1/runs' && typeof l.status === 'number' && typeof l.ms === 'number'), 'the spawn request');
  assert.ok(api.some((l) => l.method === 'GET' && l.route === '/v1/runs' && l.status === 200), 'the list request');
  assert.ok(api.some((l) => l.route === '/v1/runs/{run}/wait' && l.status === 404), 'a refused request, its run id templated away');
  assert.ok(api.every((l) => !String(l.route).includes('r-')), 'routes are templates');
  const mine = lines.filter((l) => l.runId === runId).map((l) => l.msg);
  assert.deepEqual(mine.filter((m) => m.startsWith('run ')), ['run spawned', 'run started', 'run ended']);
  assert.ok(mine.includes('lease revoked'), 'its lease revoked at its end');
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
