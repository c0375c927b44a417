/**
 * GET /v1/metrics on a real `brig serve`: a scrape parses as the Prometheus text format and
 * counts what the runs did — a completed and a failed command child, a script child's progress
 * calls and a refused broker call, the materialized bytes, spawn latencies.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { exchange } from '../../../src/client/wire.js';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome } from '../daemon/serve-proc.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A strict reader of the text format: every line a comment, blank, or `name{labels} value`. */
function parse(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const t = /^# TYPE ([a-z_][a-z0-9_]*) (counter|gauge|histogram)$/.exec(line);
    if (t) {
      types.set(t[1]!, t[2]!);
      continue;
    }
    if (/^# HELP [a-z_][a-z0-9_]* .+$/.test(line)) continue;
    const m = /^([a-z_][a-z0-9_]*)(?:\{((?:[a-z_]+="(?:[^"\\]|\\.)*",?)*)\})? (-?[0-9.e+]+|\+Inf|NaN)$/.exec(line);
    assert.ok(m, `not the text format: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { samples, types };
}

const pick = (s: Sample[], name: string, labels: Record<string, string> = {}) =>
  s.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v)).reduce((n, x) => n + x.value, 0);

test('GET /v1/metrics parses as Prometheus text and counts runs, ends, broker calls and refusals, bytes and spawn latency', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve();
  const ok = await h.run(['spawn', '--json', '--', 'sh', '-c', 'head -c 5000 /dev/zero > out/z.bin']);
  assert.equal(ok.code, 0, ok.stderr);
  const bad = await h.run(['spawn', '--json', '--', 'sh', '-c', 'exit 3']);
  assert.equal(bad.code, 1);
  const script = path.join(h.home, 'calls.mjs');
  fs.writeFileSync(script, `export default async function (brig) {
  await brig.progress('one'); await brig.progress('two');
  try { await brig.refs('r-0000000000000000'); } catch (e) { return { refused: e.code }; }
}`);
  const s = await h.run(['spawn', '--json', '--cap', 'exec', '--cap', 'spawn', '--script', script]);
  assert.equal(s.code, 0, s.stderr);
  assert.equal((JSON.parse(s.stdout) as { result: { refused: string } }).result.refused, 'capability_denied');

  const r = await exchange({ socketPath: serve.socket, method: 'GET', path: '/v1/metrics' });
  assert.equal(r.status, 200);
  const { samples, types } = parse(r.body);
  for (const [name, type] of <[string, string][]>[['brig_runs', 'gauge'], ['brig_run_ends_total', 'counter'], ['brig_spawn_seconds', 'histogram'], ['brig_queue_wait_seconds', 'histogram'], ['brig_broker_calls_total', 'counter'], ['brig_model_tokens_total', 'counter'], ['brig_materialized_bytes_total', 'counter'], ['brig_slice_helpers_started_total', 'counter'], ['brig_queue_depth', 'gauge']]) {
    assert.equal(types.get(name), type, name);
  }
  if (process.env.BRIG_TEST_DUMP) console.error(r.body);
  assert.equal(pick(samples, 'brig_runs', { status: 'ended' }), 3);
  assert.equal(pick(samples, 'brig_runs', { status: 'running' }), 0);
  assert.equal(pick(samples, 'brig_run_ends_total', { reason: 'completed' }), 2);
  assert.equal(pick(samples, 'brig_run_ends_total', { reason: 'failed', killed_by: 'none' }), 1);
  assert.equal(pick(samples, 'brig_runs_spawned_total', { kind: 'command' }), 2);
  assert.equal(pick(samples, 'brig_runs_spawned_total', { kind: 'script' }), 1);
  assert.ok(pick(samples, 'brig_broker_calls_total', { method: 'progress', outcome: 'ok' }) >= 2);
  assert.equal(pick(samples, 'brig_broker_calls_total', { method: 'refs.list', outcome: 'capability_denied' }), 1);
  assert.ok(pick(samples, 'brig_materialized_bytes_total') >= 5000);
  // A histogram: buckets never decrease, +Inf equals the count, the count is every started run.
  const buckets = samples.filter((x) => x.name === 'brig_spawn_seconds_bucket');
  for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, 'cumulative buckets');
  assert.equal(buckets.at(-1)!.labels.le, '+Inf');
  assert.equal(buckets.at(-1)!.value, pick(samples, 'brig_spawn_seconds_count'));
  assert.equal(pick(samples, 'brig_spawn_seconds_count'), 3);
  assert.ok(pick(samples, 'brig_spawn_seconds_sum') > 0);
  // Content-free: no run id, no task text in any label.
  assert.doesNotMatch(r.body, /r-[0-9a-f]{16}|head -c|exit 3/);
  const wrong = await exchange({ socketPath: serve.socket, method: 'POST', path: '/v1/metrics', body: '{}' });
  assert.equal(wrong.status, 405);
  await serve.signal('SIGTERM');
});
