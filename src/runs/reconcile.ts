/**
 * Reconcile on start: the persisted runs against the engine, after a restart or a crash.
 *
 * Guarantees: what interrupted materializations left is removed first; a run whose container
 * still runs is reattached, one whose container exited while no supervisor watched is
 * collected like any other end, one caught mid-materialization has its collection redone;
 * anything else ends `ghost_sweep` with an honest message; resumable runs are checked for
 * their pinned script and checkpoint; labelled leftovers of this home whose run is not live
 * are removed. Only a reconciling supervisor (it holds the home lock) does any of this.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { SupervisorDeps } from './ports.js';
import type { RunActions, RunTable } from './run-table.js';
import type { RunStarter } from './starter.js';
import { retentionActions } from './health.js';
import type { ReconcileReport, SupervisorSettings } from './types.js';
import { isPoolKey } from '../jail/index.js';
import { bestEffort } from './best-effort.js';
import { jailKeyOf } from './run-record.js';
import { transition } from './state-machine.js';

export interface ReconcileDeps {
  table: RunTable;
  deps: SupervisorDeps;
  settings: SupervisorSettings;
  starter: RunStarter;
  actions: Pick<RunActions, 'endRun'>;
  /** Finish an end a dead supervisor saved but did not release and announce. */
  finishEnd: (runId: string) => Promise<void>;
}

export async function reconcile(d: ReconcileDeps): Promise<ReconcileReport> {
  const { table, deps } = d;
  const report: ReconcileReport = { reattached: [], ghostSwept: [], swept: { containers: 0, volumes: 0 } };
  const stored = await table.store.loadAll();
  for (const r of stored.records) table.runs.set(r.id, r);
  // A record that is not one is named, not guessed at: its run is left as it is on disk.
  for (const e of stored.corrupt) table.ledger.append({ type: 'run.corrupt', runId: String(e.data.runId), file: String(e.data.file) });
  if (stored.corrupt.length > 0) report.corrupt = stored.corrupt.map((e) => String(e.data.runId));
  if (deps.results?.sweepInterrupted) {
    const live = (id: string) => table.get(id) !== undefined && table.get(id)!.status !== 'ended';
    const swept = await deps.results.sweepInterrupted(live).catch(() => ({ removed: 0, bytes: 0 }));
    if (swept.removed > 0) table.ledger.append({ type: 'results.interrupted_swept', entries: swept.removed, bytes: swept.bytes });
    report.interrupted = swept;
  }
  for (const r of table.all()) if (r.status === 'ended' && r.unreleased) await d.finishEnd(r.id).catch(() => {});
  for (const r of table.all()) {
    if (r.status === 'ended' || r.status === 'queued') continue;
    const jail = await deps.jail.attach(jailKeyOf(r)).catch(() => null);
    // `starting` with a container: attach finds only started ones (running or exited), so the
    // supervisor died between starting the child and saving that — it is a running run.
    if (jail && r.status === 'starting') {
      const running = transition(r, 'running', table.clock.now());
      if (running.ok) await table.update(r.id, () => ({ ...running.value, lastProgressAt: running.value.startedAt })).catch(() => {});
    }
    const cur = table.get(r.id) ?? r;
    // Running (or exited while no supervisor watched): watch it again; an exited one ends
    // at once and is collected like any other. Mid-materialization: redo the collection.
    if (jail && (cur.status === 'running' || cur.status === 'materializing') && (await d.starter.reattach(cur, jail))) {
      report.reattached.push(r.id);
      continue;
    }
    if (jail) await bestEffort(table, r.id, 'jail', () => jail.destroy());
    await d.actions.endRun(r.id, 'ghost_sweep', { collect: false, error: { code: 'internal', message: `supervisor restarted; the run was ${r.status} and has no container` } });
    report.ghostSwept.push(r.id);
  }
  await verifyResumable(table, report);
  // `isLive` true means "leave it": unknown runs are kept when told not to sweep them
  // (tests share one engine with other suites).
  // Jails go by their key: a run's id, or the warm-pool slot it was handed. A slot no live run
  // holds was never assigned (or its run is over): it goes, whatever sweepUnknown says.
  const byKey = new Map(table.all().map((r) => [jailKeyOf(r), r] as const));
  report.swept = await deps.jail.sweep((key) => {
    const r = byKey.get(key);
    if (r) return r.status !== 'ended';
    return isPoolKey(key) ? false : deps.sweepUnknown === false;
  });
  // A dead supervisor's pool slots leave their socket directories (and FIFOs) too.
  for (const name of await fs.readdir(deps.paths.brokers).catch(() => [] as string[])) {
    const held = byKey.get(name);
    if (isPoolKey(name) && !(held && held.status !== 'ended')) await fs.rm(path.join(deps.paths.brokers, name), { recursive: true, force: true }).catch(() => {});
  }
  return report;
}

/** A resumable run survives a restart only with its pinned bytes and checkpoint on disk. */
async function verifyResumable(table: RunTable, report: ReconcileReport): Promise<void> {
  report.resumable = [];
  report.orphaned = [];
  for (const r of table.all()) {
    if (r.status !== 'ended' || !r.resumable || r.resumedBy) continue;
    const reason = !(await table.store.read(r.id, 'script')) ? 'script_missing' : !(await table.store.read(r.id, 'checkpoint')) ? 'checkpoint_missing' : null;
    if (reason === null) {
      report.resumable.push(r.id);
      continue;
    }
    report.orphaned.push({ runId: r.id, reason });
    await table.update(r.id, (x) => ({ ...x, resumable: false, error: { code: 'resume_unavailable', message: reason } }));
    table.ledger.append({ type: 'run.resume_orphaned', runId: r.id, rootRunId: r.rootRunId, reason });
  }
}

/** Removes results of ended runs past retention; ends ancient live runs `swept`. */
export async function retentionSweep(d: Omit<ReconcileDeps, 'starter' | 'finishEnd'>): Promise<{ removed: string[]; swept: string[] }> {
  const { table } = d;
  const { removeResults, endSwept } = retentionActions(table.all(), table.clock.now(), d.settings);
  const removed: string[] = [];
  for (const id of removeResults) {
    const r = table.get(id)!;
    if (r.resultDir === null && !r.resumable) continue;
    await table.store.removeFile(id, 'out');
    if (r.resultDir) await fs.rm(r.resultDir, { recursive: true, force: true }).catch(() => {});
    await table.store.removeFile(id, 'script');
    await table.store.removeFile(id, 'checkpoint');
    await d.deps.results?.remove(r.rootRunId, id).catch(() => {});
    await table.update(id, (x) => ({ ...x, resultDir: null, resumable: false }));
    table.ledger.append({ type: 'run.results_swept', runId: id, rootRunId: r.rootRunId });
    removed.push(id);
  }
  for (const id of endSwept) if (await d.actions.endRun(id, 'swept', {})) removed.push(id);
  return { removed, swept: endSwept };
}

/** The directories a reconciling supervisor needs before anything else. */
export async function ensureDirs(deps: SupervisorDeps): Promise<void> {
  await fs.mkdir(deps.paths.runs, { recursive: true, mode: 0o700 });
  // Private, as the daemon's compose makes it: the parent mode is what keeps other users out.
  await fs.mkdir(deps.paths.brokers, { recursive: true, mode: 0o700 });
}
