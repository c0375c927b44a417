/**
 * The HTTP API's contract as a document: `GET /v1/openapi.json` (OpenAPI 3.1, JSON Schema
 * 2020-12 by zod) generated from the route table (routes.ts) — each route's name is its
 * operationId, its schemas are the ones the server validates with — and the helpers that turn
 * a failed validation into the 400 it is. A test checks the document against the live routes.
 */
import { z } from 'zod';
import { API_ROUTES, type RouteName } from '../protocol/index.js';
import { ERROR_CODES } from '../util/errors.js';
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
    responses.default = { description: 'An error: {error: {code, message, hint, data?}}; the status follows the code (docs/errors.md)', content: { 'application/json': { schema: json(ErrorBody) } } };
    (paths[r.path] ??= {})[r.method.toLowerCase()] = {
      operationId: name,
      summary: r.summary,
      ...(params.length + query.length > 0 ? { parameters: [...params, ...query] } : {}),
      ...(r.body ? { requestBody: { required: false, content: { 'application/json': { schema: json(r.body) } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'brig daemon API', version, description: 'The supervisor over HTTP on a unix socket ($BRIG_HOME/brig.sock, 0600). Generated from the route table the server validates with (src/api/routes.ts).' },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
  };
}
