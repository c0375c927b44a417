/**
 * The single end door (INV-8): every run ends here, exactly once, and releases what it held.
 *
 * Guarantees: the claim is synchronous (`table.ending`), so two enders (an exit racing a
 * kill, the watchdog racing the health monitor) cannot both pass it; what the run wrote is
 * collected however it ended — a run cut short is stopped first and marked partial — and the
 * end being collected is saved before the copy starts, so a crash mid-way is redone at the
 * next start; live children end first (`killedBy: parent`); then container, volume, broker
 * socket and lease are released and waiters told. Fails: a failing hook or ledger never
 * changes how the run ended.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Jail } from '../jail/index.js';
import { bestEffort } from './best-effort.js';
import { collectOutputs } from './launch.js';
import type { RunEndMeta, SupervisorDeps } from './ports.js';
import type { ProgressFork } from './progress-fork.js';
import type { EndOptions, Live, RunTable } from './run-table.js';
import { elapsedMs, end, transition } from './state-machine.js';
import { jailKeyOf } from './run-record.js';
import type { EndReason, PendingEnd, RunRecord, SupervisorSettings } from './types.js';

export function endMeta(r: RunRecord, now: Date): RunEndMeta {
  return {
    runId: r.id,
    rootRunId: r.rootRunId,
    parentRunId: r.parentRunId,
    path: [...r.path],
    depth: r.depth,
    kind: r.kind,
    endReason: r.endReason!,
    killedBy: r.killedBy,
    exitCode: r.exitCode,
    errorCode: r.error?.code ?? null,
    stepsExecuted: r.stepsExecuted,
    runtimeMs: elapsedMs(r, now),
    outputFiles: r.outputFiles,
    outputBytes: r.outputBytes,
    tokens: r.tokens ?? null,
    costUsd: r.costUsd ?? null,
    partial: r.partial === true,
    resumable: r.resumable,
    parentStep: r.parentStep ?? null,
  };
}

/** End reasons where the supervisor cut the run short: its outputs are what it had so far. */
const CUT_SHORT: ReadonlySet<EndReason> = new Set(['killed', 'watchdog_timeout', 'ghost_sweep', 'swept']);

export interface EnderDeps {
  table: RunTable;
  deps: SupervisorDeps;
  settings: SupervisorSettings;
  fork: ProgressFork;
  /** Starts whatever queued runs now fit (a slot was freed). */
  pump: () => void;
}

export class RunEnder {
  constructor(private readonly d: EnderDeps) {}

  async endRun(runId: string, reason: EndReason, o: EndOptions = {}): Promise<boolean> {
    const { table } = this.d;
    const r = table.get(runId);
    if (!r || r.status === 'ended' || table.ending.has(runId)) return false;
    table.ending.add(runId);
    try {
      this.d.fork.stop(runId);
      const handle = table.live.get(runId);
      if (handle?.jail && o.collect !== false) {
        await this.#materialize(runId, handle.jail, {
          reason,
          ...(o.killedBy ? { killedBy: o.killedBy } : {}),
          ...(o.error ? { error: o.error } : {}),
          ...(o.exitCode !== undefined ? { exitCode: o.exitCode } : {}),
          ...(o.oomKilled ? { oomKilled: true } : {}),
        });
      }
      const cur = table.get(runId)!;
      if (reason === 'completed' && cur.error) reason = 'failed';
      const resumable = reason === 'watchdog_timeout' && cur.kind === 'script' && cur.hasCheckpoint;
      const ended = end(cur, {
        reason,
        now: table.clock.now(),
        resumable,
        ...(o.killedBy ? { killedBy: o.killedBy } : {}),
        ...(o.error ? { error: o.error } : {}),
      });
      if (!ended.ok) return false;
      const { pendingEnd: _done, ...rest } = ended.value;
      const rec: RunRecord = { ...rest, exitCode: o.exitCode ?? cur.exitCode, ...(o.oomKilled ? { oomKilled: true } : {}), unreleased: true };
      table.runs.set(runId, rec);
      // The durable end (INV-8): a crash from here on finishes the release at the next start.
      await bestEffort(table, runId, 'save_end', () => table.store.save(rec));
      // Children go first, attributed to their parent, before the parent's lease revoke
      // cascades to theirs (which would read as a `system` kill).
      const children = table.all().filter((c) => c.parentRunId === runId && c.status !== 'ended');
      await Promise.all(children.map((c) => this.endRun(c.id, 'killed', { killedBy: 'parent' })));
      await this.#release(rec, handle);
      table.live.delete(runId);
      this.#announce(rec);
      const { unreleased: _u, ...done } = table.get(runId)!;
      // Not durable: losing it only repeats the (idempotent) release at the next start.
      await bestEffort(table, runId, 'save_released', () => table.update(runId, () => done, { durable: false }));
      table.notifyEnded(runId);
      try {
        await this.d.deps.hooks?.onEnded?.(endMeta(rec, table.clock.now()));
      } catch {
        table.ledger.append({ type: 'run.hook_failed', runId, hook: 'onEnded' });
      }
      return true;
    } finally {
      table.ending.delete(runId);
      this.d.pump();
    }
  }

  /**
   * Collects what the run wrote, however it ends. A run cut short is stopped first (so its
   * files hold still) and its result marked partial. The pending end is saved before the
   * copy starts: a crash mid-way is redone by the next start, never left half done.
   */
  async #materialize(runId: string, jail: Jail, pending: PendingEnd): Promise<void> {
    const { table } = this.d;
    const cutShort = CUT_SHORT.has(pending.reason);
    // An agent gets SIGTERM and a grace for its one salvage call and its partial result;
    // anything else is stopped at once so its files hold still.
    const agent = table.get(runId)!.kind === 'agent';
    if (cutShort) await bestEffort(table, runId, 'stop', () => (agent ? jail.stop(this.d.settings.agentStopGraceMs) : jail.kill()));
    // Ended by the supervisor while the child still runs (its step budget spent): stopped
    // before its out/ is read, so nothing changes under the collection.
    else if (pending.exitCode === undefined) await bestEffort(table, runId, 'stop', () => jail.kill());
    const t = transition(table.get(runId)!, 'materializing', table.clock.now());
    // The durable point before the collection: a crash mid-way is redone from pendingEnd.
    await bestEffort(table, runId, 'save_pending_end', () => table.update(runId, (x) => ({ ...(t.ok ? t.value : x), pendingEnd: pending, ...(cutShort ? { partial: true } : {}) })));
    const patch = await collectOutputs({ table, results: this.d.deps.results, settings: this.d.settings }, runId, jail);
    // Not durable: the end's save carries it; a crash before is redone from pendingEnd.
    table.patch(runId, (x) => ({ ...x, ...patch }));
  }

  /**
   * After a restart: a run whose end was saved but whose release or announcement the dead
   * supervisor never finished. Its container and volume go with the start-up sweep.
   */
  async finishEnd(runId: string): Promise<void> {
    const r = this.d.table.get(runId);
    if (!r || r.status !== 'ended' || !r.unreleased) return;
    await this.#release(r, undefined);
    // The dead supervisor may have announced before it could clear the flag (its ledger lines
    // are on disk as soon as appended): exactly one announcement, whichever side the crash fell.
    if (!this.d.table.ledger.hasRunEvent?.('run.lifecycle_ended', runId)) this.#announce(r);
    const { unreleased: _u, ...done } = r;
    await this.d.table.update(runId, () => done);
  }

  async #release(r: RunRecord, handle: Live | undefined): Promise<void> {
    const { deps, table } = this.d;
    // The jail and the broker socket go side by side (neither needs the other); the lease last.
    const id = r.id;
    const jail = async () => {
      // A kill of a jail that already exited is no failure: only its destroy must succeed.
      await handle?.jail?.kill().catch(() => {});
      if (handle?.jail) await bestEffort(table, id, 'jail', () => handle.jail!.destroy());
      else if (r.startedAt !== null) {
        const j = await deps.jail.attach(jailKeyOf(r)).catch(() => null);
        if (j) await bestEffort(table, id, 'jail', () => j.destroy());
      }
    };
    const socket = async () => {
      if (handle?.broker) await bestEffort(table, id, 'broker', () => handle.broker!.close());
      for (const dir of new Set([r.id, jailKeyOf(r)])) await bestEffort(table, id, 'socket_dir', () => fs.rm(path.join(deps.paths.brokers, dir), { recursive: true, force: true }));
    };
    await Promise.all([jail(), socket()]);
    if (!r.resumable) {
      await bestEffort(table, id, 'checkpoint', () => table.store.removeFile(r.id, 'checkpoint'));
      await bestEffort(table, id, 'script', () => table.store.removeFile(r.id, 'script'));
    }
    if (r.leaseId) await bestEffort(table, id, 'lease', () => deps.leases.revoke(r.leaseId!, 'system', `run_${r.endReason}`));
  }

  #announce(r: RunRecord): void {
    const { table } = this.d;
    const runtimeMs = elapsedMs(r, table.clock.now());
    if (r.endReason === 'completed') table.emit(r, { type: 'completed', runtimeMs, stepsExecuted: r.stepsExecuted });
    else table.emit(r, { type: 'failed', terminalStatus: r.terminalStatus, endReason: r.endReason, code: r.error?.code ?? null });
    table.emit(r, {
      type: 'lifecycle_ended',
      endReason: r.endReason,
      killedBy: r.killedBy,
      runtimeMs,
      stepsExecuted: r.stepsExecuted,
      outputBytes: r.outputBytes,
      resumable: r.resumable,
    });
  }
}
