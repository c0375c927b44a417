/**
 * How a supervisor sees runs it does not hold in memory. A reconciling supervisor (the
 * daemon, or openBrig in local mode) owns its home: every run is in its table. An
 * in-process CLI supervisor (`reconcile: false`) holds only the runs it spawns; the others
 * are read from disk, read-only — it may wait on them (polling their record) and adopt an
 * ended one (to resume it), but a live one belongs to another process.
 */
import { filterRunsPage, type RunPage } from '../protocol/index.js';
import { BrigError, err, ok, toBrigError, type Result } from '../util/errors.js';
import type { RunTable } from './run-table.js';
import type { ListFilter, RunRecord, WaitOptions } from './types.js';

export interface RunViews {
  list(filter: ListFilter): Promise<RunPage>;
  get(runId: string): Promise<RunRecord | undefined>;
  /** The run to act on (own, or an ended one taken from disk); a BrigError when another process supervises it. */
  adopt(runId: string): Promise<RunRecord | BrigError | undefined>;
  /** For a run this supervisor does not hold: watch its record on disk, or null when it is simply unknown. */
  waitElsewhere(runId: string, opts: WaitOptions): Promise<Result<RunRecord, BrigError>> | null;
}

/** The daemon's view: everything is in the table. */
export class OwnedViews implements RunViews {
  constructor(private readonly table: RunTable) {}
  async list(f: ListFilter): Promise<RunPage> {
    return filterRunsPage(this.table.all(), f);
  }
  async get(runId: string): Promise<RunRecord | undefined> {
    return this.table.get(runId);
  }
  async adopt(runId: string): Promise<RunRecord | undefined> {
    return this.table.get(runId);
  }
  waitElsewhere(): null {
    return null;
  }
}

/** An in-process supervisor's view: its own runs, and the rest read from disk. */
export class LocalViews implements RunViews {
  constructor(private readonly table: RunTable) {}

  async list(f: ListFilter): Promise<RunPage> {
    const all = new Map<string, RunRecord>();
    for (const r of (await this.table.store.loadAll()).records) all.set(r.id, r);
    for (const r of this.table.all()) all.set(r.id, r);
    return filterRunsPage(all.values(), f);
  }

  async get(runId: string): Promise<RunRecord | undefined> {
    return this.table.get(runId) ?? (await this.table.store.load(runId));
  }

  async adopt(runId: string): Promise<RunRecord | BrigError | undefined> {
    const mine = this.table.get(runId);
    if (mine) return mine;
    try {
      const r = await this.table.store.load(runId);
      if (!r) return undefined;
      if (r.status !== 'ended') {
        return new BrigError('daemon_unavailable', `run ${runId} is supervised by another process`, { hint: 'Start `brig serve` and run brig commands against it.' });
      }
      this.table.runs.set(r.id, r);
      return r;
    } catch (e) {
      return toBrigError(e);
    }
  }

  async waitElsewhere(runId: string, opts: WaitOptions): Promise<Result<RunRecord, BrigError>> {
    const deadline = opts.timeoutMs !== undefined ? Date.now() + opts.timeoutMs : Infinity;
    for (;;) {
      const r = await this.table.store.load(runId);
      if (!r) return err(new BrigError('run_not_found', `no run ${runId}`));
      if (r.status === 'ended' || Date.now() >= deadline || opts.signal?.aborted) return ok(r);
      await new Promise((res) => setTimeout(res, 250));
    }
  }
}
