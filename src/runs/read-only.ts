import { BrigError, err, ok, type Result } from '../util/errors.js';
import { RunStore } from './run-store.js';
import { filtered } from './views.js';
import type { HistoryPage, SendOutcome } from './types.js';
import type {
  EventsOptions,
  KillOptions,
  ListFilter,
  ReconcileReport,
  RunRecord,
  SpawnRequestInput,
  SteerOutcome,
  Supervisor,
  SupervisorEvent,
  WaitOptions,
} from './types.js';

/**
 * The run records on disk, read-only: what a CLI command without a daemon needs for list,
 * get and wait, without building a supervisor (no engine, no ledger segment, no broker).
 * Everything that would change a run says how to get a daemon, or that the run ended.
 */
export class ReadOnlyRuns implements Supervisor {
  readonly #store: RunStore;

  constructor(runsDir: string) {
    this.#store = new RunStore(runsDir);
  }

  async start(): Promise<ReconcileReport> {
    return { reattached: [], ghostSwept: [], swept: { containers: 0, volumes: 0 } };
  }

  async list(f: ListFilter = {}): Promise<RunRecord[]> {
    return filtered(await this.#store.loadAll(), f);
  }

  get(runId: string): Promise<RunRecord | undefined> {
    return this.#store.load(runId);
  }

  async wait(runId: string, opts: WaitOptions = {}): Promise<Result<RunRecord, BrigError>> {
    const deadline = opts.timeoutMs !== undefined ? Date.now() + opts.timeoutMs : Infinity;
    for (;;) {
      const r = await this.#store.load(runId);
      if (!r) return err(new BrigError('run_not_found', `no run ${runId}`));
      if (r.status === 'ended' || Date.now() >= deadline || opts.signal?.aborted) return ok(r);
      await new Promise((res) => setTimeout(res, 250));
    }
  }

  async #refuse(runId: string, what: string): Promise<BrigError> {
    const r = await this.#store.load(runId);
    if (!r) return new BrigError('run_not_found', `no run ${runId}`);
    if (r.status === 'ended') {
      return new BrigError('not_running', `Run ${runId} is not running (status: ended) -- cannot ${what}`, { data: { runId, status: r.status, endReason: r.endReason } });
    }
    return new BrigError('daemon_unavailable', `run ${runId} is supervised by another process; ${what} needs the daemon`);
  }

  async kill(runId: string, _o: KillOptions): Promise<Result<RunRecord, BrigError>> {
    return err(await this.#refuse(runId, 'kill'));
  }

  async steer(runId: string, _m: string): Promise<Result<SteerOutcome, BrigError>> {
    return err(await this.#refuse(runId, 'steer'));
  }

  async spawn(_r: SpawnRequestInput): Promise<Result<RunRecord, BrigError>> {
    return err(new BrigError('daemon_unavailable', 'this view is read-only'));
  }

  async send(runId: string, _t: string): Promise<Result<SendOutcome, BrigError>> {
    return err(await this.#refuse(runId, 'send'));
  }

  async history(runId: string): Promise<Result<HistoryPage, BrigError>> {
    return err(await this.#refuse(runId, 'read history'));
  }

  async resume(_id: string): Promise<Result<RunRecord, BrigError>> {
    return err(new BrigError('daemon_unavailable', 'this view is read-only'));
  }

  events(_o?: EventsOptions): AsyncIterableIterator<SupervisorEvent> {
    throw new BrigError('daemon_unavailable', 'events come from a running daemon', { hint: 'Start `brig serve`.' });
  }

  async close(): Promise<void> {}
}
