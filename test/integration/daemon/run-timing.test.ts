/**
 * `brig explain RUN --timing` on a real run (issue 26): a pooled trivial child through a real
 * `brig serve --warm 1` on the real engine, then the real CLI reads its timing back. Every phase
 * of its life is there and the phases sum to the whole; no figure is judged (never a timing
 * assertion). dist/ must be built.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiClient } from '../../../src/client/index.js';
import { PHASE_OF } from '../../../src/runs/run-timing.js';
import { requireEngine } from '../../helpers/engine.js';
import { until } from '../runs/fixture.js';
import { daemonHome, recordOnDisk, warmReady } from './serve-proc.js';

test('a real pooled run\'s timing has every phase of its life, each ≥ 0, and they sum to the whole', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve(['--warm', '1']);
  await until(async () => (await warmReady(serve.socket)) === 1, '1 warm jail ready');
  const api = new ApiClient(serve.socket);
  const r = await api.spawn({ task: 'trivial', kind: 'command', argv: ['true'] });
  await api.close();
  assert.ok(r.ok && r.value.endReason === 'completed', JSON.stringify(r));
  assert.ok(r.value.jail?.pooled !== undefined, 'served by the warm pool');
  const id = r.value.id;
  // The timing is saved after the envelope went out.
  await until(async () => recordOnDisk(h.home, id)?.timing?.marks.envelope !== undefined, 'timing on the record');
  const out = await h.run(['explain', id, '--timing', '--json']);
  assert.equal(out.code, 0, out.stderr);
  const got = JSON.parse(out.stdout) as { phases: { phase: string; mark: string; ms: number }[]; totalMs: number };
  assert.deepEqual(got.phases.map((p) => p.phase).sort(), Object.values(PHASE_OF).sort(), 'every phase, once');
  assert.ok(got.phases.every((p) => p.ms >= 0), JSON.stringify(got.phases));
  const sum = got.phases.reduce((a, p) => a + p.ms, 0);
  assert.ok(Math.abs(sum - got.totalMs) < 0.05, `phases sum ${sum} = total ${got.totalMs}`);
  assert.ok(got.totalMs > 0);
  // The text form names each phase.
  const text = await h.run(['explain', id, '--timing']);
  assert.equal(text.code, 0, text.stderr);
  for (const phase of Object.values(PHASE_OF)) assert.ok(text.stdout.includes(phase), `${phase} in:\n${text.stdout}`);
  await serve.signal('SIGTERM');
});
