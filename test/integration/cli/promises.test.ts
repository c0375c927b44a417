/**
 * The CLI keeps its promises (issue 27 item 7), through real `brig` processes over records on
 * disk (no daemon, no engine): an unknown short flag is an error, never an argument; `-q` prints
 * ids only; `--since` takes the one duration syntax (30m, 24h) and refuses anything else;
 * `list --json` names a run `runId` as spawn and wait do; colour only on a terminal (a real
 * pseudo-terminal from util-linux `script`) and never with NO_COLOR; no escape code into a pipe.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { brigPaths } from '../../../src/config/index.js';
import { RunStore, type RunRecord } from '../../../src/runs/index.js';
import { createRunRecord } from '../../../src/runs/record.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const MAIN = path.join(ROOT, 'dist/cli/main.js');

function env(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('BRIG_') && k !== 'NO_COLOR') e[k] = v;
  return { ...e, BRIG_HOME: home, ...extra };
}

function brig(home: string, args: string[], extra: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { env: env(home, extra), encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** `brig ARGS` on a real pseudo-terminal: what the terminal shows. */
function onTerminal(home: string, args: string[], extra: Record<string, string> = {}): string {
  const r = spawnSync('script', ['-qec', [process.execPath, MAIN, ...args].join(' '), '/dev/null'], { env: { ...env(home, extra), TERM: 'xterm' }, encoding: 'utf8', timeout: 60_000 });
  return r.stdout;
}

async function records(home: string): Promise<{ fresh: string[]; old: string }> {
  const store = new RunStore(brigPaths(home).runs);
  const make = async (i: number, at: Date, endReason: 'completed' | 'failed') => {
    const id = `r-${i.toString(16).padStart(16, '0')}`;
    const rec: RunRecord = createRunRecord({
      id, parent: null, callerId: 'operator', agent: 'default', kind: 'command', label: null, task: `task ${i}`,
      requestHash: `h-${i}`, now: at, timeoutMs: 1000, maxSteps: 10, async: false, expectedOutputs: [], resumeOf: null,
    });
    await store.save({ ...rec, status: 'ended', endReason, exitCode: endReason === 'completed' ? 0 : 3 });
    return id;
  };
  const now = Date.now();
  return {
    fresh: [await make(1, new Date(now - 60_000), 'completed'), await make(2, new Date(now - 120_000), 'failed')],
    old: await make(3, new Date(now - 2 * 86_400_000), 'completed'),
  };
}

test('unknown short flags are refused; -q is ids only; --since takes 30m/24h; list --json names runId', async (t) => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-cli-'));
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  const { fresh, old } = await records(home);

  for (const argv of [['list', '-x'], ['list', '-qz'], ['ref', 'list', fresh[0]!, '-a'], ['kill', fresh[0]!, '-f'], ['result', fresh[0]!, '-v']]) {
    const r = brig(home, argv);
    assert.equal(r.code, 2, `brig ${argv.join(' ')}: ${r.out}${r.err}`);
    assert.match(r.err, /unknown flag -[a-z] \[invalid_input\]/, argv.join(' '));
    assert.match(r.err, /goes after --/);
  }

  const q = brig(home, ['list', '-q']);
  assert.equal(q.code, 0, q.err);
  assert.deepEqual(q.out.trim().split('\n').sort(), [...fresh, old].sort(), '-q: one id a line, nothing else');
  assert.equal(brig(home, ['list', '--quiet']).out, q.out);

  const day = brig(home, ['list', '-q', '--since', '24h']);
  assert.deepEqual(day.out.trim().split('\n').sort(), [...fresh].sort(), '--since 24h');
  const mins = brig(home, ['list', '-q', '--since', '90']);
  assert.deepEqual(mins.out.trim().split('\n').sort(), [...fresh].sort(), 'a bare number is minutes, as before');
  const bad = brig(home, ['list', '--since', 'yesterday']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /takes a duration \(90s, 30m, 24h, 7d\)/);
  const wt = brig(home, ['wait', fresh[0]!, '--timeout', '2m', '--json']);
  assert.equal(wt.code, 0, `wait --timeout 2m: ${wt.err}`);

  const json = JSON.parse(brig(home, ['list', '--json']).out) as { runs: { runId: string; id: string }[] };
  assert.ok(json.runs.length === 3 && json.runs.every((r) => r.runId === r.id), 'each run of list --json has its runId');

  const failed = brig(home, ['list']);
  assert.doesNotMatch(failed.out + failed.err, /\x1b/, 'no escape code into a pipe');
});

test('colour on a terminal: a failed run red, a completed one green; none with NO_COLOR or into a pipe', async (t) => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-cli-'));
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  await records(home);
  const screen = onTerminal(home, ['list']);
  assert.match(screen, /\x1b\[31mfailed/, `failed in red on a terminal: ${JSON.stringify(screen.slice(0, 400))}`);
  assert.match(screen, /\x1b\[32mcompleted/);
  assert.doesNotMatch(onTerminal(home, ['list'], { NO_COLOR: '1' }), /\x1b\[3\dm/, 'NO_COLOR: no colour');
  assert.doesNotMatch(brig(home, ['list']).out, /\x1b/, 'a pipe: no colour');
});
