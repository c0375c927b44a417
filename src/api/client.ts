/**
 * The API client: the Supervisor interface over the daemon's unix socket with undici. Error
 * replies become BrigErrors with the daemon's code and hint, so a face cannot tell (and need
 * not care) whether it talks to a daemon or to an in-process supervisor.
 */
import { Client, Pool } from 'undici';
import type {
  HistoryPage,
  SendOptions,
  SendOutcome,
  EventsOptions,
  KillOptions,
  ListFilter,
  ReconcileReport,
  RunRecord,
  SpawnContext,
  SpawnRequestInput,
  SteerOutcome,
  Supervisor,
  SupervisorEvent,
  WaitOptions,
} from '../runs/index.js';
import { BrigError, err, isErrorCode, ok, type Result } from '../util/errors.js';

type ErrorReply = { error?: { code: string; message: string; hint: string; data?: Record<string, unknown> } };

/** The daemon's error body as the BrigError it was on the other side. */
function replyError(status: number, json: ErrorReply): BrigError {
  const e = json.error;
  const code = e && isErrorCode(e.code) ? e.code : 'internal';
  return new BrigError(code, e?.message ?? `HTTP ${status}`, { ...(e?.hint ? { hint: e.hint } : {}), ...(e?.data ? { data: e.data } : {}) });
}

/** The blocks of an SSE buffer that are complete, as events, and the incomplete rest. */
function takeEvents(buf: string): { events: SupervisorEvent[]; rest: string } {
  const events: SupervisorEvent[] = [];
  let sep: number;
  while ((sep = buf.indexOf('\n\n')) !== -1) {
    const data = buf.slice(0, sep).split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
    buf = buf.slice(sep + 2);
    if (data) events.push(JSON.parse(data) as SupervisorEvent);
  }
  return { events, rest: buf };
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

/**
 * One SSE stream on its own connection. Ends quietly only on the caller's abort; the daemon's
 * end (a clean close or a torn socket) is `streamEnded`.
 */
async function* followEvents(socketPath: string, path: string, signal?: AbortSignal): AsyncGenerator<SupervisorEvent> {
  const client = new Client('http://brig', { socketPath, headersTimeout: 0, bodyTimeout: 0 });
  const aborted = () => signal?.aborted === true;
  try {
    let r;
    try {
      r = await client.request({ path, method: 'GET', ...(signal ? { signal } : {}) });
    } catch (e) {
      if (aborted()) return;
      throw new BrigError('daemon_unavailable', `the daemon at ${socketPath} did not answer`, { cause: e });
    }
    if (r.statusCode !== 200) throw replyError(r.statusCode, (await r.body.json().catch(() => ({}))) as ErrorReply);
    // Iterated by hand so that only the transport's failure reads as the daemon's end.
    const body = r.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const utf8 = new TextDecoder(); // streaming: a character split across chunks stays whole
    let buf = '';
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = await body.next();
      } catch (e) {
        if (aborted()) return;
        throw streamEnded(e);
      }
      if (next.done) {
        if (aborted()) return;
        throw streamEnded();
      }
      const got = takeEvents(buf + utf8.decode(next.value, { stream: true }));
      buf = got.rest;
      yield* got.events;
    }
  } finally {
    await client.destroy().catch(() => {});
  }
}

export class ApiClient implements Supervisor {
  // A pool, not one Client: a long wait or an SSE stream must not block other calls.
  readonly #client: Pool;

  constructor(readonly socketPath: string) {
    this.#client = new Pool('http://brig', { socketPath, headersTimeout: 0, bodyTimeout: 0, connections: 16 });
  }

  /** True when a daemon answers on the socket. */
  static async probe(socketPath: string): Promise<boolean> {
    const c = new Client('http://brig', { socketPath, connectTimeout: 1000, headersTimeout: 2000 });
    try {
      const r = await c.request({ path: '/v1/health', method: 'GET' });
      await r.body.dump();
      return r.statusCode === 200;
    } catch {
      return false;
    } finally {
      await c.close().catch(() => {});
    }
  }

  async #call<T>(method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal): Promise<Result<T, BrigError>> {
    let r;
    try {
      r = await this.#client.request({
        path,
        method,
        ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      return err(new BrigError('daemon_unavailable', `the daemon at ${this.socketPath} did not answer`, { cause: e }));
    }
    const json = (await r.body.json()) as ErrorReply & T;
    if (r.statusCode >= 400 || json.error) return err(replyError(r.statusCode, json));
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
    if (!signal || req.async === true) {
      const r = await this.#call<{ run: RunRecord }>('POST', '/v1/runs', req);
      return r.ok ? ok(r.value.run) : r;
    }
    const started = await this.#call<{ run: RunRecord }>('POST', '/v1/runs', { ...req, async: true });
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

  async wait(runId: string, opts: WaitOptions = {}): Promise<Result<RunRecord, BrigError>> {
    const r = await this.#call<{ run: RunRecord }>('POST', `/v1/runs/${encodeURIComponent(runId)}/wait`, opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}, opts.signal);
    return r.ok ? ok(r.value.run) : r;
  }

  async list(filter: ListFilter = {}): Promise<RunRecord[]> {
    const q = new URLSearchParams();
    for (const s of filter.status ?? []) q.append('status', s);
    for (const k of ['rootRunId', 'parentRunId', 'label'] as const) if (filter[k]) q.set(k, filter[k]!);
    for (const k of filter.kind ?? []) q.append('kind', k);
    if (filter.sinceMinutes !== undefined) q.set('since', String(filter.sinceMinutes));
    const r = await this.#call<{ runs: RunRecord[] }>('GET', `/v1/runs${q.size ? `?${q}` : ''}`);
    if (!r.ok) throw r.error;
    return r.value.runs;
  }

  async get(runId: string): Promise<RunRecord | undefined> {
    const r = await this.#call<{ run: RunRecord }>('GET', `/v1/runs/${encodeURIComponent(runId)}`);
    if (!r.ok && r.error.code === 'run_not_found') return undefined;
    if (!r.ok) throw r.error;
    return r.value.run;
  }

  async kill(runId: string, opts: KillOptions): Promise<Result<RunRecord, BrigError>> {
    const r = await this.#call<{ run: RunRecord }>('POST', `/v1/runs/${encodeURIComponent(runId)}/kill`, { confirm: opts.confirm, ...(opts.by ? { by: opts.by } : {}) });
    return r.ok ? ok(r.value.run) : r;
  }

  async steer(runId: string, message: string): Promise<Result<SteerOutcome, BrigError>> {
    const r = await this.#call<{ steer: SteerOutcome }>('POST', `/v1/runs/${encodeURIComponent(runId)}/steer`, { message });
    return r.ok ? ok(r.value.steer) : r;
  }

  async send(runId: string, text: string, opts: SendOptions = {}): Promise<Result<SendOutcome, BrigError>> {
    const r = await this.#call<{ send: SendOutcome }>('POST', `/v1/runs/${encodeURIComponent(runId)}/send`, { text, ...opts });
    return r.ok ? ok(r.value.send) : r;
  }

  async history(runId: string, opts: { offset?: number; limit?: number } = {}): Promise<Result<HistoryPage, BrigError>> {
    const q = new URLSearchParams();
    if (opts.offset !== undefined) q.set('offset', String(opts.offset));
    if (opts.limit !== undefined) q.set('limit', String(opts.limit));
    const r = await this.#call<{ history: HistoryPage }>('GET', `/v1/runs/${encodeURIComponent(runId)}/history${q.size ? `?${q}` : ''}`);
    return r.ok ? ok(r.value.history) : r;
  }

  async resume(runId: string): Promise<Result<RunRecord, BrigError>> {
    const r = await this.#call<{ run: RunRecord }>('POST', `/v1/runs/${encodeURIComponent(runId)}/resume`, {});
    return r.ok ? ok(r.value.run) : r;
  }

  events(opts: EventsOptions = {}): AsyncIterableIterator<SupervisorEvent> {
    const q = new URLSearchParams();
    if (opts.runId) q.set('runId', opts.runId);
    if (opts.rootRunId) q.set('rootRunId', opts.rootRunId);
    return followEvents(this.socketPath, `/v1/events${q.size ? `?${q}` : ''}`, opts.signal);
  }

  async close(): Promise<void> {
    await this.#client.close().catch(() => {});
  }
}
