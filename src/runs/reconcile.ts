/**
 * Reconcile on start: the persisted runs against the engine, after a restart or a crash.
 *
 * Guarantees: what interrupted materializations left is removed first; a run whose container
 * still runs is reattached, one whose container exited while no supervisor watched is
 * collected like any other end, one caught mid-materialization has its collection redone;
 * a run caught `starting` with no started container is launched again from the queue once
 * what its dead launch made is swept; anything else ends `ghost_sweep` with an honest
 * message; resumable runs are checked for their pinned script and checkpoint; labelled
 * leftovers of this home whose run is not live are removed, and run directories an intake
 * cut short left without a record. Only a reconciling supervisor (it holds the home lock)
 * does any of this.
 *
 * Two phases, so a restart serves soon: `reconcile` does what children and callers need
 * before anything is served (the records, the interrupted collections, every live child's
 * broker socket open again) and hands back `tidy`, the slow rest (releases a dead
 * supervisor left, ghost sweeps, the engine sweep, the requeue), which runs while the
 * supervisor serves. Runs may start meanwhile: the sweep looks each jail's holder up when
 * it decides, never from a list made before.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { SupervisorDeps } from './ports.js';
import type { RunActions, RunTable } from './run-table.js';
import type { RunStarter } from './starter.js';
import { retentionActions } from './health.js';
import type { Jail } from '../jail/index.js';
import type { ReconcileReport, RunStatus, SupervisorSettings } from './types.js';
import { isPoolKey } from '../jail/index.js';
import { bestEffort } from './best-effort.js';
import { jailKeyOf } from './run-record.js';
import { requeue, transition } from './state-machine.js';

export interface ReconcileDeps {
  table: RunTable;
  deps: SupervisorDeps;
  settings: SupervisorSettings;
  starter: RunStarter;
  actions: Pick<RunActions, 'endRun'>;
  /** Finish an end a dead supervisor saved but did not release and announce. */
  finishEnd: (runId: string) => Promise<void>;
  /** True once the supervisor closes: phase two stops between its steps. */
  stopped?: () => boolean;
}

/** A run directory with no record untouched this long was left by an intake a crash cut short. */
export const HALF_MADE_AGE_MS = 10 * 60_000;

/** Engine look-ups at once while reattaching (each is one list call). */
const ATTACH_CONCURRENCY = 8;

/** What phase one found for phase two to finish. */
interface Left {
  /** Live on disk with nothing to reattach: ended `ghost_sweep` by tidy (their jail, if any, destroyed). */
  ghosts: { id: string; status: RunStatus; jail: Jail | null }[];
  /** Caught `starting` with no started container: swept, then queued again by tidy. */
  starting: string[];
}

export interface Reconciled {
  /** What phase one did (reattached, corrupt, interrupted); tidy fills in the rest. */
  report: ReconcileReport;
  /** Phase two: resolves with the whole report. Never rejects (an engine failure is ledgered). */
  tidy(): Promise<ReconcileReport>;
  /** Run directories without a record too young to remove now: the retention sweep looks again. */
  halfMade: Set<string>;
}

async function mapLimit<T, R>(xs: readonly T[], n: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(xs.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, xs.length) }, async () => {
    while (next < xs.length) {
      const i = next++;
      out[i] = await fn(xs[i]!);
    }
  }));
  return out;
}

export async function reconcile(d: ReconcileDeps): Promise<Reconciled> {
  const { table, deps } = d;
  const report: ReconcileReport = { reattached: [], ghostSwept: [], requeued: [], swept: { containers: 0, volumes: 0 } };
  const stored = await table.store.loadAll();
  for (const r of stored.records) table.runs.set(r.id, r);
  // A record that is not one is named, not guessed at: its run is left as it is on disk.
  for (const e of stored.corrupt) table.ledger.append({ type: 'run.corrupt', runId: String(e.data.runId), file: String(e.data.file) });
  if (stored.corrupt.length > 0) report.corrupt = stored.corrupt.map((e) => String(e.data.runId));
  // Before any collection of this supervisor can start (a reattached run's end, a redo).
  if (deps.results?.sweepInterrupted) {
    const live = (id: string) => table.get(id) !== undefined && table.get(id)!.status !== 'ended';
    const swept = await deps.results.sweepInterrupted(live).catch(() => ({ removed: 0, bytes: 0 }));
    if (swept.removed > 0) table.ledger.append({ type: 'results.interrupted_swept', entries: swept.removed, bytes: swept.bytes });
    report.interrupted = swept;
  }
  // Queued runs wait on, their queue clock from now: the wait while no supervisor ran is not the queue's.
  const now = table.clock.now().toISOString();
  for (const r of table.all()) {
    if (r.status !== 'queued') continue;
    table.patch(r.id, (x) => ({ ...x, queuedAt: now }));
    table.queuedAtStart.add(r.id);
  }
  const open = table.all().filter((r) => r.status !== 'ended' && r.status !== 'queued');
  const jails = await mapLimit(open, ATTACH_CONCURRENCY, (r) => deps.jail.attach(jailKeyOf(r)).catch(() => null));
  const left: Left = { ghosts: [], starting: [] };
  for (const [i, r] of open.entries()) {
    const jail = jails[i] ?? null;
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
    // Its child never started: nothing was lost but the launch, which is done again.
    if (!jail && r.status === 'starting') left.starting.push(r.id);
    else {
      // Held off the health tick until tidy ends it ghost_sweep: its last progress is the dead
      // supervisor's, so a tick before tidy would end it stuck-killed under another reason.
      table.preparing.add(r.id);
      left.ghosts.push({ id: r.id, status: r.status, jail });
    }
  }
  const halfMade = new Set<string>();
  return { report, halfMade, tidy: () => tidy(d, report, left, halfMade) };
}

async function tidy(d: ReconcileDeps, report: ReconcileReport, left: Left, halfMade: Set<string>): Promise<ReconcileReport> {
  const { table, deps } = d;
  const stopped = () => d.stopped?.() === true;
  for (const r of table.all()) if (!stopped() && r.status === 'ended' && r.unreleased) await d.finishEnd(r.id).catch(() => {});
  for (const [i, g] of left.ghosts.entries()) {
    if (stopped()) {
      for (const h of left.ghosts.slice(i)) table.preparing.delete(h.id);
      return report;
    }
    if (g.jail) await bestEffort(table, g.id, 'jail', () => g.jail!.destroy());
    const error = { code: 'internal' as const, message: `supervisor restarted; the run was ${g.status} and has no container` };
    table.preparing.delete(g.id); // the end door claims it synchronously below
    if (await d.actions.endRun(g.id, 'ghost_sweep', { collect: false, error })) report.ghostSwept.push(g.id);
  }
  // `isLive` true means "leave it": unknown runs are kept when told not to sweep them
  // (tests share one engine with other suites). Jails go by their key: a run's id, or the
  // warm-pool slot it was handed; a slot no live run holds was never assigned (or its run is
  // over): it goes, whatever sweepUnknown says. The holder is looked up at each decision
  // (runs start while this runs); the runs to queue again are not live here: what their dead
  // launch made (a volume, a disk, a container never started) goes before they launch afresh.
  const again = new Set(left.starting);
  const isLive = (key: string) => {
    const r = table.all().find((x) => jailKeyOf(x) === key);
    if (r) return r.status !== 'ended' && !again.has(r.id);
    return isPoolKey(key) ? false : deps.sweepUnknown === false;
  };
  if (stopped()) return report;
  try {
    report.swept = await deps.jail.sweep(isLive);
  } catch (e) {
    table.ledger.append({ type: 'supervisor.sweep_failed', code: (e as { code?: string }).code ?? 'internal' });
  }
  // A dead supervisor's pool slots leave their socket directories (and FIFOs) too.
  for (const name of await fs.readdir(deps.paths.brokers).catch(() => [] as string[])) {
    if (isPoolKey(name) && !isLive(name)) await fs.rm(path.join(deps.paths.brokers, name), { recursive: true, force: true }).catch(() => {});
  }
  for (const id of left.starting) if (!stopped() && (await requeueRun(d, id))) report.requeued!.push(id);
  d.starter.pump();
  await verifyResumable(table, report);
  report.halfMade = await removeHalfMade(table, halfMade);
  return report;
}

/** A run caught `starting` goes back to the queue; its dead launch's lease is revoked once the record no longer names it. */
async function requeueRun(d: ReconcileDeps, id: string): Promise<boolean> {
  const { table, deps } = d;
  const r = table.get(id);
  if (!r || r.status !== 'starting' || table.ending.has(id)) return false;
  const q = requeue(r, table.clock.now());
  if (!q.ok) return false;
  // The dead launch's lease is revoked before the run can launch again (a run holds one live
  // lease; its relaunch gets a fresh one), once the record in memory no longer names it (its
  // revoke must not end the run); `preparing` keeps the starter and the health tick off it
  // until it is queued on disk. A crash in between finds it `starting` again, its lease
  // revoked: the next start queues it again the same way.
  table.preparing.add(id);
  try {
    table.patch(id, () => q.value);
    // The record names it only if the launch saved it; the store knows it by the run either way.
    if (r.leaseId) await bestEffort(table, id, 'lease', () => deps.leases.revoke(r.leaseId!, 'system', 'run_requeued'));
    await bestEffort(table, id, 'lease', () => deps.leases.revokeRun(id, 'system', 'run_requeued'));
    await bestEffort(table, id, 'socket_dir', () => fs.rm(path.join(deps.paths.brokers, id), { recursive: true, force: true }));
    // Durable: it waits in the queue again, and a crash now must not make it `starting` again
    // (as it stands: a kill that came meanwhile is not undone).
    await table.update(id, (x) => x);
  } finally {
    table.preparing.delete(id);
  }
  table.ledger.append({ type: 'run.requeued', runId: id, rootRunId: r.rootRunId });
  return true;
}

/**
 * Removes run directories without a record untouched for HALF_MADE_AGE_MS; the younger ones
 * go into `pending` (an intake in flight elsewhere, or one a crash cut short a moment ago),
 * for the retention sweep to look at again. `only`: look at these alone.
 */
export async function removeHalfMade(table: RunTable, pending: Set<string>, only?: Iterable<string>): Promise<number> {
  // File times are the wall clock's, whatever clock the table keeps.
  const before = Date.now() - HALF_MADE_AGE_MS;
  let removed = 0;
  if (only) pending.clear();
  for (const h of await table.store.withoutRecord(only).catch(() => [])) {
    // This supervisor's own intake in flight holds its run in the table already.
    if (table.get(h.runId)) continue;
    if (h.changedAt >= before) {
      pending.add(h.runId);
      continue;
    }
    await table.store.remove(h.runId).catch(() => {});
    table.ledger.append({ type: 'run.half_made_removed', runId: h.runId });
    removed++;
  }
  return removed;
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
export async function retentionSweep(d: Omit<ReconcileDeps, 'starter' | 'finishEnd'>, halfMade?: Set<string>): Promise<{ removed: string[]; swept: string[] }> {
  const { table } = d;
  if (halfMade && halfMade.size > 0) await removeHalfMade(table, halfMade, [...halfMade]);
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
