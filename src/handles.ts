/**
 * The library with handles: what an integrator holds, over the same `Brig` every face uses.
 *
 *   await using brig = await open();                                   // AsyncDisposable
 *   const run = await brig.spawn({ task: 'count', argv: ['sh', '-c', 'wc -l < /etc/passwd > out/n'] }).orThrow();
 *   const ended = await run.wait().orThrow();                          // RunRecord, ended
 *   const rows = await run.refs.sql('out/n', 'SELECT * FROM ref').orThrow();
 *
 * Every call answers a `Result` (expected refusals are values, as everywhere in brig) that also
 * has `orThrow()` for those who prefer exceptions. The request is the camelCase one with units in
 * its names (`limits.timeoutMs`) — MCP's `spawn` arguments, one schema (runs/spawn-args.ts),
 * mapped to the wire's names in one place (SPAWN_FIELDS, docs/api.md's table). A spawn returns
 * once the run is admitted; `run.wait()` follows it to its end. A ref is named by its id or by
 * its path in the run (`out/n`). `await using run = …` kills a run still live when the block is
 * left (and waits for its end); `await using brig = …` closes the Brig. `events()` resolves once
 * subscribed: an event of a spawn made after it is never missed.
 */
import { openBrig, type OpenBrigOptions } from './open-brig.js';
import { SpawnArgsSchema, toSpawnRequest, type SpawnArgs } from './runs/index.js';
import {
  BrigError,
  type Brig,
  type EventsOptions,
  type GrepOptions,
  type KilledBy,
  type ReadRange,
  type Result,
  type ResultOptions,
  type ResultRef,
  type RunRecord,
  type RunResult,
  type SliceOutput,
  type SteerOutcome,
  type SupervisorEvent,
} from './protocol/index.js';

/** A call's answer: a Result, and `orThrow()` for the value or the BrigError thrown. */
export type Outcome<T> = Promise<Result<T>> & { orThrow(): Promise<T> };

/** The spawn options: camelCase, units in names; exactly one of `argv`, `script`, `agent`. */
export type SpawnOptions = SpawnArgs;

export interface RunRefs {
  /** The run's ResultRefs. */
  list(): Outcome<ResultRef[]>;
  /** Each verb takes a ref id (`ref_…`) or a ref's path in this run (`out/rows.jsonl`, `answer.txt`). */
  read(ref: string, range: ReadRange): Outcome<SliceOutput>;
  grep(ref: string, pattern: string, opts?: GrepOptions): Outcome<SliceOutput>;
  jq(ref: string, expr: string): Outcome<SliceOutput>;
  sql(ref: string, query: string, opts?: { maxRows?: number }): Outcome<SliceOutput>;
  jsonpath(ref: string, expr: string, opts?: { maxRows?: number }): Outcome<SliceOutput>;
}

export interface RunHandle extends AsyncDisposable {
  readonly id: string;
  /** The record spawn answered with (queued or running). */
  readonly spawned: RunRecord;
  /** The record now (undefined once it is no longer known). */
  status(): Promise<RunRecord | undefined>;
  /** Until the run ends — or `timeoutMs` passes, answering the record as it is then. */
  wait(o?: { timeoutMs?: number; signal?: AbortSignal }): Outcome<RunRecord>;
  /** Kill it (a handle's kill is confirmed by calling it); the ended record. */
  kill(o?: { by?: KilledBy }): Outcome<RunRecord>;
  steer(message: string): Outcome<SteerOutcome>;
  /** Its envelope, condensation and savings, and its refs (an ended run). */
  result(o?: ResultOptions): Outcome<RunResult>;
  readonly refs: RunRefs;
}

/** A subscribed event stream: iterate it; `close()` (or `break`) ends the subscription. */
export interface EventStream extends AsyncIterableIterator<SupervisorEvent>, AsyncDisposable {
  close(): Promise<void>;
}

export interface BrigClient extends AsyncDisposable {
  /** The whole surface underneath (refs, operator, graphs, list…), for what handles do not cover. */
  readonly brig: Brig;
  readonly mode: Brig['mode'];
  /** Admit a run and answer its handle; `signal` aborting kills it. */
  spawn(o: SpawnOptions, ctx?: { signal?: AbortSignal }): Outcome<RunHandle>;
  /** A handle on a run that exists (run_not_found otherwise). */
  run(runId: string): Outcome<RunHandle>;
  /** Resolves once subscribed: what happens after this resolves is in the stream. */
  events(o?: Omit<EventsOptions, 'onSubscribed'>): Promise<EventStream>;
  close(): Promise<void>;
}

/** A promise of a Result, with orThrow (pure wrapper). */
export function outcome<T>(p: Promise<Result<T>>): Outcome<T> {
  return Object.assign(p, {
    orThrow: () =>
      p.then((r) => {
        if (r.ok) return r.value;
        throw r.error;
      }),
  });
}

const okv = <T>(value: T): Result<T> => ({ ok: true, value });
const errv = <T>(error: BrigError): Result<T> => ({ ok: false, error });
const ended = (r: RunRecord) => r.status === 'ended';

/** Open a Brig (openBrig's options: the daemon when one answers, else in process) with handles. */
export async function open(o: OpenBrigOptions = {}): Promise<BrigClient> {
  return clientOf(await openBrig({ caller: 'library', ...o }));
}

/** Handles over a Brig you already hold; closing the client closes it. */
export function clientOf(brig: Brig): BrigClient {
  const handle = (rec: RunRecord): RunHandle => runHandle(brig, rec);
  const close = () => brig.close();
  return {
    brig,
    mode: brig.mode,
    spawn: (args, ctx = {}) =>
      outcome(
        (async () => {
          const parsed = SpawnArgsSchema.safeParse(args);
          if (!parsed.success) {
            const i = parsed.error.issues[0]!;
            return errv(new BrigError('invalid_input', `spawn: ${i.path.join('.') || 'options'}: ${i.message}`, { hint: 'The options are camelCase with units in their names (limits.timeoutMs); docs/api.md, "The library with handles".' }));
          }
          const req = toSpawnRequest(parsed.data);
          if (!req.ok) return req;
          const r = await brig.spawn({ ...req.value, async: true }, ctx.signal ? { signal: ctx.signal } : {});
          return r.ok ? okv(handle(r.value)) : r;
        })(),
      ),
    run: (runId) =>
      outcome(
        (async () => {
          const rec = await brig.get(runId);
          return rec ? okv(handle(rec)) : errv(new BrigError('run_not_found', `no run ${JSON.stringify(runId.slice(0, 80))}`));
        })(),
      ),
    events: (o = {}) => subscribed(brig, o),
    close,
    [Symbol.asyncDispose]: close,
  };
}

function runHandle(brig: Brig, spawned: RunRecord): RunHandle {
  const id = spawned.id;
  const wait = (o: { timeoutMs?: number; signal?: AbortSignal } = {}) =>
    outcome(
      (async (): Promise<Result<RunRecord>> => {
        const deadline = o.timeoutMs !== undefined ? Date.now() + o.timeoutMs : undefined;
        for (;;) {
          const left = deadline !== undefined ? Math.max(0, deadline - Date.now()) : undefined;
          const r = await brig.wait(id, { ...(left !== undefined ? { timeoutMs: Math.max(1, left) } : {}), ...(o.signal ? { signal: o.signal } : {}) });
          // A bounded wait (the daemon answers at least every so often) is followed again until the end.
          if (!r.ok || ended(r.value) || (deadline !== undefined && Date.now() >= deadline) || o.signal?.aborted) return r;
        }
      })(),
    );
  const byPath = async (refOrPath: string): Promise<Result<string>> => {
    if (/^ref_[a-z2-7]{26}$/.test(refOrPath)) return okv(refOrPath);
    const refs = await brig.refs.list(id);
    if (!refs.ok) return refs;
    const hit = refs.value.find((r) => r.path === refOrPath);
    if (hit) return okv(hit.ref);
    const paths = refs.value.slice(0, 10).map((r) => r.path);
    return errv(new BrigError('ref_not_found', `run ${id} has no ref ${JSON.stringify(refOrPath.slice(0, 200))}`, { hint: paths.length ? `Its refs: ${paths.join(', ')}${refs.value.length > 10 ? ', …' : ''}.` : 'It has no refs (yet): wait for it to end.' }));
  };
  const slice = (refOrPath: string, f: (ref: string) => Promise<Result<SliceOutput>>) =>
    outcome(
      (async () => {
        const ref = await byPath(refOrPath);
        return ref.ok ? f(ref.value) : ref;
      })(),
    );
  const kill = (o: { by?: KilledBy } = {}) => outcome(brig.kill(id, { confirm: true, ...(o.by ? { by: o.by } : {}) }));
  return {
    id,
    spawned,
    status: () => brig.get(id),
    wait,
    kill,
    steer: (message) => outcome(brig.steer(id, message)),
    result: (o) => outcome(brig.refs.result(id, o)),
    refs: {
      list: () => outcome(brig.refs.list(id)),
      read: (ref, range) => slice(ref, (r) => brig.refs.read(r, range)),
      grep: (ref, pattern, opts) => slice(ref, (r) => brig.refs.grep(r, pattern, opts)),
      jq: (ref, expr) => slice(ref, (r) => brig.refs.jq(r, expr)),
      sql: (ref, query, opts) => slice(ref, (r) => brig.refs.sql(r, query, opts)),
      jsonpath: (ref, expr, opts) => slice(ref, (r) => brig.refs.jsonpath(r, expr, opts)),
    },
    // Leaving an `await using` block: a run still live is killed, and its end waited for.
    [Symbol.asyncDispose]: async () => {
      const now = await brig.get(id);
      if (!now || ended(now)) return;
      const k = await brig.kill(id, { confirm: true });
      if (!k.ok && k.error.code !== 'not_running') throw k.error;
      await wait();
    },
  };
}

/** The stream, once its subscription is in place (the daemon's stream answered, or the bus took it). */
async function subscribed(brig: Brig, o: Omit<EventsOptions, 'onSubscribed'>): Promise<EventStream> {
  const stop = new AbortController();
  if (o.signal) o.signal.addEventListener('abort', () => stop.abort(), { once: true });
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const it = brig.events({ ...o, signal: stop.signal, onSubscribed: ready });
  // The first pull starts the subscription; its answer is kept for the first iteration.
  const first = it.next();
  first.catch(() => {}); // a failure after subscribing reaches the first iteration, not the process
  await Promise.race([isReady, first.then(() => undefined)]);
  let pending: Promise<IteratorResult<SupervisorEvent>> | undefined = first;
  const close = async () => {
    stop.abort();
    await it.return?.();
  };
  const stream: EventStream = {
    next: () => {
      const p = pending ?? it.next();
      pending = undefined;
      return p;
    },
    return: async () => {
      await close();
      return { done: true, value: undefined };
    },
    close,
    [Symbol.asyncIterator]: () => stream,
    [Symbol.asyncDispose]: close,
  };
  return stream;
}
