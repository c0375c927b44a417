/**
 * The supervisor as a versioned JSON HTTP API (/v1/...) on a unix socket. Thin: it matches a
 * request to one entry of the route table (routes.ts), validates its query or body with that
 * entry's schema before any handler runs, calls the handler over the Brig it serves, and maps
 * error kinds to HTTP statuses; errors are `{error: {code, message, hint}}`. The socket is
 * created 0600 inside $BRIG_HOME, so only the operator's uid can reach it (filesystem
 * permission is the authentication). Fails closed: a path parameter that cannot be an id is
 * not_found for its kind (run, ref, lease) before anything looks it up; an unknown route is 404
 * route_not_found naming every route; a known one asked with another method 405
 * method_not_allowed (with Allow); a body over 2 MiB 413 body_too_large; bad JSON 400.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { promises as fs } from 'node:fs';
import { API_CALLERS, API_ROUTES, API_VERSION, LONG_ROUTES, REF_ID_RE, isGraphId, isRunId, routeList, type Brig, type RouteName } from '../protocol/index.js';
import { openapiDocument, invalidRequest, queryObject } from './contract.js';
import { EventHub, matches, type Numbered, type StreamFilter } from './event-hub.js';
import { ROUTE_TABLE, type RouteDef } from './routes.js';
import { BrigError, httpStatusOf, toBrigError } from '../util/errors.js';
import { hintFor } from '../util/face-hints.js';
import type { Logger } from '../util/log.js';
import type { Metrics } from '../util/metrics.js';

export { API_VERSION } from '../protocol/index.js';

const MAX_BODY = 2 * 1024 * 1024;
const LEASE_ID = /^[A-Za-z0-9_-]{1,80}$/;

const PARAM = /\{([a-z]+)\}/g;
const COMPILED = (Object.keys(API_ROUTES) as RouteName[]).map((name) => {
  const r = API_ROUTES[name];
  const keys = [...r.path.matchAll(PARAM)].map((m) => m[1]!);
  return { name, method: r.method, path: r.path, keys, re: new RegExp(`^${r.path.replace(/[.]/g, '\\.').replace(PARAM, '([^/]*)')}$`) };
});

export type Match = { name: RouteName; params: Record<string, string> } | { allowed: string[]; template: string; params: Record<string, string> } | undefined;

/** The route a request names: its entry and path parameters, or the methods its path takes. */
export function matchRoute(method: string, pathname: string): Match {
  const all = COMPILED.map((c) => ({ c, m: c.re.exec(pathname) })).filter((h) => h.m !== null);
  // A literal path (`/v1/runs/check`) is that route, never a template's parameter (`{run}` = "check").
  const literal = all.filter((h) => h.c.keys.length === 0);
  const hits = literal.length > 0 ? literal : all;
  if (hits.length === 0) return undefined;
  const hit = hits.find((h) => h.c.method === method) ?? hits[0]!;
  const params: Record<string, string> = {};
  hit.c.keys.forEach((k, i) => (params[k] = decoded(hit.m![i + 1]!)));
  if (hit.c.method !== method) return { allowed: hits.map((h) => h.c.method), template: hit.c.path, params };
  return { name: hit.c.name, params };
}

function decoded(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw; // a malformed escape is kept as sent: it then fails the id check
  }
}

/** An id as the caller sent it, cut short, for a message. */
const shown = (id: string) => JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id);

/** A path parameter that cannot be an id is not_found for its kind, before any handler looks. */
function checkParams(params: Record<string, string>): void {
  if (params.run !== undefined && !isRunId(params.run)) throw new BrigError('run_not_found', `no run ${shown(params.run)}`, { hint: 'A run id looks like r-…; `brig list` shows the run ids.' });
  if (params.ref !== undefined && !REF_ID_RE.test(params.ref)) throw new BrigError('ref_not_found', `no ref ${shown(params.ref)}`, { hint: 'A ref id looks like ref_…; `brig ref list RUN` shows the refs of a run.' });
  if (params.lease !== undefined && !LEASE_ID.test(params.lease)) throw new BrigError('lease_not_found', `no lease ${shown(params.lease)}`, { hint: '`brig lease list` shows the lease ids.' });
  if (params.graph !== undefined && !isGraphId(params.graph)) throw new BrigError('graph_not_found', `no graph ${shown(params.graph)}`, { hint: 'A graph id looks like g-…; `brig graph status` lists them.' });
}

/** A path under /v1/runs/RUN/… that no route takes: run_not_found when RUN is no run this API knows. */
async function refuseUnknownRun(brig: Brig, pathname: string): Promise<void> {
  const raw = /^\/v1\/runs\/([^/]+)\/.+$/.exec(pathname)?.[1];
  if (raw === undefined) return;
  const id = decoded(raw);
  if (!isRunId(id) || !(await brig.get(id))) throw new BrigError('run_not_found', `no run ${shown(id)}`, { hint: '`brig list` shows the run ids.' });
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

/**
 * The error reply. Its hint speaks the caller's language: brig's CLI, MCP server and library
 * get the hint as raised (as an in-process brig would give it; MCP swaps it for its own), the
 * console and anyone else HTTP's (face-hints.ts).
 */
function sendError(req: http.IncomingMessage, res: http.ServerResponse, e: unknown): void {
  const be = toBrigError(e);
  if (res.headersSent) return void res.destroy();
  const allow = be.code === 'method_not_allowed' ? be.data.allow : undefined;
  if (Array.isArray(allow)) res.setHeader('allow', allow.join(', '));
  const caller = req.headers['x-brig-client'];
  const face = caller === 'cli' || caller === 'mcp' || caller === 'library' ? 'cli' : 'http';
  send(res, httpStatusOf(be.code), { error: { ...be.toJSON(), hint: hintFor(be, face) } });
}

/** The validated input of a route: its query for a GET, its JSON body for a POST. */
async function inputOf(def: RouteDef<RouteName>, req: http.IncomingMessage, url: URL): Promise<unknown> {
  if (def.query) {
    const q = def.query.safeParse(queryObject(url.searchParams, def.query), { reportInput: true });
    if (!q.success) throw new BrigError('invalid_input', ...refusal(invalidRequest('query', q.error)));
    return q.data;
  }
  if (req.method !== 'POST') return undefined;
  const raw = await readJson(req);
  if (!def.body || def.validatedBy !== undefined) return raw;
  const b = def.body.safeParse(raw, { reportInput: true });
  if (!b.success) throw new BrigError('invalid_input', ...refusal(invalidRequest('body', b.error)));
  return b.data;
}

function refusal(r: { message: string; hint?: string }): [string, { hint?: string }] {
  return [r.message, r.hint ? { hint: r.hint } : {}];
}

/** A client's stream may lag this far behind (bytes queued) before it is cut; it can resume. */
const MAX_LAG_BYTES = 1024 * 1024;

function sse(n: Numbered): string {
  return `id: ${n.id}\nevent: ${n.ev.type}\ndata: ${JSON.stringify(n.ev)}\n\n`;
}

async function streamEvents(hub: EventHub, req: http.IncomingMessage, res: http.ServerResponse, q: StreamFilter & { lastEventId?: string }): Promise<void> {
  if (hub.unavailable !== undefined) throw hub.unavailable; // a Brig without events: its own refusal
  const filter: StreamFilter = { ...(q.runId ? { runId: q.runId } : {}), ...(q.rootRunId ? { rootRunId: q.rootRunId } : {}), ...(q.graph ? { graph: q.graph } : {}) };
  const last = (req.headers['last-event-id'] as string | undefined) ?? q.lastEventId;
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

/** What a daemon's API serves besides the Brig: its metrics, its log. */
export interface ApiOptions {
  metrics?: Metrics;
  log?: Logger;
  /** Told of each request once its reply closed: its route (the operation name, or `unknown`), status and seconds (metrics). */
  onRequest?: (route: RouteName | 'unknown', status: number, seconds: number) => void;
}

export function apiHandler(brig: Brig, o: ApiOptions = {}, hub: EventHub = new EventHub(brig)): http.RequestListener {
  const { log } = o;
  return (req, res) => {
    const id = requestId(req);
    res.setHeader('x-request-id', id);
    if (log || o.onRequest) {
      const t0 = performance.now();
      res.once('close', () => {
        const ms = performance.now() - t0;
        if (log) logRequest(log, req, res.statusCode, ms, id);
        if (o.onRequest) {
          const m = matchRoute(req.method ?? 'GET', rawPath(req));
          o.onRequest(m && 'name' in m ? m.name : 'unknown', res.statusCode, ms / 1000);
        }
      });
    }
    void serve(brig, o, hub, req, res).catch((e) => {
      const be = toBrigError(e);
      if (be.code === 'internal') log?.error({ reqId: id, code: be.code, err: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e) }, 'internal error in the API');
      sendError(req, res, e);
    });
  };
}

/** A request past this long (a route that is not a long poll) is logged at warn. */
export const SLOW_REQUEST_MS = 1000;
const REQUEST_ID = /^[A-Za-z0-9_.:-]{1,64}$/;

/** The caller's own `X-Request-Id` when it is a plain token, else a fresh one (echoed on the reply). */
function requestId(req: http.IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : `rq_${randomBytes(6).toString('hex')}`;
}

/**
 * One line per request: its id, caller (cli, mcp, console, library; `http` for anyone else),
 * method, route (its template, never the raw path: no ids), status and ms. At debug: a CLI's
 * wait or a console's poll is many requests, and the daemon's terminal is the operator's.
 * A server error is an error line, a refusal (4xx) info, a slow short request a warn.
 */
function logRequest(log: Logger, req: http.IncomingMessage, status: number, elapsed: number, reqId: string): void {
  const m = matchRoute(req.method ?? 'GET', rawPath(req));
  const route = !m ? 'unknown' : 'name' in m ? API_ROUTES[m.name].path : m.template;
  const header = req.headers['x-brig-client'];
  const caller = (API_CALLERS as readonly unknown[]).includes(header) ? (header as string) : 'http';
  const ms = Math.round(elapsed * 10) / 10;
  const line = { reqId, caller, method: req.method, route, status, ms };
  const slow = ms >= SLOW_REQUEST_MS && !(m && 'name' in m && LONG_ROUTES.has(m.name));
  if (status >= 500) log.error(line, 'api');
  else if (slow) log.warn(line, 'api: slow request');
  else if (status >= 400) log.info(line, 'api');
  else log.debug(line, 'api');
}

/**
 * The request's path as sent, its dot segments kept: a ref or run id `..` is an id that is no
 * ref (ref_not_found), never a path the URL parser folds into another route.
 */
function rawPath(req: http.IncomingMessage): string {
  const u = req.url ?? '/';
  const q = u.search(/[?#]/);
  return q < 0 ? u : u.slice(0, q);
}

async function serve(brig: Brig, o: ApiOptions, hub: EventHub, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://brig');
  const method = req.method ?? 'GET';
  const pathname = rawPath(req);
  const m = matchRoute(method, pathname);
  if (!m) {
    await refuseUnknownRun(brig, pathname);
    throw new BrigError('route_not_found', `no route ${pathname.slice(0, 200)}`, { hint: `The API's routes: ${routeList()}.` });
  }
  if (!('name' in m)) {
    // A wrong method on a path naming a run this API does not hold is about the run, first.
    checkParams(m.params);
    if (m.params.run !== undefined && !(await brig.get(m.params.run))) throw new BrigError('run_not_found', `no run ${shown(m.params.run)}`, { hint: '`brig list` shows the run ids.' });
    throw new BrigError('method_not_allowed', `${method} is not served on ${m.template}; it takes ${m.allowed.join(', ')}`, { data: { allow: m.allowed } });
  }
  checkParams(m.params);
  const def = ROUTE_TABLE[m.name] as RouteDef<RouteName>;
  const input = await inputOf(def, req, url);
  if (m.name === 'openapi') return send(res, 200, openapiDocument(API_VERSION));
  if (m.name === 'events') return streamEvents(hub, req, res, input as StreamFilter & { lastEventId?: string });
  const answer = await def.handle({ params: m.params, input, brig, metrics: o.metrics, req, res });
  if (answer !== 'streamed') send(res, answer.status ?? 200, answer.body);
}

/** Listens on a unix socket (0600). A stale socket file is replaced. */
export async function listenApi(brig: Brig, socketPath: string, o: ApiOptions = {}): Promise<{ server: http.Server; handler: http.RequestListener; close(): Promise<void> }> {
  await fs.rm(socketPath, { force: true });
  const hub = new EventHub(brig);
  const handler = apiHandler(brig, o, hub);
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

