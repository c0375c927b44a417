/**
 * The supervisor as a versioned JSON HTTP API (/v1/...) on a unix socket. Thin: it parses,
 * calls the Supervisor, and maps error kinds to HTTP statuses; errors are `{error: {code,
 * message, hint}}`. The socket is created 0600 inside $BRIG_HOME, so only the operator's uid
 * can reach it (filesystem permission is the authentication). Fails closed: a path under
 * /v1/runs/RUN whose RUN is not a known run is 404 run_not_found (a malformed id never reaches
 * the supervisor); another unknown route is 404 route_not_found, a known one asked with another
 * method 405 method_not_allowed (with Allow), a body over 2 MiB 413 body_too_large, bad JSON 400.
 */
import http from 'node:http';
import { promises as fs } from 'node:fs';
import { isRunId, RUN_KINDS, RUN_STATUSES, type KilledBy, type RunKind, type SendMode, type ListFilter, type RefService, type RunStatus, type Supervisor } from '../runs/index.js';
import { findRoute, invalidRequest, openapiDocument, queryObject } from './contract.js';
import { EventHub, matches, type Numbered } from './event-hub.js';
import { refRoute } from './ref-routes.js';
import { BrigError, httpStatusOf, toBrigError, type Result } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { windowMinutes } from '../util/window.js';
import type { Metrics } from '../util/metrics.js';

export const API_VERSION = 'v1';
const MAX_BODY = 2 * 1024 * 1024;
const RUN_ROUTE = /^\/v1\/runs\/(r-[a-z0-9-]{6,64})(?:\/(wait|kill|steer|resume|send|history))?$/;
/** Any path naming a run, well-formed or not: its id is checked before its verb. */
const RUN_PATH = /^\/v1\/runs\/([^/]+)(?:\/.*)?$/;

function allowedMethods(pathname: string): string[] | undefined {
  return findRoute('', pathname).allowed;
}

/** A path as its route's template (`/v1/runs/{run}/wait`), `unknown` for any other: what the log says. */
function routeName(pathname: string): string {
  return findRoute('', pathname).template ?? 'unknown';
}

/** A refusal's message and hint as BrigError arguments. */
function refusal(r: { message: string; hint?: string }): [string, { hint?: string }] {
  return [r.message, r.hint ? { hint: r.hint } : {}];
}

/** A run id as the caller sent it, decoded and cut short, for a message. */
function shownId(raw: string): string {
  let id = raw;
  try {
    id = decodeURIComponent(raw);
  } catch {
    // a malformed escape is shown as sent
  }
  return JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id);
}

/**
 * A path under /v1/runs/RUN whose RUN cannot be a run id is run_not_found at once; with
 * `known`, also one whose RUN the supervisor does not hold (for a verb that is not served).
 */
async function refuseUnknownRun(sup: Supervisor, pathname: string, known: boolean): Promise<void> {
  const raw = RUN_PATH.exec(pathname)?.[1];
  if (raw === undefined) return;
  if (!isRunId(raw)) throw new BrigError('run_not_found', `no run ${shownId(raw)}`, { hint: 'A run id looks like r-…; `brig list` shows the run ids.' });
  if (known && !(await sup.get(raw))) throw new BrigError('run_not_found', `no run ${raw}`, { hint: '`brig list` shows the run ids.' });
}

async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > MAX_BODY) throw new BrigError('body_too_large', `request body over ${MAX_BODY} bytes`, { data: { limit: MAX_BODY } });
    chunks.push(c);
  }
  if (n === 0) return {};
  try {
    const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
    return v as Record<string, unknown>;
  } catch {
    throw new BrigError('invalid_input', 'the request body must be one JSON object');
  }
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: http.ServerResponse, e: unknown): void {
  const be = toBrigError(e);
  if (res.headersSent) return void res.destroy();
  const allow = be.code === 'method_not_allowed' ? be.data.allow : undefined;
  if (Array.isArray(allow)) res.setHeader('allow', allow.join(', '));
  send(res, httpStatusOf(be.code), { error: be.toJSON() });
}

function unwrap<T>(r: { ok: true; value: T } | { ok: false; error: BrigError }): T {
  if (!r.ok) throw r.error;
  return r.value;
}

/** A client's stream may lag this far behind (bytes queued) before it is cut; it can resume. */
const MAX_LAG_BYTES = 1024 * 1024;

function sse(n: Numbered): string {
  return `id: ${n.id}\nevent: ${n.ev.type}\ndata: ${JSON.stringify(n.ev)}\n\n`;
}

async function streamEvents(hub: EventHub, req: http.IncomingMessage, res: http.ServerResponse, q: URLSearchParams): Promise<void> {
  const filter = { ...(q.get('runId') ? { runId: q.get('runId')! } : {}), ...(q.get('rootRunId') ? { rootRunId: q.get('rootRunId')! } : {}) };
  const last = (req.headers['last-event-id'] as string | undefined) ?? q.get('lastEventId') ?? undefined;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
  res.write(': brig events v1\n\n');
  // Replay and subscription in one tick: nothing published between them is lost or doubled.
  const resumed = hub.resume(last, filter);
  if (resumed.kind === 'gap') res.write(`event: gap\ndata: ${JSON.stringify({ reason: resumed.reason, boot: hub.boot })}\n\n`);
  if (resumed.kind === 'replay') for (const n of resumed.events) res.write(sse(n));
  // A client gone mid-write is the end of its stream, never an error that reaches the daemon.
  res.on('error', () => {});
  const gone = () => res.destroyed || res.writableEnded;
  await new Promise<void>((resolve) => {
    const beat = setInterval(() => void (gone() || res.write(': keep-alive\n\n')), 15_000);
    const unsubscribe = hub.subscribe((n) => {
      if (gone() || !matches(n.ev, filter)) return;
      res.write(sse(n));
      if (res.writableLength > MAX_LAG_BYTES) res.destroy(); // too slow: it resumes with Last-Event-ID
    });
    const stop = () => {
      clearInterval(beat);
      unsubscribe();
      resolve();
    };
    req.on('close', stop);
    res.on('close', stop);
  });
  res.end();
}

export function apiHandler(sup: Supervisor, x: ApiExtras = {}, hub: EventHub = new EventHub(sup)): http.RequestListener {
  const { log } = x;
  return (req, res) => {
    if (log) {
      // One line per request: method, route template (never the raw path), status, ms.
      const t0 = performance.now();
      res.once('close', () => {
        const line = { method: req.method, route: routeName(new URL(req.url ?? '/', 'http://brig').pathname), status: res.statusCode, ms: Math.round((performance.now() - t0) * 10) / 10 };
        if (res.statusCode >= 500) log.error(line, 'api');
        else log.info(line, 'api');
      });
    }
    void route(sup, x, hub, req, res).catch((e) => {
      const be = toBrigError(e);
      if (be.code === 'internal') log?.error({ code: be.code, err: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e) }, 'internal error in the API');
      sendError(res, e);
    });
  };
}

async function route(sup: Supervisor, x: ApiExtras, hub: EventHub, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const { refs, metrics } = x;
  const url = new URL(req.url ?? '/', 'http://brig');
  const m = req.method ?? 'GET';
  await refuseUnknownRun(sup, url.pathname, false);
  // The contract's schemas (contract.ts) check the query and the body before any handler.
  let parsed: Promise<Record<string, unknown>> | undefined;
  const body = () => (parsed ??= readJson(req));
  const spec = findRoute(m, url.pathname).spec;
  if (spec?.query) {
    const q = spec.query.safeParse(queryObject(url.searchParams, spec.query), { reportInput: true });
    if (!q.success) throw new BrigError('invalid_input', ...refusal(invalidRequest('query', q.error)));
  }
  if (spec?.body && spec.bodyValidatedBy === undefined) {
    const b = spec.body.safeParse(await body(), { reportInput: true });
    if (!b.success) throw new BrigError('invalid_input', ...refusal(invalidRequest('body', b.error)));
  }
  if (url.pathname === '/v1/openapi.json' && m === 'GET') return send(res, 200, openapiDocument(API_VERSION));
  if (refs) {
    const hitRef = await refRoute(refs, m, url.pathname, body, url.searchParams);
    if (hitRef) return send(res, hitRef.status, hitRef.body);
  }
  if (url.pathname === '/v1/health' && m === 'GET') return send(res, 200, { ok: true, api: API_VERSION });
  if (url.pathname === '/v1/fleet' && m === 'GET') {
    if (!x.fleet) throw new BrigError('daemon_unavailable', 'this API serves no fleet view (only a daemon does)', { hint: 'Ask `brig serve`, or run `brig fleet`.' });
    const since = url.searchParams.get('since') ?? '24h';
    const minutes = windowMinutes(since);
    if (minutes === undefined) throw new BrigError('invalid_input', `since ${JSON.stringify(since.slice(0, 40))} is not a window`, { hint: 'Give minutes, or 30m, 24h, 7d.' });
    return send(res, 200, { fleet: await x.fleet(minutes) });
  }
  if (url.pathname.startsWith('/v1/leases') || url.pathname.startsWith('/v1/audit/') || url.pathname === '/v1/doctor') {
    const op = x.operator;
    if (!op) throw new BrigError('daemon_unavailable', 'this API serves no operator routes (only a daemon does)', { hint: 'Ask `brig serve`, or use `brig lease`, `brig audit`, `brig doctor`.' });
    if (url.pathname === '/v1/leases' && m === 'GET') return send(res, 200, op.leases());
    if (url.pathname === '/v1/audit/verify' && m === 'GET') return send(res, 200, op.verify());
    if (url.pathname === '/v1/audit/query' && m === 'POST') {
      const b = await body();
      return send(res, 200, await op.query(String(b.sql), typeof b.maxRows === 'number' ? b.maxRows : undefined));
    }
    if (url.pathname === '/v1/doctor' && m === 'GET') return send(res, 200, { checks: await op.doctor() });
    const lease = LEASE_ROUTE.exec(url.pathname);
    if (lease && !lease[2] && m === 'GET') return send(res, 200, unwrap(op.lease(lease[1]!)));
    if (lease && lease[2] === 'revoke' && m === 'POST') {
      const b = await body();
      return send(res, 200, { revoked: unwrap(await op.revoke(lease[1]!, typeof b.reason === 'string' ? b.reason : undefined)) });
    }
    if (!lease && /^\/v1\/leases\/[^/]+(\/revoke)?$/.test(url.pathname)) throw new BrigError('lease_not_found', 'no such lease id', { hint: '`brig lease list` shows the lease ids.' });
  }
  if (url.pathname === '/v1/metrics' && m === 'GET') {
    if (!metrics) throw new BrigError('daemon_unavailable', 'this API serves no metrics (only a daemon counts)', { hint: 'Scrape `brig serve`.' });
    const text = await metrics.expose();
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(text) });
    return void res.end(text);
  }
  if (url.pathname === '/v1/events' && m === 'GET') {
    // A supervisor without events (the read-only view): its own refusal.
    if (hub.unavailable !== undefined) throw hub.unavailable;
    return streamEvents(hub, req, res, url.searchParams);
  }
  if (url.pathname === '/v1/runs') {
    if (m === 'GET') {
      const f: ListFilter = {};
      const st = url.searchParams.getAll('status');
      // An unknown status would silently match nothing: refuse it, naming the known ones.
      const unknown = st.find((x) => !(RUN_STATUSES as readonly string[]).includes(x));
      if (unknown !== undefined) throw new BrigError('invalid_input', `unknown status ${JSON.stringify(unknown.slice(0, 40))}`, { hint: `Known: ${RUN_STATUSES.join(', ')}` });
      if (st.length) f.status = st as RunStatus[];
      for (const k of ['rootRunId', 'parentRunId', 'label'] as const) {
        const v = url.searchParams.get(k);
        if (v) f[k] = v;
      }
      const kinds = url.searchParams.getAll('kind');
      const badKind = kinds.find((x) => !(RUN_KINDS as readonly string[]).includes(x));
      if (badKind !== undefined) throw new BrigError('invalid_input', `unknown kind ${JSON.stringify(badKind.slice(0, 40))}`, { hint: `Known: ${RUN_KINDS.join(', ')}` });
      if (kinds.length) f.kind = kinds as RunKind[];
      const since = url.searchParams.get('since');
      if (since !== null) {
        const n = Number(since);
        if (!Number.isFinite(n) || n <= 0) throw new BrigError('invalid_input', 'since is a positive number of minutes');
        f.sinceMinutes = n;
      }
      const limit = url.searchParams.get('limit');
      if (limit !== null) {
        const n = Number(limit);
        if (!Number.isSafeInteger(n) || n < 0) throw new BrigError('invalid_input', 'limit is a whole number of runs (0 or more)');
        f.limit = n;
      }
      return send(res, 200, { runs: await sup.list(f) });
    }
    if (m === 'POST') {
      const b = await body();
      const run = unwrap(await sup.spawn(b as never));
      return send(res, run.status === 'ended' ? 200 : 202, { run });
    }
  }
  const hit = RUN_ROUTE.exec(url.pathname);
  if (hit) {
    const [, id, action] = hit as unknown as [string, string, string | undefined];
    if (!action && m === 'GET') {
      const run = await sup.get(id);
      if (!run) throw new BrigError('run_not_found', `no run ${id}`);
      return send(res, 200, { run });
    }
    if (action === 'history' && m === 'GET') {
      const num = (k: string) => (url.searchParams.has(k) ? Number(url.searchParams.get(k)) : undefined);
      const offset = num('offset');
      const limit = num('limit');
      return send(res, 200, { history: unwrap(await sup.history(id, { ...(offset !== undefined && Number.isFinite(offset) ? { offset } : {}), ...(limit !== undefined && Number.isFinite(limit) ? { limit } : {}) })) });
    }
    if (m === 'POST') {
      const b = await body();
      switch (action) {
        case 'wait': {
          const t = Number(b.timeoutMs ?? url.searchParams.get('timeoutMs'));
          const ac = new AbortController();
          req.on('close', () => ac.abort());
          return send(res, 200, { run: unwrap(await sup.wait(id, { signal: ac.signal, ...(Number.isFinite(t) && t > 0 ? { timeoutMs: t } : {}) })) });
        }
        case 'kill':
          return send(res, 200, { run: unwrap(await sup.kill(id, { confirm: b.confirm === true, by: (b.by as KilledBy | undefined) === 'system' ? 'system' : 'operator' })) });
        case 'steer':
          return send(res, 200, { steer: unwrap(await sup.steer(id, typeof b.message === 'string' ? b.message : '')) });
        case 'resume':
          return send(res, 202, { run: unwrap(await sup.resume(id)) });
        case 'send': {
          const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
          const mode = typeof b.mode === 'string' ? (b.mode as SendMode) : undefined;
          const timeoutMs = n(b.timeoutMs);
          const maxTurns = n(b.maxTurns);
          return send(res, 200, { send: unwrap(await sup.send(id, typeof b.text === 'string' ? b.text : '', { ...(mode ? { mode } : {}), ...(timeoutMs !== undefined ? { timeoutMs } : {}), ...(maxTurns !== undefined ? { maxTurns } : {}) })) });
        }
      }
    }
  }
  await refuseUnknownRun(sup, url.pathname, true);
  const allow = allowedMethods(url.pathname);
  if (allow) throw new BrigError('method_not_allowed', `${m} is not served on ${url.pathname}; it takes ${allow.join(', ')}`, { data: { allow } });
  throw new BrigError('route_not_found', `no route ${url.pathname.slice(0, 200)}`);
}

/** Listens on a unix socket (0600). A stale socket file is replaced. */
/** What a daemon's API serves besides runs: drill-in, metrics, its log, the fleet view. */
export interface ApiExtras {
  refs?: RefService;
  metrics?: Metrics;
  log?: Logger;
  /** The roll-up over a window (daemon/fleet.ts), for GET /v1/fleet. */
  fleet?: (sinceMinutes: number) => Promise<unknown>;
  /** The operator's services (leases, audit, doctor), for their routes and the console. */
  operator?: OperatorRoutes;
}

/** What the operator routes call; the composition root adapts the operator's services to it. */
export interface OperatorRoutes {
  leases(): unknown;
  lease(id: string): Result<unknown, BrigError>;
  revoke(id: string, reason?: string): Promise<Result<unknown[], BrigError>>;
  verify(): unknown;
  query(sql: string, maxRows?: number): Promise<unknown>;
  doctor(): Promise<unknown>;
}

const LEASE_ROUTE = /^\/v1\/leases\/([A-Za-z0-9_-]{1,80})(?:\/(revoke))?$/;

export async function listenApi(sup: Supervisor, socketPath: string, x: ApiExtras = {}): Promise<{ server: http.Server; handler: http.RequestListener; close(): Promise<void> }> {
  await fs.rm(socketPath, { force: true });
  const hub = new EventHub(sup);
  const handler = apiHandler(sup, x, hub);
  const server = http.createServer(handler);
  server.keepAliveTimeout = 5_000;
  server.requestTimeout = 0; // wait and spawn may legitimately last a run's whole timeout
  const prevMask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
  } finally {
    process.umask(prevMask);
  }
  await fs.chmod(socketPath, 0o600);
  return {
    server,
    handler,
    close: async () => {
      hub.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await fs.rm(socketPath, { force: true });
    },
  };
}
