/**
 * The agents example runs as documented, by one command (`npx tsx
 * examples/graphs/agents-vote-gate.ts`): without BRIG_MODEL_BASE_URL a scripted stand-in model
 * on loopback drives the agent nodes and the screen says so (not a real model); two researchers
 * write notes, three agent voters read them read-only and cast structured ballots (one HOLD),
 * the tally decides SHIP, the operator's approval opens the gate, the writer reads the facts
 * node's committed notes and writes the release note; the graph completes once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers } from '../runs/fixture.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

test('examples/graphs/agents-vote-gate.ts: one command runs the agents graph with the stand-in, saying so — fan-out, vote, gate, writer', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const { BRIG_MODEL_BASE_URL: _u, BRIG_MODEL: _m, BRIG_MODEL_GGUF: _g, ...env } = process.env;
  const r = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/graphs/agents-vote-gate.ts'], { cwd: ROOT, env: { ...env, BRIG_HOME: home }, timeout: 300_000 });
  const out = r.stdout;
  assert.match(out, /SCRIPTED STAND-IN on loopback — not a real model/);
  assert.match(out, /the panel counted: SHIP 2 · HOLD 1 → SHIP/);
  assert.match(out, /approves it as the operator/);
  assert.match(out, /\[Graph Result: agents-vote-gate\] completed · 8 nodes \(8 succeeded\)/);
  assert.match(out, /go\s+gate\s+succeeded\s+a1\s+.*approved by operator/);
  assert.match(out, /note\s+agent\s+succeeded/);
  assert.match(out, /none came from inside a jail/);
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
