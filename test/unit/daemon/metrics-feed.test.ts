/**
 * The daemon's metric feeds without a daemon: live runs per tree as size classes (no tree id
 * in any label), run durations by kind (a run this daemon did not spawn: kind `unknown`), API
 * requests by operation name with long polls counted but not timed, slices by closed labels.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { collectState, meterEvents, meterRequests, meterSlices } from '../../../src/daemon/metrics-feed.js';
import type { RunRecord, Supervisor } from '../../../src/runs/index.js';
import { Metrics } from '../../../src/util/metrics.js';

const run = (id: string, root: string, status: string) => ({ id, rootRunId: root, status }) as unknown as RunRecord;

test('metrics feed: live runs per tree are counted in size classes, the largest tree by itself; ended runs are not live', async () => {
  const m = new Metrics();
  meterEvents(m);
  const runs = [
    run('a', 'a', 'running'),
    ...['b', 'b1', 'b2', 'b3', 'b4'].map((id) => run(id, 'b', 'running')),
    run('b5', 'b', 'queued'),
    run('c', 'c', 'ended'),
    run('d', 'd', 'starting'),
    run('d1', 'd', 'ended'),
  ];
  collectState(m, () => ({ list: async () => runs }) as unknown as Supervisor, []);
  const text = await m.expose();
  assert.match(text, /^brig_run_trees_live\{size="1"\} 2$/m); // a, and d (its child ended)
  assert.match(text, /^brig_run_trees_live\{size="5-16"\} 1$/m); // b: six live, the queued one included
  assert.match(text, /^brig_run_trees_live\{size="2-4"\} 0$/m);
  assert.match(text, /^brig_run_tree_live_runs_max 6$/m);
  assert.doesNotMatch(text, /brig_run_tree\w*\{[^}]*(?:root|tree|run)=/, 'no tree or run id as a label');
});

test('metrics feed: run durations by kind and end reason; an end without its spawn here is kind unknown', async () => {
  const m = new Metrics();
  const feed = meterEvents(m);
  feed({ type: 'run.spawned', runId: 'r-1', kind: 'agent' });
  feed({ type: 'run.lifecycle_ended', runId: 'r-1', endReason: 'watchdog_timeout', killedBy: null, runtimeMs: 90_000 });
  feed({ type: 'run.lifecycle_ended', runId: 'r-2', endReason: 'completed', killedBy: null, runtimeMs: 200 });
  const text = await m.expose();
  assert.match(text, /^brig_run_duration_seconds_count\{kind="agent",reason="watchdog_timeout"\} 1$/m);
  assert.match(text, /^brig_run_duration_seconds_sum\{kind="agent",reason="watchdog_timeout"\} 90$/m);
  assert.match(text, /^brig_run_duration_seconds_bucket\{kind="agent",reason="watchdog_timeout",le="60"\} 0$/m);
  assert.match(text, /^brig_run_duration_seconds_bucket\{kind="agent",reason="watchdog_timeout",le="120"\} 1$/m);
  assert.match(text, /^brig_run_duration_seconds_count\{kind="unknown",reason="completed"\} 1$/m);
});

test('metrics feed: API requests by operation name (unknown otherwise), long polls counted but not timed; slices by closed labels', async () => {
  const m = new Metrics();
  meterEvents(m);
  const req = meterRequests(m);
  req('listRuns', 200, 0.002);
  req('wait', 200, 45);
  req('/v1/runs/r-0123456789abcdef', 404, 0.001); // never a path: unknown
  req('unknown', 404, 0.001);
  const slice = meterSlices(m);
  slice({ verb: 'sql', lane: 'child', outcome: 'query_refused', seconds: 0.01 });
  const text = await m.expose();
  assert.match(text, /^brig_api_request_seconds_count\{route="listRuns"\} 1$/m);
  assert.match(text, /^brig_api_requests_total\{code="2xx",route="wait"\} 1$/m);
  assert.doesNotMatch(text, /brig_api_request_seconds_count\{route="wait"\}/);
  assert.match(text, /^brig_api_requests_total\{code="4xx",route="unknown"\} 2$/m);
  assert.doesNotMatch(text, /r-0123456789abcdef/);
  assert.match(text, /^brig_slice_seconds_count\{lane="child",verb="sql"\} 1$/m);
  assert.match(text, /^brig_slice_calls_total\{lane="child",outcome="query_refused",verb="sql"\} 1$/m);
});
