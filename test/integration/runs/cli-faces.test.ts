import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { runCli } from '../../helpers/cli.js';
import { freshHome, leftovers } from './fixture.js';

async function brig(args: string[], home: string, isTTY = false): Promise<{ code: number; stdout: string; stderr: string }> {
  const r = await runCli(args, { home, isTTY });
  return { code: r.code, stdout: r.out, stderr: r.err };
}

const SCRIPT = `import { mkdirSync, writeFileSync } from 'node:fs';
export default async function (brig) {
  await brig.progress('writing');
  mkdirSync('/workspace/out', { recursive: true });
  writeFileSync('/workspace/out/a.txt', brig.packet.objective ?? 'none');
  return { task: brig.task };
}`;

test('CLI without a daemon: spawn --script, list, and fast, coded refusals for kill/steer/resume', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const file = path.join(home, 'job.mjs');
  fs.writeFileSync(file, SCRIPT);
  const r = await brig(['spawn', '--script', file, '--task', 'write a', '--objective', 'obj-1', '--label', 'cli', '--expect', 'a.txt', '--expect', 'b.txt', '--json'], home);
  // A missing expected output is a non-zero exit, named on stderr.
  assert.equal(r.code, 9, r.stderr);
  assert.match(r.stderr, /missing expected output: b\.txt/);
  const env = JSON.parse(r.stdout) as { runId: string; endReason: string; result: unknown; missingOutputs: string[]; refs: { path: string }[]; files: { path: string }[] };
  assert.equal(env.endReason, 'completed');
  assert.deepEqual(env.result, { task: 'write a' });
  assert.deepEqual(env.missingOutputs, ['b.txt']);
  assert.deepEqual(env.files.map((f) => f.path), ['a.txt']);
  // out/ files, and the script's result value as a ref of its own.
  assert.deepEqual(env.refs.map((x) => x.path).sort(), ['out/a.txt', 'result.json']);

  const list = await brig(['list', '--label', 'cli', '--json'], home);
  assert.equal(list.code, 0, list.stderr);
  assert.deepEqual((JSON.parse(list.stdout) as { runs: { id: string }[] }).runs.map((x) => x.id), [env.runId]);

  const noConfirm = await brig(['kill', env.runId], home);
  assert.equal(noConfirm.code, 2);
  assert.match(noConfirm.stderr, /--confirm/);
  const steer = await brig(['steer', env.runId, 'go', 'left', '--json'], home);
  assert.equal(steer.code, 5);
  assert.equal((JSON.parse(steer.stdout) as { error: { code: string } }).error.code, 'not_running');
  const resume = await brig(['resume', env.runId, '--json'], home);
  assert.equal(resume.code, 5);
  assert.equal((JSON.parse(resume.stdout) as { error: { code: string; data: { reason: string } } }).error.data.reason, 'not_resumable');
  const asyncNoDaemon = await brig(['spawn', '--async', '--', 'true'], home);
  assert.equal(asyncNoDaemon.code, 7);
  assert.match(asyncNoDaemon.stderr, /daemon_unavailable/);
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('CLI with a daemon: spawn --async then wait over the unix socket', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  try {
    const s = await brig(['spawn', '--async', '--json', '--', 'sh', '-c', 'sleep 1; echo hi > out/x.txt'], home);
    assert.equal(s.code, 0, s.stderr);
    const started = JSON.parse(s.stdout) as { runId: string; status: string };
    assert.notEqual(started.status, 'ended');
    const w = await brig(['wait', started.runId, '--json'], home);
    assert.equal(w.code, 0, w.stderr);
    const done = JSON.parse(w.stdout) as { runs: { runId: string; endReason: string; files: { path: string }[] }[] };
    assert.equal(done.runs[0]!.endReason, 'completed');
    assert.deepEqual(done.runs[0]!.files.map((f) => f.path), ['x.txt']);
    const k = await brig(['kill', started.runId, '--confirm', '--json'], home);
    assert.equal(k.code, 5, 'an ended run cannot be killed');
    const s2 = await brig(['spawn', '--async', '--json', '--', 'sleep', '2'], home);
    const id2 = (JSON.parse(s2.stdout) as { runId: string }).runId;
    const tty = await brig(['wait', id2], home, true);
    assert.equal(tty.code, 0, tty.stderr);
    assert.match(tty.stdout, /\r\x1b\[K.*steps \d+\s+children 0\/0/, 'a live line on a terminal');
    assert.match(tty.stdout, new RegExp(`run ${id2} completed`));
  } finally {
    await d.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
