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
    // The agent step with the scripted stand-in alone: Atlas is checked below (`make demo` runs the real local model first).
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

  // The agent step, reference 000's Atlas: a coordinator agent delegating to two agents, driven
  // by the scripted stand-in (and saying so). What it wrote quotes what the jails really did:
  // the collector's shell counted the rows it wrote; the researcher read the handed-over file.
  assert.match(stdout, /SCRIPTED STAND-IN on loopback .* not a real model/);
  assert.match(stdout, /\[Subagent Result: general\]\nStatus: Completed\nCondensation: Level 1 \(passthrough\)\n\n3 sources \(and a header\) in sources\.csv\./);
  assert.match(stdout, /\[Subagent Result: researcher\]\nStatus: Completed\nCondensation: Level 2 \(LLM summary\)\n/);
  assert.match(stdout, /- IBM unveiled the Heron R2 processor with 156 qubits \(source: research\.ibm\.com\)/, 'the researcher read the collector\'s rows');
  assert.match(stdout, /On Heron: "note 1000: the Heron R2 runs circuits of 5000 two-qubit gates \(source: research\.ibm\.com\)"/, 'Atlas drilled in with ref_grep');
  const growth = /Atlas's context grew by (\d+) bytes and (\d+) bytes for its 2 children/.exec(stdout);
  assert.ok(growth, 'the growth line');
  assert.ok(Number(growth[1]) <= 2048 && Number(growth[2]) <= 2048, `≤ 2 KB a child: ${growth[0]}`);
  assert.equal(findFiles(path.join(home, 'results'), 'sources.csv').length, 1, "the collector's file was materialized once (handed over, not copied)");
  const answers = findFiles(path.join(home, 'results'), 'answer.txt').filter((f) => fs.statSync(f).size > 100_000);
  assert.equal(answers.length, 1, "the researcher's answer (> 100 KB) stayed on disk");
});
