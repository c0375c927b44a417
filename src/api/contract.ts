/**
 * The HTTP API's contract as data: every route, its method, its query and body schemas and
 * what it answers. The server routes and validates with these very schemas (a request that
 * does not match is 400 invalid_input naming the field, before any handler), `GET
 * /v1/openapi.json` is generated from them (OpenAPI 3.1, JSON Schema 2020-12 by zod), and a
 * test checks the document against the live routes. Nothing here is written twice.
 */
import { z } from 'zod';
import { END_REASONS, KILLED_BY, RUN_KINDS, RUN_STATUSES, SEND_MODES, SpawnRequestSchema } from '../runs/index.js';
import { ERROR_CODES } from '../util/errors.js';

const ID = z.string().min(1).max(200);
const num = z.coerce.number();
/** A query parameter that may repeat (`?status=a&status=b`). */
const many = <T extends z.ZodType>(t: T) => z.array(t);

export const ErrorBody = z.object({
  error: z.object({
    code: z.enum(Object.keys(ERROR_CODES) as [keyof typeof ERROR_CODES, ...(keyof typeof ERROR_CODES)[]]),
    message: z.string(),
    hint: z.string(),
    data: z.record(z.string(), z.unknown()).optional(),
  }),
});

/** A run record's fields a client can rely on; the record carries more (docs/supervisor.md). */
export const RunView = z.looseObject({
  id: z.string(),
  rootRunId: z.string(),
  parentRunId: z.string().nullable(),
  depth: z.number(),
  kind: z.enum(RUN_KINDS),
  label: z.string().nullable(),
  status: z.enum(RUN_STATUSES),
  endReason: z.enum(END_REASONS).nullable(),
  killedBy: z.enum(KILLED_BY).nullable(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  endedAt: z.string().nullable(),
  stepsExecuted: z.number(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
});
const Run = z.object({ run: RunView });
const Slice = z.looseObject({});

export interface RouteSpec {
  method: 'GET' | 'POST';
  /** OpenAPI path template (`/v1/runs/{run}/wait`). */
  path: string;
  summary: string;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** The body is validated by the supervisor with this same schema (spawn: one schema, one error format). */
  bodyValidatedBy?: 'supervisor';
  /** Success statuses and their body (`text` for non-JSON bodies). */
  ok: Record<number, z.ZodType | 'text/event-stream' | 'text/plain'>;
}

const R = (s: RouteSpec) => s;

export const ROUTES: RouteSpec[] = [
  R({ method: 'GET', path: '/v1/health', summary: 'Whether the daemon answers', ok: { 200: z.object({ ok: z.literal(true), api: z.string() }) } }),
  R({ method: 'GET', path: '/v1/openapi.json', summary: 'This document', ok: { 200: z.looseObject({ openapi: z.string() }) } }),
  R({ method: 'GET', path: '/v1/metrics', summary: 'Counters, gauges and histograms in the Prometheus text format', ok: { 200: 'text/plain' } }),
  R({ method: 'GET', path: '/v1/fleet', summary: 'A content-free roll-up over a window, across every tree', query: z.object({ since: z.string().optional() }), ok: { 200: z.object({ fleet: z.looseObject({ runs: z.number() }) }) } }),
  R({
    method: 'GET',
    path: '/v1/events',
    summary: 'The content-free event stream (SSE); resume with Last-Event-ID',
    query: z.object({ runId: ID.optional(), rootRunId: ID.optional(), lastEventId: z.string().max(64).optional() }),
    ok: { 200: 'text/event-stream' },
  }),
  R({
    method: 'GET',
    path: '/v1/runs',
    summary: 'Runs on record, oldest first',
    query: z.object({
      status: many(z.enum(RUN_STATUSES)).optional(),
      kind: many(z.enum(RUN_KINDS)).optional(),
      rootRunId: ID.optional(),
      parentRunId: ID.optional(),
      label: z.string().max(200).optional(),
      since: num.positive().optional(),
      limit: num.int().nonnegative().optional(),
    }),
    ok: { 200: z.object({ runs: z.array(RunView) }) },
  }),
  R({ method: 'POST', path: '/v1/runs', summary: 'Spawn a child', body: SpawnRequestSchema, bodyValidatedBy: 'supervisor', ok: { 200: Run, 202: Run } }),
  R({ method: 'GET', path: '/v1/runs/{run}', summary: 'One run', ok: { 200: Run } }),
  R({ method: 'POST', path: '/v1/runs/{run}/wait', summary: 'Wait for the run to end (or the timeout)', body: z.object({ timeoutMs: z.number().positive().optional() }), ok: { 200: Run } }),
  R({ method: 'POST', path: '/v1/runs/{run}/kill', summary: 'Kill a running child', body: z.object({ confirm: z.boolean(), by: z.enum(['operator', 'system']).optional() }), ok: { 200: Run } }),
  R({ method: 'POST', path: '/v1/runs/{run}/steer', summary: 'Steer a running child', body: z.object({ message: z.string().min(1) }), ok: { 200: z.object({ steer: z.looseObject({ mode: z.string() }) }) } }),
  R({ method: 'POST', path: '/v1/runs/{run}/resume', summary: 'Resume a timed-out resumable run', body: z.object({}), ok: { 202: Run } }),
  R({
    method: 'POST',
    path: '/v1/runs/{run}/send',
    summary: 'A message to a running agent child',
    body: z.object({ text: z.string().min(1), mode: z.enum(SEND_MODES).optional(), timeoutMs: z.number().positive().optional(), maxTurns: z.number().int().nonnegative().optional() }),
    ok: { 200: z.object({ send: z.looseObject({}) }) },
  }),
  R({ method: 'GET', path: '/v1/runs/{run}/history', summary: "A bounded page of the run's transcript", query: z.object({ offset: num.int().nonnegative().optional(), limit: num.int().positive().optional() }), ok: { 200: z.object({ history: z.looseObject({}) }) } }),
  R({ method: 'GET', path: '/v1/runs/{run}/refs', summary: "The run's ResultRefs", ok: { 200: z.object({ refs: z.array(z.looseObject({ ref: z.string() })) }) } }),
  R({ method: 'GET', path: '/v1/runs/{run}/manifest', summary: "The result store's manifest of the run", ok: { 200: z.looseObject({ refs: z.array(z.unknown()) }) } }),
  R({ method: 'GET', path: '/v1/runs/{run}/result', summary: 'The envelope of an ended run (cast once, then kept)', query: z.object({ strategy: z.enum(['auto', 'always', 'never']).optional() }), ok: { 200: z.looseObject({ runId: z.string() }) } }),
  R({ method: 'GET', path: '/v1/runs/{run}/envelope', summary: 'The envelope without deciding it, in any status', ok: { 200: z.looseObject({ runId: z.string() }) } }),
  R({ method: 'GET', path: '/v1/leases', summary: 'Every lease (no token hash), with its state', ok: { 200: z.object({ leases: z.array(z.looseObject({ id: z.string(), state: z.string() })), unreadable: z.array(z.string()) }) } }),
  R({ method: 'GET', path: '/v1/leases/{lease}', summary: 'A lease — granted beside requested, refusals — and its lineage up to the root', ok: { 200: z.object({ lease: z.looseObject({ id: z.string() }), lineage: z.array(z.looseObject({ id: z.string() })) }) } }),
  R({ method: 'POST', path: '/v1/leases/{lease}/revoke', summary: 'Revoke a lease and its subtree (their runs end killed)', body: z.object({ confirm: z.literal(true), reason: z.string().max(200).optional() }), ok: { 200: z.object({ revoked: z.array(z.looseObject({ id: z.string() })) }) } }),
  R({ method: 'GET', path: '/v1/audit/verify', summary: "The ledger's hash chain and anchor, verified", ok: { 200: z.looseObject({ ok: z.boolean() }) } }),
  R({ method: 'POST', path: '/v1/audit/query', summary: 'One read-only SELECT over the view `ledger`', body: z.object({ sql: z.string().min(1).max(10_000), maxRows: z.number().int().positive().max(10_000).optional() }), ok: { 200: z.looseObject({ columns: z.array(z.string()) }) } }),
  R({ method: 'GET', path: '/v1/doctor', summary: 'The host checked, and a probe from inside a real jail', ok: { 200: z.object({ checks: z.array(z.looseObject({ name: z.string(), ok: z.boolean() })) }) } }),
  R({ method: 'POST', path: '/v1/refs/{ref}/read', summary: 'A slice by line or byte range', body: z.object({ offset: z.number().nonnegative().optional(), length: z.number().nonnegative().optional(), line: z.number().nonnegative().optional(), lines: z.number().nonnegative().optional() }), ok: { 200: Slice } }),
  R({
    method: 'POST',
    path: '/v1/refs/{ref}/grep',
    summary: 'Matching lines, bounded',
    body: z.object({ pattern: z.string().min(1), maxMatches: z.number().nonnegative().optional(), context: z.number().nonnegative().optional(), ignoreCase: z.boolean().optional(), fixed: z.boolean().optional() }),
    ok: { 200: Slice },
  }),
  R({ method: 'POST', path: '/v1/refs/{ref}/jq', summary: 'A jq filter, bounded', body: z.object({ expr: z.string().min(1) }), ok: { 200: Slice } }),
  R({ method: 'POST', path: '/v1/refs/{ref}/sql', summary: 'One SELECT over the view `ref`, locked down', body: z.object({ query: z.string().min(1).max(100_000), maxRows: z.number().nonnegative().optional() }), ok: { 200: Slice } }),
  R({ method: 'POST', path: '/v1/refs/{ref}/jsonpath', summary: 'A JSONPath, bounded', body: z.object({ expr: z.string().min(1), maxRows: z.number().nonnegative().optional() }), ok: { 200: Slice } }),
];

const PARAM = /\{([a-z]+)\}/g;
const COMPILED = ROUTES.map((r) => ({ spec: r, re: new RegExp(`^${r.path.replace(/[.]/g, '\\.').replace(PARAM, '[^/]+')}$`) }));

/** The route a request names: its spec for this method, the methods the path takes, its template. */
export function findRoute(method: string, pathname: string): { spec?: RouteSpec; allowed?: string[]; template?: string } {
  const hits = COMPILED.filter((c) => c.re.test(pathname));
  if (hits.length === 0) return {};
  return { spec: hits.find((h) => h.spec.method === method)?.spec, allowed: hits.map((h) => h.spec.method), template: hits[0]!.spec.path };
}

/** A failed parse as the 400 it is: where, which field, what was wrong, and the allowed values when there is a list. */
export function invalidRequest(where: 'query' | 'body', e: z.ZodError): { message: string; hint?: string } {
  const i = e.issues[0] as (z.core.$ZodIssue & { values?: unknown[]; input?: unknown }) | undefined;
  const field = i?.path.join('.') || '(root)';
  if (i?.code === 'invalid_value' && Array.isArray(i.values)) {
    return { message: `${where}: unknown ${field} ${JSON.stringify(String(i.input ?? '').slice(0, 40))}`, hint: `Known: ${i.values.join(', ')}` };
  }
  return { message: `${where}: ${field}: ${i?.message ?? 'invalid'}` };
}

/** A query string as the object its schema reads: a repeatable parameter as an array. */
export function queryObject(q: URLSearchParams, schema: z.ZodObject): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of new Set(q.keys())) {
    const t = schema.shape[k];
    const inner = t instanceof z.ZodOptional ? t.unwrap() : t;
    out[k] = inner instanceof z.ZodArray ? q.getAll(k) : q.get(k);
  }
  return out;
}

const json = (s: z.ZodType) => z.toJSONSchema(s, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' });

/** The OpenAPI 3.1 document of these routes. */
export function openapiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of ROUTES) {
    const params = [...r.path.matchAll(PARAM)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const queryProps = r.query ? (json(r.query) as { properties?: Record<string, unknown> }).properties ?? {} : {};
    const query = Object.entries(queryProps).map(([name, schema]) => ({ name, in: 'query', required: false, schema }));
    const responses: Record<string, unknown> = {};
    for (const [status, body] of Object.entries(r.ok)) {
      responses[status] = { description: 'OK', content: typeof body === 'string' ? { [body]: { schema: { type: 'string' } } } : { 'application/json': { schema: json(body) } } };
    }
    responses.default = { description: 'An error: {error: {code, message, hint, data?}}; the status follows the code (docs/errors.md)', content: { 'application/json': { schema: json(ErrorBody) } } };
    (paths[r.path] ??= {})[r.method.toLowerCase()] = {
      summary: r.summary,
      ...(params.length + query.length > 0 ? { parameters: [...params, ...query] } : {}),
      ...(r.body ? { requestBody: { required: false, content: { 'application/json': { schema: json(r.body) } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'brig daemon API', version, description: 'The supervisor over HTTP on a unix socket ($BRIG_HOME/brig.sock, 0600). Generated from the schemas the server validates with (src/api/contract.ts).' },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
  };
}
