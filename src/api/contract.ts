/**
 * The HTTP API's contract as a document: `GET /v1/openapi.json` (OpenAPI 3.1, JSON Schema
 * 2020-12 by zod) generated from the route table (routes.ts) — each route's name is its
 * operationId, its schemas are the ones the server validates with, its error statuses the
 * ones its route can answer (route-refusals.ts), its servers and security the socket's and the
 * console's — and the helpers that turn a failed validation into the 400 it is. Tests check the
 * document against the live routes, lint it (Redocly recommended) and build a client from it.
 */
import { z } from 'zod';
import { API_ROUTES, type RouteName } from '../protocol/index.js';
import { ERROR_CODES } from '../util/errors.js';
import { routeRefusals } from './route-refusals.js';
import { ROUTE_TABLE } from './routes.js';

export const ErrorBody = z.object({
  error: z.object({
    code: z.enum(Object.keys(ERROR_CODES) as [keyof typeof ERROR_CODES, ...(keyof typeof ERROR_CODES)[]]),
    message: z.string(),
    hint: z.string(),
    data: z.record(z.string(), z.unknown()).optional(),
  }),
});

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

const ERROR_REF = { $ref: '#/components/schemas/ErrorBody' };

/** Each route's tag: its path's first segment after /v1 (runs, refs, …); the daemon's own routes share `daemon`. */
const TAGS: Readonly<Record<string, string>> = {
  daemon: "The daemon itself: health, this document, metrics, the fleet roll-up, the event stream, the host's checks",
  runs: 'Spawn, watch, steer, converse with and end jailed children; their transcripts, refs and envelopes',
  refs: 'Bounded slices of a run\'s materialized outputs (ResultRefs): read, grep, jq, SQL, JSONPath',
  leases: 'The capability leases runs hold, their lineage, and revoking a subtree',
  audit: "The append-only ledger: its hash chain verified, read-only SQL over it",
  admission: 'Pausing and resuming admission of new spawns',
  graphs: 'Graphs of runs: define, run, watch, explain, decide gates, cancel',
};
const tagOf = (path: string): string => {
  const seg = path.split('/')[2] ?? '';
  return Object.hasOwn(TAGS, seg) ? seg : 'daemon';
};

/**
 * What only the console's listener answers (console/console.ts), before any route: its token
 * missing or wrong (401), a Host that is not loopback (421); both with an empty body.
 */
const CONSOLE_ONLY: Record<string, unknown> = {
  401: { description: "Only through the console's listener: no or a wrong access token (empty body)" },
  421: { description: "Only through the console's listener: a Host header that names no loopback address (empty body)" },
};

/** Route N's error responses: each status it can answer, naming the codes that give it (route-refusals.ts). */
function errorResponses(name: RouteName, shape: { query?: unknown; body?: unknown }): Record<string, unknown> {
  const out: Record<string, unknown> = { ...CONSOLE_ONLY };
  for (const [status, codes] of routeRefusals(name, shape)) {
    out[status] = { description: `The error body, its code one of ${codes.map((c) => `\`${c}\``).join(', ')}`, content: { 'application/json': { schema: ERROR_REF } } };
  }
  out.default = { description: 'Any other error, in the same shape: the status follows the code (docs/errors.md)', content: { 'application/json': { schema: ERROR_REF } } };
  return out;
}

/**
 * Where the API is served. OpenAPI has no unix-socket scheme: the socket is `http://brig` (the
 * Host brig's own client sends over it; no TCP host of that name is meant) and said in words.
 */
const SERVERS = [
  { url: 'http://brig', description: "The daemon's unix socket, $BRIG_HOME/brig.sock (0600: only the operator's uid connects; no token). Not a TCP host: connect to the socket (curl --unix-socket, an undici Agent's socketPath); any Host is taken, brig's own client sends `brig`." },
  {
    url: 'http://127.0.0.1:{port}/api',
    description: "The web console's loopback listener (`brig serve --ui [127.0.0.1:PORT]`): the same API under /api, every request with the console's access token. It listens on loopback only; the URL it prints carries the port and the token.",
    variables: { port: { default: '8080', description: 'The port `brig serve --ui` printed (a free one unless an address is given; 8080 is only an example)' } },
  },
];

/** The OpenAPI 3.1 document of these routes. */
export function openapiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const name of Object.keys(API_ROUTES) as RouteName[]) {
    const r = { ...API_ROUTES[name], ...ROUTE_TABLE[name] };
    const params = [...r.path.matchAll(/\{([a-z]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const queryProps = r.query ? (json(r.query) as { properties?: Record<string, unknown> }).properties ?? {} : {};
    const query = Object.entries(queryProps).map(([name, schema]) => ({ name, in: 'query', required: false, schema }));
    const responses: Record<string, unknown> = {};
    for (const [status, body] of Object.entries(r.ok)) {
      responses[status] = { description: 'OK', content: typeof body === 'string' ? { [body]: { schema: { type: 'string' } } } : { 'application/json': { schema: json(body) } } };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = {
      operationId: name,
      summary: r.summary,
      tags: [tagOf(r.path)],
      ...(params.length + query.length > 0 ? { parameters: [...params, ...query] } : {}),
      ...(r.body ? { requestBody: { required: false, content: { 'application/json': { schema: json(r.body) } } } } : {}),
      responses: { ...responses, ...errorResponses(name, r) },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'brig daemon API',
      version,
      description: 'The supervisor over HTTP on a unix socket ($BRIG_HOME/brig.sock, 0600), and through the web console on loopback behind its token. Generated from the route table the server validates with (src/api/routes.ts); an error is `{error: {code, message, hint, data?}}` with the status of its code (docs/errors.md).',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: SERVERS,
    // The socket takes no credential (its file mode is the check): the empty requirement. The console takes its token as a bearer or as ?token=.
    security: [{}, { consoleToken: [] }, { consoleTokenQuery: [] }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      schemas: { ErrorBody: json(ErrorBody) },
      securitySchemes: {
        consoleToken: { type: 'http', scheme: 'bearer', description: "The console's access token (a new one each `brig serve --ui`, in the URL it prints); only on the console's listener, which strips it before the API sees the request" },
        consoleTokenQuery: { type: 'apiKey', in: 'query', name: 'token', description: 'The same token as `?token=`, as the printed console URL carries it' },
      },
    },
  };
}
