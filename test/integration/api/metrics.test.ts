/**
 * GET /v1/metrics on a real `brig serve`: a scrape parses as the Prometheus text format and
 * counts what the runs did — a completed and a failed command child, a script child's progress
 * calls and a refused broker call, the materialized bytes, spawn latencies, run durations by
 * kind and end reason, the operator's slices by verb, API requests by route, live runs per tree
 * (while a run lives, and after it is killed) — and shows the process, Node and build families.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { exchange } from '../../../src/client/wire.js';
import { API_ROUTES, END_REASONS, RUN_KINDS, SLICE_VERBS } from '../../../src/protocol/index.js';
import { TREE_SIZES, declareFamilies } from '../../../src/daemon/metrics-feed.js';
import { Metrics } from '../../../src/util/metrics.js';
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

test('GET /v1/metrics parses as Prometheus text and counts runs, ends, broker calls and refusals, bytes, spawn latency, run durations, slices, API requests, live trees and the process', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve();
  const ok = await h.run(['spawn', '--json', '--', 'sh', '-c', "head -c 5000 /dev/zero > out/z.bin; printf 'alpha\\nbeta\\n' > out/a.txt"]);
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

  // Two operator slices of the first run's text ref, through the API (its refs listed first).
  const okId = (JSON.parse(ok.stdout) as { runId: string }).runId;
  const listed = await exchange({ socketPath: serve.socket, method: 'GET', path: `/v1/runs/${okId}/refs` });
  assert.equal(listed.status, 200, listed.body);
  const text = (JSON.parse(listed.body) as { refs: { ref: string; path?: string; kind?: string }[] }).refs.find((x) => x.kind === 'text');
  assert.ok(text, listed.body);
  const grep = await exchange({ socketPath: serve.socket, method: 'POST', path: `/v1/refs/${text.ref}/grep`, body: JSON.stringify({ pattern: 'beta' }) });
  assert.equal(grep.status, 200, grep.body);
  const read = await exchange({ socketPath: serve.socket, method: 'POST', path: `/v1/refs/${text.ref}/read`, body: JSON.stringify({ line: 1, lines: 1 }) });
  assert.equal(read.status, 200, read.body);

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
  await newFamilies(samples, types);
  await liveTree(h, serve.socket);
  const wrong = await exchange({ socketPath: serve.socket, method: 'POST', path: '/v1/metrics', body: '{}' });
  assert.equal(wrong.status, 405);
  await serve.signal('SIGTERM');
});

/** Every label value of a family is one of `allowed` (closed sets: bounded series, no ids). */
function labelsWithin(s: Sample[], family: string, label: string, allowed: readonly string[]): void {
  for (const x of s.filter((y) => y.name === family || y.name.startsWith(`${family}_`))) {
    if (x.labels[label] !== undefined) assert.ok(allowed.includes(x.labels[label]), `${x.name} ${label}=${x.labels[label]}`);
  }
}

/** The families of build, process and Node, run durations, slices, API requests and trees. */
async function newFamilies(samples: Sample[], types: Map<string, string>): Promise<void> {
  // Every family the daemon declares is in a real scrape (the ops files' test reads the same list).
  const declared = new Metrics();
  declareFamilies(declared);
  for (const t of (await declared.expose()).matchAll(/^# TYPE (\S+) (\S+)$/gm)) assert.equal(types.get(t[1]!), t[2], `${t[1]} in the scrape`);

  const build = samples.filter((x) => x.name === 'brig_build_info');
  assert.equal(build.length, 1);
  assert.equal(build[0]!.value, 1);
  const pkg = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../../package.json'), 'utf8')) as { version: string };
  assert.equal(build[0]!.labels.version, pkg.version);
  assert.match(build[0]!.labels.node!, /^\d+\.\d+\.\d+$/);

  // Durations by kind and end reason: each run once, lasting more than 0 s.
  assert.equal(pick(samples, 'brig_run_duration_seconds_count', { kind: 'command', reason: 'completed' }), 1);
  assert.equal(pick(samples, 'brig_run_duration_seconds_count', { kind: 'command', reason: 'failed' }), 1);
  assert.equal(pick(samples, 'brig_run_duration_seconds_count', { kind: 'script', reason: 'completed' }), 1);
  assert.ok(pick(samples, 'brig_run_duration_seconds_sum', { kind: 'command', reason: 'completed' }) > 0);
  labelsWithin(samples, 'brig_run_duration_seconds', 'kind', [...RUN_KINDS, 'unknown']);
  labelsWithin(samples, 'brig_run_duration_seconds', 'reason', END_REASONS);

  // The operator's two slices, one per verb, in the operator's lane.
  assert.equal(pick(samples, 'brig_slice_seconds_count', { verb: 'grep', lane: 'operator' }), 1);
  assert.equal(pick(samples, 'brig_slice_seconds_count', { verb: 'read', lane: 'operator' }), 1);
  assert.ok(pick(samples, 'brig_slice_seconds_sum', { verb: 'grep' }) > 0);
  assert.equal(pick(samples, 'brig_slice_calls_total', { verb: 'grep', lane: 'operator', outcome: 'ok' }), 1);
  labelsWithin(samples, 'brig_slice_seconds', 'verb', SLICE_VERBS);
  labelsWithin(samples, 'brig_slice_calls_total', 'lane', ['operator', 'child']);

  // API requests by operation name: the slices timed; the CLI's spawns counted, never timed (long).
  assert.equal(pick(samples, 'brig_api_request_seconds_count', { route: 'refGrep' }), 1);
  assert.ok(pick(samples, 'brig_api_request_seconds_sum', { route: 'refGrep' }) > 0);
  assert.ok(pick(samples, 'brig_api_requests_total', { route: 'listRefs', code: '2xx' }) >= 1); // the CLI's spawn --json lists refs too
  assert.ok(pick(samples, 'brig_api_requests_total', { route: 'spawn' }) >= 3);
  assert.equal(pick(samples, 'brig_api_request_seconds_count', { route: 'spawn' }), 0);
  labelsWithin(samples, 'brig_api_requests_total', 'route', [...Object.keys(API_ROUTES), 'unknown']);
  labelsWithin(samples, 'brig_api_request_seconds', 'route', [...Object.keys(API_ROUTES), 'unknown']);
  labelsWithin(samples, 'brig_api_requests_total', 'code', ['1xx', '2xx', '3xx', '4xx', '5xx']);

  // Nothing lives: every tree size class reads 0.
  assert.equal(pick(samples, 'brig_run_tree_live_runs_max'), 0);
  assert.equal(pick(samples, 'brig_run_trees_live'), 0);
  assert.deepEqual(samples.filter((x) => x.name === 'brig_run_trees_live').map((x) => x.labels.size), TREE_SIZES.map((c) => c.size).sort());

  // The process: sane, not merely present.
  assert.ok(pick(samples, 'process_resident_memory_bytes') > 10 * 1024 * 1024);
  assert.ok(pick(samples, 'nodejs_heap_size_used_bytes') > 0);
  assert.ok(pick(samples, 'process_cpu_seconds_total') > 0);
  assert.ok(pick(samples, 'process_open_fds') > 0 && pick(samples, 'process_open_fds') < pick(samples, 'process_max_fds'));
  const start = pick(samples, 'process_start_time_seconds');
  assert.ok(start > Date.now() / 1000 - 3600 && start <= Date.now() / 1000, String(start));
  const lag = pick(samples, 'nodejs_eventloop_lag_seconds');
  assert.ok(lag >= 0 && lag < 5, String(lag));
  assert.ok(pick(samples, 'nodejs_eventloop_lag_p99_seconds') >= 0);
}

/** A live run: its tree is counted (size 1) while it lives; killed, its duration is filed under `killed`. */
async function liveTree(h: Awaited<ReturnType<typeof daemonHome>>, socket: string): Promise<void> {
  const spawned = await h.run(['spawn', '--async', '--json', '--', 'sleep', '60']);
  assert.equal(spawned.code, 0, spawned.stderr);
  const { runId } = JSON.parse(spawned.stdout) as { runId: string };
  const live = parse((await exchange({ socketPath: socket, method: 'GET', path: '/v1/metrics' })).body).samples;
  assert.equal(pick(live, 'brig_run_trees_live', { size: '1' }), 1);
  assert.equal(pick(live, 'brig_run_trees_live'), 1);
  assert.equal(pick(live, 'brig_run_tree_live_runs_max'), 1);
  assert.equal((await h.run(['kill', runId, '--confirm'])).code, 0);
  await h.run(['wait', runId, '--json']);
  // The end's ledger line (the duration's source) follows the release: a moment after the wait.
  let ended: Sample[] = [];
  for (const until = Date.now() + 10_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
    ended = parse((await exchange({ socketPath: socket, method: 'GET', path: '/v1/metrics' })).body).samples;
    if (pick(ended, 'brig_run_duration_seconds_count', { reason: 'killed' }) > 0) break;
  }
  assert.equal(pick(ended, 'brig_run_duration_seconds_count', { kind: 'command', reason: 'killed' }), 1);
  assert.equal(pick(ended, 'brig_run_tree_live_runs_max'), 0);
}
