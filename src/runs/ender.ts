/**
 * The single end door (INV-8): every run ends here, exactly once, and releases what it held.
 *
 * Guarantees: the claim is synchronous (`table.ending`), so two enders (an exit racing a
 * kill, the watchdog racing the health monitor) cannot both pass it; what the run wrote is
 * collected however it ended — a run cut short is stopped first and marked partial — and the
 * end being collected is saved before anything waits on the engine (a kill is recorded at
 * once, `onRecorded`), so a crash mid-way is redone at the next start; live children end
 * first (`killedBy: parent`); then the run's broker and egress close, its lease is revoked and
 * waiters are told; the container, its disk and the socket directory are released after
 * (issue 26: off the envelope's path), the run's slot held until they are (`table.releasing`)
 * and `unreleased` on its record until then, so a crash in between is released by the next
 * start. Fails: a failing hook or ledger never changes how the run ended.
 *
 * Through an engine outage: stopping and collecting wait for the engine (tried again until it
 * answers, while the supervisor lives), so a kill during an outage still collects what the
 * child wrote once the engine is back; when the supervisor stops first, the end is left as
 * saved (`materializing` + `pendingEnd`) for the next start to finish. A release step that
 * failed is retried in the background while the supervisor lives, and the record keeps
 * `unreleased` until it succeeds (best-effort.ts ledgers each failure and the retry).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Jail } from '../jail/index.js';
import { BrigError, toBrigError } from '../util/errors.js';
import { bestEffort, engineDown, type Persist } from './best-effort.js';
import { collectOutputs } from './launch.js';
import type { RunEndMeta, SupervisorDeps } from './ports.js';
import type { ProgressFork } from './progress-fork.js';
import type { EndOptions, Live, RunTable } from './run-table.js';
import { elapsedMs, end, transition } from './state-machine.js';
import { jailKeyOf } from './run-record.js';
import { slotKey } from './admission.js';
import type { EndReason, PendingEnd, RunRecord, SupervisorSettings } from './types.js';

/** How long after a run's envelope its release starts (issue 26): its slot stays taken until the release is done. */
export const RELEASE_AFTER_MS = 30;

/** A failed hook's reason for the ledger: its message, one line, bounded (never the hook's output). */
export function hookWhy(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0]!.slice(0, 200);
}

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
    resultPath: r.resultDir,
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
  /** Aborted when the supervisor stops: ends waiting on the engine are left to the next start. */
  stopping: AbortSignal;
}

/** A release step to do (again). */
type Step = { what: string; run: () => Promise<unknown> };

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
        const done = await this.#materialize(runId, handle.jail, {
          reason,
          ...(o.killedBy ? { killedBy: o.killedBy } : {}),
          ...(o.error ? { error: o.error } : {}),
          ...(o.exitCode !== undefined ? { exitCode: o.exitCode } : {}),
          ...(o.oomKilled ? { oomKilled: true } : {}),
        }, o.onRecorded);
        // The supervisor stopped while the engine kept the end waiting: the next start finishes it.
        if (!done) return false;
        table.mark(runId, 'collected');
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
      table.mark(runId, 'ended_durable');
      o.onRecorded?.();
      // Children go first, attributed to their parent, before the parent's lease revoke
      // cascades to theirs (which would read as a `system` kill).
      const children = table.all().filter((c) => c.parentRunId === runId && c.status !== 'ended');
      await Promise.all(children.map((c) => this.endRun(c.id, 'killed', { killedBy: 'parent' })));
      // Before anyone is told: the run's channels close and its lease is revoked, so nothing
      // the run held answers or authorizes after its end is announced.
      // A jail not collected (a start that failed, a ghost) may still run: it is killed first.
      const failed = await this.#revoke(rec, handle, o.collect === false);
      table.live.delete(runId);
      // The slot stays taken (admission's `held`) until the jail is released below.
      table.releasing.set(runId, slotKey(rec));
      this.#announce(rec);
      table.mark(runId, 'envelope');
      // Through the door: a wait() from here on must see the end at once, not wait for a notify already sent.
      table.ending.delete(runId);
      table.notifyEnded(runId);
      table.rollbacks.delete(runId);
      // Off the critical path (issue 26): the jail, its disk and its files go after the waiters
      // were told. The record says `unreleased` (durable since the end): a crash from here on
      // is released by the next start (reconcile's finishEnd), never twice.
      // Background work idle() waits for, whoever called this door.
      // It starts RELEASE_AFTER_MS after the envelope: the coordinator's next call (reading the
      // envelope, a slice) is served before the engine's removal competes with it for the cores.
      // A close or a shutdown (idle()) starts it at once.
      // The record's last writes (the flag, the timing) are part of it: a close waits for the
      // run's `releasing` to empty, and closes the journal after.
      const release = table.after(RELEASE_AFTER_MS).then(async () => {
        failed.push(...(await this.#release(rec, handle)));
        table.mark(runId, 'released');
        // Released: `unreleased` goes. Not: the record keeps it while the failed steps are tried again.
        if (failed.length === 0) await this.#released(runId);
        else this.#retryLater(runId, failed);
        await this.#saveTiming(runId);
      }).finally(() => table.releasing.delete(runId));
      table.background(release);
      await release;
      try {
        await this.d.deps.hooks?.onEnded?.(endMeta(rec, table.clock.now()));
      } catch (e) {
        table.ledger.append({ type: 'run.hook_failed', runId, hook: 'onEnded', why: hookWhy(e) });
      }
      return true;
    } finally {
      table.ending.delete(runId);
      this.d.pump();
    }
  }

  /**
   * Collects what the run wrote, however it ends. The pending end is saved first: the end is
   * recorded before anything waits on the engine, and a crash mid-way is redone by the next
   * start. A run cut short is then stopped (so its files hold still) and its result marked
   * partial. Stopping and collecting wait for the engine; false when the supervisor stopped
   * before the engine came back (the end stays saved as pending, for the next start).
   */
  async #materialize(runId: string, jail: Jail, pending: PendingEnd, onRecorded?: () => void): Promise<boolean> {
    const { table } = this.d;
    const cutShort = CUT_SHORT.has(pending.reason);
    const t = transition(table.get(runId)!, 'materializing', table.clock.now());
    // The durable point: a kill or an exit is on disk before the engine is asked anything.
    await bestEffort(table, runId, 'save_pending_end', () => table.update(runId, (x) => ({ ...(t.ok ? t.value : x), pendingEnd: pending, ...(cutShort ? { partial: true } : {}) })));
    table.mark(runId, 'pending_end_durable');
    onRecorded?.();
    const persist: Persist = { signal: this.d.stopping, retryable: engineDown };
    // An agent gets SIGTERM and a grace for its one salvage call and its partial result;
    // anything else is stopped at once so its files hold still. Ended by the supervisor while
    // the child still runs (its step budget spent): stopped too, before its out/ is read.
    const agent = table.get(runId)!.kind === 'agent';
    const stop = cutShort ? () => (agent ? jail.stop(this.d.settings.agentStopGraceMs) : jail.kill()) : pending.exitCode === undefined ? () => jail.kill() : undefined;
    if (stop) {
      await bestEffort(table, runId, 'stop', stop, persist);
      if (this.d.stopping.aborted) return false;
    }
    let patch: Partial<RunRecord> = {};
    const collect = async () => {
      patch = await collectOutputs({ table, results: this.d.deps.results, settings: this.d.settings }, runId, jail);
      // The engine went away under the collection: it is redone from nothing once it is back.
      if (patch.error?.code === 'engine_unavailable') throw new BrigError('engine_unavailable', patch.error.message);
    };
    if (!(await bestEffort(table, runId, 'collect', collect, persist)) && this.d.stopping.aborted) return false;
    // Not durable: the end's save carries it; a crash before is redone from pendingEnd.
    table.patch(runId, (x) => ({ ...x, ...patch }));
    return true;
  }

  /**
   * After a restart: a run whose end was saved but whose release or announcement the dead
   * supervisor never finished. Its container and volume go with the start-up sweep.
   */
  async finishEnd(runId: string): Promise<void> {
    const r = this.d.table.get(runId);
    if (!r || r.status !== 'ended' || !r.unreleased) return;
    const failed = [...(await this.#revoke(r, undefined)), ...(await this.#release(r, undefined))];
    // The dead supervisor may have announced before it could clear the flag (its ledger lines
    // are on disk as soon as appended): exactly one announcement, whichever side the crash fell.
    if (!this.d.table.ledger.hasRunEvent?.('run.lifecycle_ended', runId)) this.#announce(r);
    if (failed.length === 0) await this.#released(runId);
    else this.#retryLater(runId, failed);
  }

  /** The run's marks onto its record, after its waiters were told (not durable: a crash loses only the timing). */
  async #saveTiming(runId: string): Promise<void> {
    const { table } = this.d;
    const sw = table.timing.get(runId);
    if (!sw) return;
    table.timing.delete(runId);
    await bestEffort(table, runId, 'save_timing', () => table.update(runId, (x) => ({ ...x, timing: sw.toJSON() }), { durable: false }));
  }

  /** The release is done: the flag goes. Not durable: losing it only repeats the (idempotent) release at the next start. */
  async #released(runId: string): Promise<void> {
    const { table } = this.d;
    await bestEffort(table, runId, 'save_released', () => table.update(runId, (x) => {
      const { unreleased: _u, ...done } = x;
      return done;
    }, { durable: false }));
  }

  /**
   * Not background work an idle() or a drain waits for: it lasts as long as the failure, and
   * the supervisor's stop ends it (the next start's release and sweep take over).
   */
  #retryLater(runId: string, failed: Step[]): void {
    this.#retryRelease(runId, failed).catch((e: unknown) => this.d.table.ledger.append({ type: 'run.internal_error', runId, code: toBrigError(e).code }));
  }

  /** The release steps that failed, tried again while the supervisor lives; then the flag goes. */
  async #retryRelease(runId: string, failed: Step[]): Promise<void> {
    const { table } = this.d;
    // The first failure of each is already ledgered: these tries start from their second.
    const persist: Persist = { signal: this.d.stopping, failedBefore: 1 };
    const done = await Promise.all(failed.map((s) => bestEffort(table, runId, s.what, s.run, persist)));
    if (done.every(Boolean)) await this.#released(runId);
  }

  /** A release step, ledgered when it fails and kept in `failed` to be tried again. */
  #stepper(id: string, failed: Step[]) {
    const { table } = this.d;
    return async (what: string, run: () => Promise<unknown>) => {
      if (!(await bestEffort(table, id, what, run))) failed.push({ what, run });
    };
  }

  /**
   * What must end with the run, before its end is announced: the broker and egress channels
   * close (side by side) and the lease is revoked (idempotent: a redo after a crash revokes
   * nothing twice). Returns the steps that failed.
   */
  async #revoke(r: RunRecord, handle: Live | undefined, kill = false): Promise<Step[]> {
    const failed: Step[] = [];
    const step = this.#stepper(r.id, failed);
    // Collected jails were stopped (or had exited) before their outputs were read.
    if (kill) await handle?.jail?.kill().catch(() => {});
    const broker = handle?.broker;
    const egress = handle?.egress;
    await Promise.all([
      broker ? step('broker', () => broker.close()) : undefined,
      egress ? step('egress', () => egress.close(r.error?.code === 'lease_expired' ? 'lease_revoked' : 'ended')) : undefined,
    ]);
    const leaseId = r.leaseId;
    if (leaseId) await step('lease', () => this.d.deps.leases.revoke(leaseId, 'system', `run_${r.endReason}`));
    return failed;
  }

  /** Releases what the run held on the host (jail, disk, socket directory, files); returns the steps that failed. */
  async #release(r: RunRecord, handle: Live | undefined): Promise<Step[]> {
    const { deps, table } = this.d;
    const failed: Step[] = [];
    const step = this.#stepper(r.id, failed);
    // The jail and the socket directory go side by side (neither needs the other).
    const jail = async () => {
      // A kill of a jail that already exited is no failure: only its destroy must succeed.
      await handle?.jail?.kill().catch(() => {});
      const j = handle?.jail;
      if (j) await step('jail', () => j.destroy());
      else if (r.startedAt !== null) {
        // No handle (a restart): found again through the engine, on each try.
        await step('jail', async () => (await deps.jail.attach(jailKeyOf(r)))?.destroy());
      }
    };
    const socket = async () => {
      for (const dir of new Set([r.id, jailKeyOf(r)])) await step('socket_dir', () => fs.rm(path.join(deps.paths.brokers, dir), { recursive: true, force: true }));
    };
    await Promise.all([jail(), socket()]);
    if (!r.resumable) {
      await step('checkpoint', () => table.store.removeFile(r.id, 'checkpoint'));
      await step('script', () => table.store.removeFile(r.id, 'script'));
    }
    return failed;
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
