/**
 * Operator hooks from config.yaml reach `brig serve` (issue 22 item 4): a real daemon, real
 * hook commands (a node script writing its stdin to a file) and a real loopback HTTP server for
 * the webhook. The hooks receive the documented content-free document (no task, no output);
 * a hook that exits 1 or sleeps past its timeout is ledgered (`run.hook_failed` with why) and
 * the run still completes; a launch that fails after prepareSpawn runs its rollback.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { ApiClient } from '../../../src/client/index.js';
import type { RunRecord, SpawnRequestInput } from '../../../src/runs/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { until } from '../runs/fixture.js';
import { daemonHome, type DaemonHome, type Serve } from './serve-proc.js';

const TASK = 'TASK-CONTENT-MARKER-7f3a';
const OUTPUT = 'OUTPUT-CONTENT-MARKER-91c2';
const SCRIPT = `import { writeFileSync } from 'node:fs';
export default async function (brig) {
  await brig.progress('${OUTPUT}');
  writeFileSync('/workspace/out/out.txt', '${OUTPUT}');
  return { said: '${OUTPUT}' };
}`;

/** A hook command: appends its stdin (one JSON line) to the file it is given. */
const WRITER = `const fs = require('node:fs');
let s = '';
process.stdin.on('data', (c) => (s += c));
process.stdin.on('end', () => fs.appendFileSync(process.argv[2], s));`;

function hookHome(h: DaemonHome, config: string): { writer: string } {
  const writer = path.join(h.home, 'hook-writer.cjs');
  fs.writeFileSync(writer, WRITER);
  fs.writeFileSync(path.join(h.home, 'config.yaml'), config);
  return { writer };
}

async function spawnAndWait(serve: Serve, req: SpawnRequestInput): Promise<RunRecord> {
  const api = new ApiClient(serve.socket);
  try {
    const r = await api.spawn({ ...req, async: true });
    assert.ok(r.ok, r.ok ? '' : `${r.error.code}: ${r.error.message}`);
    const w = await api.wait(r.value.id, { timeoutMs: 90_000 });
    assert.ok(w.ok, w.ok ? '' : `${w.error.code}: ${w.error.message}`);
    assert.equal(w.value.status, 'ended', `serve stderr: ${serve.stderr()}`);
    return w.value;
  } finally {
    await api.close();
  }
}

const lines = (file: string): Record<string, unknown>[] =>
  fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, unknown>) : [];

function ledgerEvents(h: DaemonHome, type: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.jsonl')) for (const l of fs.readFileSync(p, 'utf8').split('\n')) if (l.includes(type)) out.push(JSON.parse(l) as Record<string, unknown>);
    }
  };
  if (fs.existsSync(h.paths.ledger)) walk(h.paths.ledger);
  return out.map((e) => ((e as { event?: Record<string, unknown> }).event ?? e)).filter((e) => e.type === type);
}

test('[req: issue 22.4] config.yaml hooks: a command prepareSpawn and a loopback webhook onEnded receive the content-free document', async (t) => {
  if (!(await requireEngine(t))) return;
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    let b = '';
    req.on('data', (c: Buffer) => (b += c.toString()));
    req.on('end', () => {
      bodies.push(b);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  const h = await daemonHome(t);
  const prepFile = path.join(h.home, 'prep.jsonl');
  const { writer } = hookHome(h, `hooks:
  prepareSpawn:
    command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(path.join(h.home, 'hook-writer.cjs'))}, ${JSON.stringify(prepFile)}]
  onEnded:
    webhook: http://127.0.0.1:${(server.address() as AddressInfo).port}/ended
`);
  assert.ok(fs.existsSync(writer));
  const serve = await h.serve();
  const run = await spawnAndWait(serve, { task: TASK, script: SCRIPT });
  assert.equal(run.endReason, 'completed', JSON.stringify(run));
  await until(async () => bodies.length > 0, 'the onEnded webhook was posted', 100);
  const ended = JSON.parse(bodies[0]!) as Record<string, unknown>;
  assert.equal(ended.hook, 'onEnded');
  assert.equal(ended.runId, run.id);
  assert.equal(ended.kind, 'script');
  assert.equal(ended.endReason, 'completed');
  assert.equal(ended.exitCode, 0);
  assert.equal(ended.leaseId, run.leaseId);
  assert.ok(typeof ended.leaseId === 'string' && ended.leaseId.length > 0);
  assert.ok([1, 2, 3].includes(ended.condensationLevel as number), `condensation level: ${String(ended.condensationLevel)}`);
  assert.equal(typeof ended.resultPath, 'string');
  assert.ok(fs.existsSync(ended.resultPath as string), 'the result path is the run\'s kept result on the host');
  assert.equal(typeof ended.image, 'string');
  const prep = lines(prepFile);
  assert.equal(prep.length, 1, 'prepareSpawn ran once, no rollback for a run that started');
  assert.equal(prep[0]!.phase, 'prepare');
  assert.equal(prep[0]!.runId, run.id);
  assert.equal(prep[0]!.parentRunId, null);
  for (const text of [...bodies, fs.readFileSync(prepFile, 'utf8')]) {
    assert.ok(!text.includes(TASK) && !text.includes(OUTPUT), `a hook received content: ${text}`);
  }
  assert.deepEqual(ledgerEvents(h, 'run.hook_failed'), []);
});

test('[req: issue 22.4] a hook that exits 1 or sleeps past its timeout is ledgered with why, and the run completes', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const node = JSON.stringify(process.execPath);
  hookHome(h, `hooks:
  prepareSpawn:
    command: [${node}, -e, "setTimeout(() => {}, 60000)"]
    timeoutMs: 500
  onEnded:
    command: [${node}, -e, "process.exit(1)"]
`);
  const serve = await h.serve();
  const started = Date.now();
  const run = await spawnAndWait(serve, { task: TASK, script: SCRIPT });
  assert.equal(run.endReason, 'completed', JSON.stringify(run));
  assert.ok(Date.now() - started < 60_000, 'the sleeping hook did not hold the run');
  await until(async () => ledgerEvents(h, 'run.hook_failed').length >= 2, 'both failures ledgered', 100);
  const failed = ledgerEvents(h, 'run.hook_failed');
  const prep = failed.find((e) => e.hook === 'prepareSpawn');
  const ended = failed.find((e) => e.hook === 'onEnded');
  assert.ok(prep && ended, JSON.stringify(failed));
  assert.equal(prep.runId, run.id);
  assert.match(String(prep.why), /timed out after 500 ms/);
  assert.match(String(ended.why), /exited 1/);
  assert.match(serve.stdout() + serve.stderr(), /operator hook failed|hook_failed/, 'logged');
});

test('[req: issue 22.4] a launch that fails after prepareSpawn (no such image) runs the rollback', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const prepFile = path.join(h.home, 'prep.jsonl');
  hookHome(h, `hooks:
  prepareSpawn:
    command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(path.join(h.home, 'hook-writer.cjs'))}, ${JSON.stringify(prepFile)}]
`);
  const serve = await h.serve();
  const run = await spawnAndWait(serve, { task: TASK, script: SCRIPT, image: 'brig-test-hooks/does-not-exist:none' });
  assert.equal(run.endReason, 'failed', JSON.stringify(run));
  await until(async () => lines(prepFile).length >= 2, 'the rollback ran', 100);
  assert.deepEqual(lines(prepFile).map((d) => [d.phase, d.runId]), [['prepare', run.id], ['rollback', run.id]]);
});
