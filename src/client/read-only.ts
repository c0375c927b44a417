import fs, { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import {
  BrigError,
  RUN_FILES,
  err,
  filterRuns,
  filterRunsPage,
  isRunId,
  ok,
  runRecordProblem,
  type Brig,
  type EventsOptions,
  type HistoryPage,
  type KillOptions,
  type ListFilter,
  type RunPage,
  type OperatorSurface,
  type ReconcileReport,
  type RefSurface,
  type Result,
  type RunRecord,
  type SendOutcome,
  type SpawnRequest,
  type SpawnRequestInput,
  type SteerOutcome,
  type Supervisor,
  type SupervisorEvent,
  type WaitOptions,
} from '../protocol/index.js';
import { brigOf } from './brig-of.js';

/**
 * The run records on disk ($BRIG_HOME/runs/<id>/run.json), read-only: what a face without a
 * daemon needs for list, get and wait, without building a supervisor (no engine, no ledger,
 * no broker, no schema library). Each file is judged by protocol's runRecordProblem, the
 * check the supervisor's RunStore applies too: a file that is not a record is not listed, and
 * named as corrupt when asked for by id. Everything that would change a run says how to get a
 * daemon, or that the run ended.
 */
class RecordsOnDisk {
  constructor(private readonly dir: string) {}

  #file(id: string): string {
    return path.join(this.dir, id, RUN_FILES.record);
  }

  /** A record, undefined when there is none; a file that is not one is `corrupt`. */
  async load(id: string): Promise<RunRecord | undefined> {
    if (!isRunId(id)) return undefined;
    let text: string;
    try {
      // fs.promises, not node:fs/promises: its module (and readline's, which it loads) only when read here.
      text = await fs.promises.readFile(this.#file(id), 'utf8');
    } catch {
      return undefined;
    }
    return parsed(id, text);
  }

  /** Every record; files being written or not records are left out (as load() names them). */
  loadAll(): RunRecord[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: RunRecord[] = [];
    for (const n of names) {
      if (!isRunId(n)) continue;
      try {
        out.push(parsed(n, readFileSync(this.#file(n), 'utf8')));
      } catch {
        // gone, being written, or corrupt: not listed
      }
    }
    return out;
  }
}

function parsed(id: string, text: string): RunRecord {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    v = undefined;
  }
  const problem = runRecordProblem(v);
  if (problem !== null) throw new BrigError('state_corrupt', `the record of run ${id} is not a run record: ${problem}`, { data: { runId: id } });
  return v as RunRecord;
}

export class ReadOnlyRuns implements Supervisor {
  readonly #store: RecordsOnDisk;

  constructor(runsDir: string) {
    this.#store = new RecordsOnDisk(runsDir);
  }

  async start(): Promise<ReconcileReport> {
    return { reattached: [], ghostSwept: [], swept: { containers: 0, volumes: 0 } };
  }

  async list(f: ListFilter = {}): Promise<RunRecord[]> {
    return filterRuns(this.#store.loadAll(), f);
  }

  async page(f: ListFilter = {}): Promise<RunPage> {
    return filterRunsPage(this.#store.loadAll(), f);
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

  async check(_r: SpawnRequestInput): Promise<Result<SpawnRequest, BrigError>> {
    return err(new BrigError('daemon_unavailable', 'this view is read-only: the policy and agent specs are checked by a supervisor', { hint: 'Start `brig serve`, or spawn through an in-process supervisor.' }));
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

  async replay(_id: string): Promise<Result<RunRecord, BrigError>> {
    return err(new BrigError('daemon_unavailable', 'this view is read-only'));
  }

  events(_o?: EventsOptions): AsyncIterableIterator<SupervisorEvent> {
    throw new BrigError('daemon_unavailable', 'events come from a running daemon', { hint: 'Start `brig serve`.' });
  }

  async close(): Promise<void> {}
}

/** A Brig on the records on disk: list/get/wait read them; `refs` and `operator` are what the caller gives. */
export function readOnlyBrig(runsDir: string, refs: RefSurface, operator: OperatorSurface, closeRest: () => Promise<void> = async () => {}): Brig {
  return brigOf(new ReadOnlyRuns(runsDir), 'read', refs, operator, closeRest);
}
