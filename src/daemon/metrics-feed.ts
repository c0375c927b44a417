/**
 * What feeds a supervisor's metrics: the content-free events every part already ledgers (a
 * tee on the ledger, so nothing is counted that the audit trail does not also hold), the
 * broker's answered calls, and, at scrape time, the supervisor's own table and helper pool.
 * Label values come from closed sets only (statuses, end reasons, killedBy, kinds, error codes,
 * broker methods, model aliases of the configuration): never a run id or any text (INV-7).
 */
import type { LedgerEvent } from '../ledger/index.js';
import { API_ROUTES, LONG_ROUTES, SLICE_VERBS, type RouteName } from '../protocol/index.js';
import type { RunRecord, StorageState, Supervisor } from '../runs/index.js';
import type { DuckdbHelperPool, SliceObserver } from '../slice/index.js';
import { Metrics } from '../util/metrics.js';
import { declareProcess } from './process-metrics.js';

const str = (v: unknown, fallback = 'none') => (typeof v === 'string' && v.length > 0 && v.length <= 64 ? v : fallback);
const seconds = (a: string, b: string) => (Date.parse(b) - Date.parse(a)) / 1000;

/** A run lasts from a second to hours: 0.5 s to 4 h. */
export const RUN_SECONDS_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400] as const;

/**
 * Live runs per tree, as a closed set of size classes: a tree is a root run and its
 * descendants, so a label per tree would be a label per root run id (unbounded, and an id:
 * INV-7). The classes and the largest tree's count say what an operator asks ("is one tree
 * fanning out?") with at most five series.
 */
export const TREE_SIZES = [
  { size: '1', max: 1 },
  { size: '2-4', max: 4 },
  { size: '5-16', max: 16 },
  { size: '17-64', max: 64 },
  { size: '65+', max: Number.POSITIVE_INFINITY },
] as const;

/**
 * Every family the daemon exports, declared with its help (so a scrape shows it from the
 * start, before anything happened). One list: the ops files' test (test/unit/ops) reads the
 * exported names from here, and the metrics integration test checks a real scrape has them all.
 */
export function declareFamilies(m: Metrics): void {
  declareProcess(m);
  m.declare('brig_build_info', 'Always 1; the labels say which brig (package version) on which Node.js.', 'gauge');
  m.declare('brig_runs', 'Runs on record by status.', 'gauge');
  m.declare('brig_queue_depth', 'Runs admitted and waiting for a slot.', 'gauge');
  m.declare('brig_runs_spawned_total', 'Runs admitted (started or queued), by kind.', 'counter');
  m.declare('brig_run_ends_total', 'Runs ended, by end reason and who killed them.', 'counter');
  m.declare('brig_spawn_refusals_total', 'Spawn requests refused at admission, by code.', 'counter');
  m.declare('brig_spawn_seconds', 'From admission to a started jail (queue wait, lease, broker socket, jail create and verify).', 'histogram');
  m.declare('brig_queue_wait_seconds', 'From admission to a started jail, for runs that were queued at admission.', 'histogram');
  m.declare('brig_broker_calls_total', 'Broker calls answered, by method and outcome (ok, or the refusal code).', 'counter');
  m.declare('brig_broker_abuse_total', 'Runs cut off by the broker for sustained abuse.', 'counter');
  m.declare('brig_model_calls_total', 'Model calls made through the broker, by model alias and outcome.', 'counter');
  m.declare('brig_model_tokens_total', 'Model tokens, by model alias and direction (input, output).', 'counter');
  m.declare('brig_model_cost_usd_total', 'Model cost in USD of priced calls, by model alias.', 'counter');
  m.declare('brig_materialized_bytes_total', 'Bytes of output materialized as ResultRefs.', 'counter');
  m.declare('brig_slice_helpers_started_total', 'DuckDB helper processes started (beyond the pool size: restarts).', 'counter');
  m.declare('brig_slice_helpers_live', 'DuckDB helper processes alive.', 'gauge');
  m.declare('brig_warm_jails', 'Warm-pool jails by state (ready: started, verified, waiting for a run; filling: being made).', 'gauge');
  m.declare('brig_egress_connections_total', 'Egress connections (and plain-HTTP requests) the gate allowed, by rule id.', 'counter');
  m.declare('brig_egress_bytes_total', 'Egress bytes through the gate, by rule id and direction (up, down).', 'counter');
  m.declare('brig_egress_refusals_total', 'Egress connections or requests the gate refused, by reason.', 'counter');
  m.declare('brig_warm_assigned_total', 'Runs handed a warm-pool jail (the others were made a jail at start).', 'counter');
  m.declare('brig_run_duration_seconds', 'Run lifetimes (started, or admitted when never started, to ended), by kind and end reason.', 'histogram', RUN_SECONDS_BUCKETS);
  m.declare('brig_run_trees_live', 'Run trees with a run not ended (queued included), by how many such runs the tree holds (a size class).', 'gauge');
  m.declare('brig_run_tree_live_runs_max', 'The live runs (not ended, queued included) of the tree that holds the most.', 'gauge');
  m.declare('brig_slice_seconds', 'Drill-in verb calls, from the call to the answer (queueing in the slice scheduler included), by verb and lane (operator, child).', 'histogram');
  m.declare('brig_slice_calls_total', 'Drill-in verb calls, by verb, lane and outcome (ok, or the error code).', 'counter');
  m.declare('brig_api_request_seconds', 'API requests, from arrival to the reply closed, by route (its operation name); long polls and streams (events, wait, spawn, send, graphWait, doctor) are not timed.', 'histogram');
  m.declare('brig_api_requests_total', 'API requests, by route (operation name, or unknown) and status class (2xx, 4xx, 5xx).', 'counter');
  m.declare('brig_home_free_bytes', "Free bytes on the file system of brig's home (what an unprivileged writer may still use).", 'gauge');
  m.declare('brig_home_reserve_bytes', "Bytes brig keeps free in its home (--min-free-mb): below it spawns are refused storage_full.", 'gauge');
  m.declare('brig_storage_held', 'Writes the full home refused, held in memory until space returns (ledger lines, run files).', 'gauge');
}

/** brig_build_info: 1, labelled with the package version and Node.js's (a deployment's commit is not known to the package). */
export function setBuildInfo(m: Metrics, version: string): void {
  m.set('brig_build_info', { version: str(version, 'unknown'), node: process.versions.node }, 1);
}

/** Counts each ledgered event (teeLedger hands them over). */
export function meterEvents(m: Metrics): (ev: LedgerEvent) => void {
  declareFamilies(m);
  const admitted = new Map<string, { at: string; queued: boolean }>();
  // The kind of each run not yet ended (its end's line does not repeat it); a run this daemon
  // reattached was spawned by another: its duration is filed under kind `unknown`.
  const kinds = new Map<string, string>();
  return (ev: LedgerEvent) => {
    switch (ev.type) {
      case 'run.spawned':
        m.inc('brig_runs_spawned_total', { kind: str(ev.kind) });
        if (ev.runId) kinds.set(ev.runId, str(ev.kind));
        if (ev.runId && typeof ev.timestamp === 'string') admitted.set(ev.runId, { at: ev.timestamp, queued: ev.queued === true });
        return;
      case 'run.started': {
        const a = ev.runId ? admitted.get(ev.runId) : undefined;
        if (!a || typeof ev.timestamp !== 'string') return;
        admitted.delete(ev.runId!);
        m.observe('brig_spawn_seconds', {}, seconds(a.at, ev.timestamp));
        if (a.queued) m.observe('brig_queue_wait_seconds', {}, seconds(a.at, ev.timestamp));
        return;
      }
      case 'run.lifecycle_ended': {
        const kind = (ev.runId && kinds.get(ev.runId)) || 'unknown';
        if (ev.runId) {
          admitted.delete(ev.runId);
          kinds.delete(ev.runId);
        }
        m.inc('brig_run_ends_total', { reason: str(ev.endReason), killed_by: str(ev.killedBy) });
        if (typeof ev.runtimeMs === 'number') m.observe('brig_run_duration_seconds', { kind, reason: str(ev.endReason) }, ev.runtimeMs / 1000);
        if (typeof ev.outputBytes === 'number') m.inc('brig_materialized_bytes_total', {}, ev.outputBytes);
        return;
      }
      case 'run.refused':
        // Repeats are one line per window with their count (ledger/refusal-log.ts).
        m.inc('brig_spawn_refusals_total', { code: str(ev.code) }, typeof ev.count === 'number' && ev.count > 0 ? ev.count : 1);
        return;
      case 'broker.abuse':
        m.inc('brig_broker_abuse_total');
        return;
      case 'jail.pool_assigned':
        m.inc('brig_warm_assigned_total');
        return;
      case 'egress.conn': {
        const rule = str(ev.ruleId);
        m.inc('brig_egress_connections_total', { rule });
        if (typeof ev.bytesUp === 'number') m.inc('brig_egress_bytes_total', { rule, direction: 'up' }, ev.bytesUp);
        if (typeof ev.bytesDown === 'number') m.inc('brig_egress_bytes_total', { rule, direction: 'down' }, ev.bytesDown);
        return;
      }
      case 'egress.deny':
        m.inc('brig_egress_refusals_total', { reason: str(ev.reason) });
        return;
      case 'run.model_call': {
        const model = str(ev.model);
        m.inc('brig_model_calls_total', { model, outcome: ev.ok === true ? 'ok' : str(ev.code, 'error') });
        if (typeof ev.input === 'number') m.inc('brig_model_tokens_total', { model, direction: 'input' }, ev.input);
        if (typeof ev.output === 'number') m.inc('brig_model_tokens_total', { model, direction: 'output' }, ev.output);
        if (typeof ev.costUsd === 'number') m.inc('brig_model_cost_usd_total', { model }, ev.costUsd);
        return;
      }
    }
  };
}

/** Broker calls by method and outcome (the broker's onCall). */
export function countBrokerCall(m: Metrics): (method: string, outcome: string) => void {
  return (method, outcome) => m.inc('brig_broker_calls_total', { method: str(method, 'unknown'), outcome: str(outcome, 'unknown') });
}

/** Gauges read at scrape time: the supervisor's runs by status, its queue, the helper pool. */
export function collectState(m: Metrics, sup: () => Supervisor | undefined, pools: readonly DuckdbHelperPool[], warm?: { stats(): { ready: number; filling: number }[] }): void {
  m.collect(async () => {
    const s = sup();
    const runs: RunRecord[] = s ? await s.list() : [];
    m.reset('brig_runs');
    const by = new Map<string, number>();
    for (const r of runs) by.set(r.status, (by.get(r.status) ?? 0) + 1);
    for (const status of ['queued', 'starting', 'running', 'materializing', 'ended']) m.set('brig_runs', { status }, by.get(status) ?? 0);
    m.set('brig_queue_depth', {}, by.get('queued') ?? 0);
    treeGauges(m, runs);
    m.set('brig_slice_helpers_started_total', {}, pools.reduce((n, p) => n + p.started, 0));
    m.set('brig_slice_helpers_live', {}, pools.reduce((n, p) => n + p.pids().length, 0));
    const w = warm?.stats() ?? [];
    m.set('brig_warm_jails', { state: 'ready' }, w.reduce((n, s) => n + s.ready, 0));
    m.set('brig_warm_jails', { state: 'filling' }, w.reduce((n, s) => n + s.filling, 0));
  });
}

/** Live runs per tree: the count of trees in each size class, and the largest tree's count. */
function treeGauges(m: Metrics, runs: readonly RunRecord[]): void {
  const live = new Map<string, number>();
  for (const r of runs) if (r.status !== 'ended') live.set(r.rootRunId, (live.get(r.rootRunId) ?? 0) + 1);
  const counts = [...live.values()];
  for (const [i, c] of TREE_SIZES.entries()) {
    const min = i === 0 ? 1 : TREE_SIZES[i - 1]!.max + 1;
    m.set('brig_run_trees_live', { size: c.size }, counts.filter((n) => n >= min && n <= c.max).length);
  }
  m.set('brig_run_tree_live_runs_max', {}, Math.max(0, ...counts));
}

/** Drill-in calls by verb and lane (the slicer's onSlice): their latency, and their outcome. */
export function meterSlices(m: Metrics): SliceObserver {
  return ({ verb, lane, outcome, seconds: s }) => {
    const labels = { verb: (SLICE_VERBS as readonly string[]).includes(verb) ? verb : 'unknown', lane: lane === 'child' ? 'child' : 'operator' };
    m.observe('brig_slice_seconds', labels, s);
    m.inc('brig_slice_calls_total', { ...labels, outcome: str(outcome, 'unknown') });
  };
}

/**
 * API requests by route (the API's onRequest). The route is the table's operation name (never
 * the path: no ids), or `unknown` for a path no route takes. A long poll or stream lasts as
 * long as its caller waits (LONG_ROUTES): counted, never timed, so p95 stays about latency.
 */
export function meterRequests(m: Metrics): (route: string, status: number, seconds: number) => void {
  return (route, status, s) => {
    const name = Object.hasOwn(API_ROUTES, route) ? (route as RouteName) : undefined;
    const code = status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'other';
    m.inc('brig_api_requests_total', { route: name ?? 'unknown', code });
    if (!name || !LONG_ROUTES.has(name)) m.observe('brig_api_request_seconds', { route: name ?? 'unknown' }, s);
  };
}

/**
 * The home's storage at scrape time: its free space (against the reserve below which spawns
 * are refused `storage_full`) and the writes a full home made brig hold in memory, by writer.
 */
export function collectStorage(m: Metrics, state: () => StorageState, reserveBytes: number): void {
  declareFamilies(m);
  m.collect(() => {
    const s = state();
    m.set('brig_home_reserve_bytes', {}, reserveBytes);
    if (s.freeBytes !== undefined) m.set('brig_home_free_bytes', {}, s.freeBytes);
    m.reset('brig_storage_held');
    const writer = (what: string) => (what.startsWith('ledger') ? 'ledger' : 'runs');
    for (const w of ['ledger', 'runs']) m.set('brig_storage_held', { writer: w }, s.held.filter((h) => writer(h.what) === w).reduce((n, h) => n + h.count, 0));
  });
}
