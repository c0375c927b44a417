import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { brigPaths, loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { RunStore, type RunRecord } from '../../../src/runs/index.js';
import { createRunRecord } from '../../../src/runs/record.js';
import { requireEngine } from '../../helpers/engine.js';

/**
 * A closed pipe is the end of the output: real `brig` processes whose reader goes away
 * exit with the command's code and print no error or stack. Runs the sources through tsx,
 * so it needs no build.
 */
const ROOT = path.resolve(import.meta.dirname, '../../..');
const BRIG = [process.execPath, '--import', 'tsx', path.join(ROOT, 'src/cli/main.ts')];

function tmpHome(t: { after: (fn: () => void) => void }): string {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-pipe-'));
  t.after(() => fs.rmSync(h, { recursive: true, force: true }));
  return h;
}

/** Enough runs that `brig list` writes more than a pipe holds (64 KiB). */
async function manyRuns(home: string, n: number): Promise<void> {
  const store = new RunStore(brigPaths(home).runs);
  for (let i = 0; i < n; i++) {
    const id = `r-${i.toString(16).padStart(16, '0')}`;
    const rec: RunRecord = createRunRecord({
      id, parent: null, callerId: 'operator', agent: 'default', kind: 'command', label: `label-${'x'.repeat(40)}-${i}`, task: `task ${i}`,
      requestHash: `h-${i}`, now: new Date(Date.UTC(2026, 0, 1, 0, 0, i)), timeoutMs: 1000, maxSteps: 10, async: false, expectedOutputs: [], resumeOf: null,
    });
    await store.save({ ...rec, status: 'ended', endReason: 'completed', exitCode: 0 });
  }
}

/**
 * Runs brig with stdout piped to a reader that takes `keep` bytes (0: none) and then closes
 * its end, as `| head -c N` does. Resolves with the exit code, stderr and what was read.
 */
function brigIntoClosingPipe(args: string[], home: string, keep: number): Promise<{ code: number | null; signal: string | null; stderr: string; got: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(BRIG[0]!, [...BRIG.slice(1), ...args], { cwd: ROOT, env: { ...process.env, BRIG_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
    let got = '';
    let stderr = '';
    if (keep === 0) p.stdout.destroy();
    else {
      p.stdout.on('data', (d: Buffer) => {
        got += d.toString();
        if (got.length >= keep) p.stdout.destroy();
      });
    }
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), 60_000);
    p.on('error', reject);
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr, got: got.slice(0, keep) });
    });
  });
}

function assertQuiet(r: { code: number | null; signal: string | null; stderr: string }, what: string): void {
  assert.equal(r.signal, null, `${what}: not killed`);
  assert.equal(r.code, 0, `${what}: exit 0\n${r.stderr}`);
  assert.doesNotMatch(r.stderr, /Error|EPIPE|at .*\(.*:\d+:\d+\)|node:internal/, `${what}: no error or stack on stderr`);
  assert.equal(r.stderr, '', what);
}

test('`brig list | head -c 10`, `brig list --json | head -c 10`, `brig --help | head -c 1`: the reader leaves, brig exits 0 without a stack', async (t) => {
  const home = tmpHome(t);
  await manyRuns(home, 800);
  for (const [args, keep] of [[['list'], 10], [['list', '--json'], 10], [['--help'], 1], [['completion', 'bash'], 1]] as const) {
    const r = await brigIntoClosingPipe([...args], home, keep);
    assertQuiet(r, args.join(' '));
    assert.equal(r.got.length, keep, `${args.join(' ')}: read the first bytes`);
  }
});

test('a reader that is gone before brig writes a byte (`brig lease list | true`) is no error either', async (t) => {
  const home = tmpHome(t);
  for (const args of [['lease', 'list'], ['list'], ['--help'], ['--version']]) assertQuiet(await brigIntoClosingPipe(args, home, 0), args.join(' '));
});

test('through a shell: `brig --help | head -1` and `brig list | head -1` print one line and brig exits 0', async (t) => {
  const home = tmpHome(t);
  await manyRuns(home, 800);
  const cmd = BRIG.map((a) => `'${a}'`).join(' ');
  for (const args of ['--help', 'list', 'lease list']) {
    const r = spawnSync('bash', ['-c', `${cmd} ${args} | head -1; echo "status=\${PIPESTATUS[0]}" >&2`], { cwd: ROOT, env: { ...process.env, BRIG_HOME: home }, encoding: 'utf8' });
    assert.equal(r.stdout.split('\n').length, 2, `${args}: one line\n${r.stdout}`);
    assert.equal(r.stderr, 'status=0\n', `${args}: no error, exit 0`);
  }
});

test('`brig events | head -1` against a daemon ends when the reader leaves (the stream stops, exit 0)', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = tmpHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  try {
    const events = brigIntoClosingPipe(['events'], home, 1);
    // Something for the stream to carry: spawns until the reader has had its byte.
    let done = false;
    void events.finally(() => (done = true));
    for (let i = 0; i < 20 && !done; i++) {
      await d.composed.supervisor.spawn({ task: `tick ${i}`, kind: 'command', argv: ['true'], artifact_refs: [], expected_outputs: [], async: true });
      await new Promise((r) => setTimeout(r, 500));
    }
    const r = await events;
    assertQuiet(r, 'events');
  } finally {
    await d.shutdown();
  }
});
