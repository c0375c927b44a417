/**
 * `make demo`'s main job, run for real (doctor, jailed children, envelopes, sql and grep
 * drill-in) and its answer checked against the materialized files read independently here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { promisify } from 'node:util';
import { requireEngine } from '../../helpers/engine.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const run = promisify(execFile);

function findFiles(dir: string, name: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((p) => path.basename(p) === name).map((p) => path.join(dir, p));
}

// req: envelope:no-transcript
test('[INV-3] the main job answers its question from slices alone, and the answer is right', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-demo-test-'));
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  const { stdout } = await run('bash', ['scripts/demo.sh'], {
    cwd: ROOT,
    // The agent step with the scripted stand-in: its answer is checked below (`make demo` runs the real local model).
    env: { ...process.env, BRIG_HOME: home, DEMO_SHARDS: '3', DEMO_ORDERS: '8000', DEMO_LOG_LINES: '10000', BRIG_DEMO_MODEL: 'scripted' },
    maxBuffer: 16 * 1024 * 1024,
    timeout: 300_000,
  }).catch((e: { code?: number; stdout?: string; stderr?: string }) => {
    throw new Error(`make demo's script exited ${e.code}:\n${String(e.stdout).slice(-3000)}\n${String(e.stderr).slice(-3000)}`);
  });

  const answer = /region that lost the most revenue to refunds is (\w+): ([\d.]+) across 3 shards/.exec(stdout);
  assert.ok(answer, `no answer line in:\n${stdout.slice(-2000)}`);
  const errors = /logs record ([\d,]+) upstream E503 errors/.exec(stdout);
  assert.ok(errors, 'no error count line');

  // Recompute from the materialized outputs, without brig's slicer.
  const byRegion = new Map<string, number>();
  const orders = findFiles(path.join(home, 'results'), 'orders.jsonl');
  assert.equal(orders.length, 3, 'one orders.jsonl per child');
  for (const f of orders) {
    for await (const line of readline.createInterface({ input: fs.createReadStream(f) })) {
      const o = JSON.parse(line) as { region: string; status: string; amount: number };
      if (o.status === 'refunded') byRegion.set(o.region, (byRegion.get(o.region) ?? 0) + o.amount);
    }
  }
  const [top, amount] = [...byRegion.entries()].sort((a, b) => b[1] - a[1])[0]!;
  assert.equal(answer[1], top);
  assert.ok(Math.abs(Number(answer[2]) - amount) < 0.05, `${answer[2]} vs ${amount}`);
  let e503 = 0;
  for (const f of findFiles(path.join(home, 'results'), 'service.log')) e503 += fs.readFileSync(f, 'utf8').split('\n').filter((l) => l.includes('ERROR E503 ')).length;
  assert.equal(Number(errors[1]!.replace(/,/g, '')), e503);

  // The economy: what entered the coordinator is a tiny fraction of what was materialized.
  const materialized = Number(/bytes materialized on disk as ResultRefs:\s+([\d,]+)/.exec(stdout)![1]!.replace(/,/g, ''));
  const entered = Number(/tokens that entered the coordinator:\s+([\d,]+)/.exec(stdout)![1]!.replace(/,/g, ''));
  assert.ok(materialized > 1_000_000, `materialized ${materialized}`);
  assert.ok(entered * 4 < materialized / 100, `entered ${entered} tokens of ${materialized} bytes`);
  assert.match(stdout, /estSavedTokens:\s+[\d,]+/);
  assert.match(stdout, /\[Subagent Result: shard-0\]/);

  // The agent step: one agent child, driven by the scripted stand-in (and saying so), whose
  // answer quotes what its shell really computed inside the jail: 40 of the squares of 1..200 end in 6.
  const squares = Array.from({ length: 200 }, (_, i) => (i + 1) ** 2).filter((n) => n % 10 === 6).length;
  assert.match(stdout, /SCRIPTED STAND-IN on loopback .* not a real model/);
  assert.match(stdout, new RegExp(`${squares} of the squares of 1\\.\\.200 end in 6`));
  assert.match(stdout, /\[Subagent Result: general\][\s\S]*Tokens: 3100 \| Cost: unknown/);
  assert.equal(findFiles(path.join(home, 'results'), 'squares.txt').length, 1, 'the agent\'s file was materialized');
});
