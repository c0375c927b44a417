/**
 * The API client: the Supervisor interface over the daemon's unix socket — short JSON calls
 * on bare sockets (wire.ts), the event stream on node:http. A thin CLI command loads neither
 * undici nor node:http (bench/cli.bench.ts). Error
 * replies become BrigErrors with the daemon's code and hint, so a face cannot tell (and need
 * not care) whether it talks to a daemon or to an in-process supervisor.
 */
import { SseParser, type SseEvent } from '../util/sse.js';
import {
  API_ROUTES,
  BrigError,
  err,
  isErrorCode,
  ok,
  routePath,
  type EventsOptions,
  type HistoryPage,
  type KillOptions,
  type ListFilter,
  type RunPage,
  type ReconcileReport,
  type Result,
  type RouteInputs,
  type RouteName,
  type RouteParams,
  type RouteReplies,
  type RunRecord,
  type ResumeOptions,
  type SendOptions,
  type SendOutcome,
  type SpawnContext,
  type SpawnRequest,
  type SpawnRequestInput,
  type SteerOutcome,
  type Supervisor,
  type SupervisorEvent,
  type WaitOptions,
  type ApiCaller,
} from '../protocol/index.js';
import { exchange, type WireReply } from './wire.js';

type ErrorReply = { error?: { code: string; message: string; hint: string; data?: Record<string, unknown> } };

/** The daemon's error body as the BrigError it was on the other side. */
function replyError(status: number, json: ErrorReply): BrigError {
  const e = json.error;
  const code = e && isErrorCode(e.code) ? e.code : 'internal';
  return new BrigError(code, e?.message ?? `HTTP ${status}`, { ...(e?.hint ? { hint: e.hint } : {}), ...(e?.data ? { data: e.data } : {}) });
}

/**
 * The stream only ends when the daemon does (it stopped, was killed, or its socket closed):
 * the caller hears that as daemon_unavailable, never as a transport error.
 */
function streamEnded(cause?: unknown): BrigError {
  return new BrigError('daemon_unavailable', 'the daemon stopped; the event stream ended', {
    hint: 'Start `brig serve` again, then follow the events again.',
    ...(cause !== undefined ? { cause } : {}),
  });
}

/** A reply's JSON body; an empty or non-JSON body reads as {} (its status still decides). */
function parseJson<T>(text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    return {} as T;
  }
}

/**
 * The event stream, on its own connection, parsed by the project's one SSE parser. A stream
 * torn after it delivered something (the daemon drops a reader that lags) is reconnected once
 * with `Last-Event-ID`, so the daemon replays what was missed (or says `gap`); a stream that
 * ends again before delivering anything, or a daemon that no longer answers, is
 * `streamEnded`. Ends quietly only on the caller's abort. The graphs' events (`graph.*`) on the
 * same stream move `Last-Event-ID` on but are not yielded: these are the runs' events.
 */
async function* followEvents(socketPath: string, path: string, signal: AbortSignal | undefined, caller: ApiCaller, onSubscribed?: () => void): AsyncGenerator<SupervisorEvent> {
  const aborted = () => signal?.aborted === true;
  let lastId: string | undefined;
  for (;;) {
    let delivered = false;
    for await (const ev of oneStream(socketPath, path, signal, caller, lastId, onSubscribed)) {
      if (ev.id !== undefined) lastId = ev.id;
      // `gap`: the daemon no longer holds what came after lastId; the stream goes on from now.
      if (ev.event === 'gap') continue;
      delivered = true;
      // The graphs' events share the stream (and its ids); Supervisor.events yields run events.
      if (ev.event.startsWith('graph.')) continue;
      yield JSON.parse(ev.data) as SupervisorEvent;
    }
    if (aborted()) return;
    if (!delivered || lastId === undefined) throw streamEnded();
  }
}

/** One connection's events until it ends (returns) or the daemon does not answer (throws). */
async function* oneStream(socketPath: string, path: string, signal: AbortSignal | undefined, caller: ApiCaller, lastId: string | undefined, onSubscribed?: () => void): AsyncGenerator<SseEvent> {
  const aborted = () => signal?.aborted === true;
  // node:http only here: the stream is long-lived, and a short call should not load it.
  const http = await import('node:http');
  let res: import('node:http').IncomingMessage;
  try {
    res = await new Promise((resolve, reject) => {
      const headers: Record<string, string> = { 'x-brig-client': caller, ...(lastId !== undefined ? { 'last-event-id': lastId } : {}) };
      const req = http.request({ socketPath, method: 'GET', path, agent: false, headers, ...(signal ? { signal } : {}) });
      req.once('response', resolve);
      req.once('error', reject);
      req.end();
    });
  } catch (e) {
    if (aborted()) return;
    if (lastId !== undefined) throw streamEnded(e);
    throw new BrigError('daemon_unavailable', `the daemon at ${socketPath} did not answer`, { cause: e });
  }
  try {
    if (res.statusCode !== 200) {
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      throw replyError(res.statusCode ?? 0, parseJson<ErrorReply>(Buffer.concat(chunks).toString('utf8')));
    }
    // The daemon subscribes in the tick it writes the head: from here nothing is missed.
    onSubscribed?.();
    const parser = new SseParser();
    // Iterated by hand so that only the transport's failure reads as the stream's end.
    const body = res[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = await body.next();
      } catch {
        return;
      }
      if (next.done) return;
      yield* parser.push(next.value);
    }
  } finally {
    res.destroy();
  }
}

/** A GET route's input as its query string: a list repeats its key (`?status=a&status=b`). */
function queryOf(input: unknown): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries((input ?? {}) as Record<string, unknown>)) {
    if (v === undefined || v === null) continue;
    for (const x of Array.isArray(v) ? v : [v]) q.append(k, String(x));
  }
  return q.size ? `?${q}` : '';
}

/** The route call's arguments: its path parameters when it has any, its query or body when it takes one. */
export type RouteCall<N extends RouteName> = (keyof RouteParams<N> extends never ? { params?: undefined } : { params: RouteParams<N> }) & {
  input?: RouteInputs[N];
  signal?: AbortSignal | undefined;
};

export class ApiClient implements Supervisor {
  /** `caller`: the face this client speaks for (`X-Brig-Client`, on the daemon's log line of each request). */
  constructor(
    readonly socketPath: string,
    readonly caller: ApiCaller = 'library',
  ) {}

  /** True when a daemon answers on the socket (a hung one within 2 s counts as none). */
  static async probe(socketPath: string): Promise<boolean> {
    try {
      return (await exchange({ socketPath, method: 'GET', path: API_ROUTES.health.path, timeoutMs: 2000 })).status === 200;
    } catch {
      return false;
    }
  }

  probe(): Promise<boolean> {
    return ApiClient.probe(this.socketPath);
  }

  /**
   * One route of the contract (protocol/api.ts), typed by it: the path from its template, a
   * GET's input as the query, a POST's as the JSON body. One connection per call (calls run
   * side by side: a long wait blocks nothing). The daemon's error body becomes its BrigError;
   * a transport failure is daemon_unavailable.
   */
  async route<N extends RouteName>(name: N, call: RouteCall<N> = {} as RouteCall<N>): Promise<Result<RouteReplies[N], BrigError>> {
    const r = API_ROUTES[name];
    const path = routePath(name, (call.params ?? {}) as RouteParams<N>);
    const get = r.method === 'GET';
    let reply: WireReply;
    try {
      reply = await exchange({
        socketPath: this.socketPath,
        method: r.method,
        path: get ? `${path}${queryOf(call.input)}` : path,
        ...(!get ? { body: JSON.stringify(call.input ?? {}) } : {}),
        signal: call.signal,
        caller: this.caller,
      });
    } catch (e) {
      return err(new BrigError('daemon_unavailable', `the daemon at ${this.socketPath} did not answer`, { cause: e }));
    }
    const json = parseJson<ErrorReply & RouteReplies[N]>(reply.body);
    if (reply.status >= 400 || json.error) return err(replyError(reply.status, json));
    return ok(json);
  }

  async start(): Promise<ReconcileReport> {
    return { reattached: [], ghostSwept: [], swept: { containers: 0, volumes: 0 } };
  }

  /**
   * With `ctx.signal` a synchronous spawn is started async and waited on, so an abort
   * (Ctrl-C) knows which run to kill: killed by the operator, collected, returned ended.
   */
  async spawn(req: SpawnRequestInput, ctx: SpawnContext = {}): Promise<Result<RunRecord, BrigError>> {
    const signal = ctx.signal;
    if (!signal || req.async === true) return runOf(await this.route('spawn', { input: req }));
    const started = await this.route('spawn', { input: { ...req, async: true } });
    if (!started.ok) return started;
    const id = started.value.run.id;
    const kill = () => void this.kill(id, { confirm: true, by: 'operator' });
    if (signal.aborted) kill();
    else signal.addEventListener('abort', kill, { once: true });
    try {
      for (;;) {
        const w = await this.wait(id, { timeoutMs: 30_000 });
        if (!w.ok || w.value.status === 'ended') return w;
      }
    } finally {
      signal.removeEventListener('abort', kill);
    }
  }

  async check(req: SpawnRequestInput): Promise<Result<SpawnRequest, BrigError>> {
    const r = await this.route('checkSpawn', { input: req });
    return r.ok ? ok(r.value.request) : r;
  }

  async wait(runId: string, opts: WaitOptions = {}): Promise<Result<RunRecord, BrigError>> {
    return runOf(await this.route('wait', { params: { run: runId }, input: opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}, signal: opts.signal }));
  }

  async list(filter: ListFilter = {}): Promise<RunRecord[]> {
    return (await this.page(filter)).runs;
  }

  async page(filter: ListFilter = {}): Promise<RunPage> {
    const { sinceMinutes, ...rest } = filter;
    const r = await this.route('listRuns', { input: { ...rest, ...(sinceMinutes !== undefined ? { since: sinceMinutes } : {}) } });
    if (!r.ok) throw r.error;
    return { runs: r.value.runs, more: r.value.more ?? 0 };
  }

  async get(runId: string): Promise<RunRecord | undefined> {
    const r = await this.route('getRun', { params: { run: runId } });
    if (!r.ok && r.error.code === 'run_not_found') return undefined;
    if (!r.ok) throw r.error;
    return r.value.run;
  }

  async kill(runId: string, opts: KillOptions): Promise<Result<RunRecord, BrigError>> {
    const by = opts.by === 'system' ? 'system' : opts.by === 'operator' ? 'operator' : undefined;
    return runOf(await this.route('kill', { params: { run: runId }, input: { confirm: opts.confirm, ...(by ? { by } : {}) } }));
  }

  async steer(runId: string, message: string): Promise<Result<SteerOutcome, BrigError>> {
    const r = await this.route('steer', { params: { run: runId }, input: { message } });
    return r.ok ? ok(r.value.steer) : r;
  }

  async send(runId: string, text: string, opts: SendOptions = {}): Promise<Result<SendOutcome, BrigError>> {
    const r = await this.route('send', { params: { run: runId }, input: { text, ...opts } });
    return r.ok ? ok(r.value.send) : r;
  }

  async history(runId: string, opts: { offset?: number; limit?: number } = {}): Promise<Result<HistoryPage, BrigError>> {
    const r = await this.route('history', { params: { run: runId }, input: opts });
    return r.ok ? ok(r.value.history) : r;
  }

  async resume(runId: string, opts: ResumeOptions = {}): Promise<Result<RunRecord, BrigError>> {
    return runOf(await this.route('resume', { params: { run: runId }, input: opts }));
  }

  async replay(runId: string): Promise<Result<RunRecord, BrigError>> {
    return runOf(await this.route('replay', { params: { run: runId }, input: {} }));
  }

  events(opts: EventsOptions = {}): AsyncIterableIterator<SupervisorEvent> {
    const input = { ...(opts.runId ? { runId: opts.runId } : {}), ...(opts.rootRunId ? { rootRunId: opts.rootRunId } : {}) };
    return followEvents(this.socketPath, `${API_ROUTES.events.path}${queryOf(input)}`, opts.signal, this.caller, opts.onSubscribed);
  }

  /** Nothing is held between calls (an event stream closes with its iterator). */
  async close(): Promise<void> {}
}

function runOf(r: Result<{ run: RunRecord }, BrigError>): Result<RunRecord, BrigError> {
  return r.ok ? ok(r.value.run) : r;
}
