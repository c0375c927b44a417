/**
 * What feeds a supervisor's metrics: the content-free events every part already ledgers (a
 * tee on the ledger, so nothing is counted that the audit trail does not also hold), the
 * broker's answered calls, and, at scrape time, the supervisor's own table and helper pool.
 * Label values come from closed sets only (statuses, end reasons, killedBy, kinds, error codes,
 * broker methods, model aliases of the configuration): never a run id or any text (INV-7).
 */
import type { LedgerEvent } from '../ledger/index.js';
import type { RunRecord, StorageState, Supervisor } from '../runs/index.js';
import type { DuckdbHelperPool } from '../slice/index.js';
import { Metrics } from '../util/metrics.js';

const str = (v: unknown, fallback = 'none') => (typeof v === 'string' && v.length > 0 && v.length <= 64 ? v : fallback);
const seconds = (a: string, b: string) => (Date.parse(b) - Date.parse(a)) / 1000;

/** The families a scrape shows from the start, before anything happened. */
function declare(m: Metrics): void {
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
}

/** Counts each ledgered event (teeLedger hands them over). */
export function meterEvents(m: Metrics): (ev: LedgerEvent) => void {
  declare(m);
  const admitted = new Map<string, { at: string; queued: boolean }>();
  return (ev: LedgerEvent) => {
    switch (ev.type) {
      case 'run.spawned':
        m.inc('brig_runs_spawned_total', { kind: str(ev.kind) });
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
      case 'run.lifecycle_ended':
        if (ev.runId) admitted.delete(ev.runId);
        m.inc('brig_run_ends_total', { reason: str(ev.endReason), killed_by: str(ev.killedBy) });
        if (typeof ev.outputBytes === 'number') m.inc('brig_materialized_bytes_total', {}, ev.outputBytes);
        return;
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
    m.set('brig_slice_helpers_started_total', {}, pools.reduce((n, p) => n + p.started, 0));
    m.set('brig_slice_helpers_live', {}, pools.reduce((n, p) => n + p.pids().length, 0));
    const w = warm?.stats() ?? [];
    m.set('brig_warm_jails', { state: 'ready' }, w.reduce((n, s) => n + s.ready, 0));
    m.set('brig_warm_jails', { state: 'filling' }, w.reduce((n, s) => n + s.filling, 0));
  });
}

/**
 * The home's storage at scrape time: its free space (against the reserve below which spawns
 * are refused `storage_full`) and the writes a full home made brig hold in memory, by writer.
 */
export function collectStorage(m: Metrics, state: () => StorageState, reserveBytes: number): void {
  m.declare('brig_home_free_bytes', "Free bytes on the file system of brig's home (what an unprivileged writer may still use).", 'gauge');
  m.declare('brig_home_reserve_bytes', "Bytes brig keeps free in its home (--min-free-mb): below it spawns are refused storage_full.", 'gauge');
  m.declare('brig_storage_held', 'Writes the full home refused, held in memory until space returns (ledger lines, run files).', 'gauge');
  m.collect(() => {
    const s = state();
    m.set('brig_home_reserve_bytes', {}, reserveBytes);
    if (s.freeBytes !== undefined) m.set('brig_home_free_bytes', {}, s.freeBytes);
    m.reset('brig_storage_held');
    const writer = (what: string) => (what.startsWith('ledger') ? 'ledger' : 'runs');
    for (const w of ['ledger', 'runs']) m.set('brig_storage_held', { writer: w }, s.held.filter((h) => writer(h.what) === w).reduce((n, h) => n + h.count, 0));
  });
}
