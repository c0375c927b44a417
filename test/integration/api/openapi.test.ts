/**
 * GET /v1/openapi.json on a real daemon: generated from the schemas the server validates with
 * (src/api/contract.ts) and checked against the live routes — every documented path × method
 * is served (never 404 route_not_found or 405), a refusal it answers is one it declares (status
 * and code), every other method on it is 405 with Allow, and a request the schemas refuse is
 * 400 naming the field.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { API_ROUTES, GRAPH_ID } from '../../../src/protocol/index.js';
import { exchange } from '../../../src/client/wire.js';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome } from '../daemon/serve-proc.js';

type Doc = { openapi: string; info: { version: string }; paths: Record<string, Record<string, { operationId: string; summary: string; responses: Record<string, unknown>; requestBody?: unknown; parameters?: { name: string; in: string }[] }>> };

test('the OpenAPI 3.1 document matches the live routes, and the server validates with its schemas', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve();
  const s = await h.run(['spawn', '--json', '--', 'sh', '-c', 'echo "{\\"a\\":1}" > out/a.json']);
  assert.equal(s.code, 0, s.stderr);
  const runId = (JSON.parse(s.stdout) as { runId: string }).runId;
  const ref = (JSON.parse((await h.run(['ref', 'list', runId, '--json'])).stdout) as { refs: { ref: string; path: string }[] }).refs.find((r) => r.path === 'out/a.json')!.ref;
  const call = (method: 'GET' | 'POST', p: string, body?: unknown) => exchange({ socketPath: serve.socket, method, path: p, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), timeoutMs: 10_000 });

  const got = await call('GET', '/v1/openapi.json');
  assert.equal(got.status, 200);
  const doc = JSON.parse(got.body) as Doc;
  assert.equal(doc.openapi, '3.1.0');
  const documented = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
  assert.deepEqual(documented.sort(), Object.values(API_ROUTES).map((r) => `${r.method} ${r.path}`).sort(), 'one operation per contract route');
  for (const [p, ops] of Object.entries(doc.paths)) {
    for (const [m, op] of Object.entries(ops)) {
      assert.ok(op.summary && op.responses.default, `${m} ${p} has a summary and the error response`);
      assert.ok(op.responses['401'] && op.responses['500'], `${m} ${p} declares the console's 401 and 500 internal`);
      assert.ok(Object.entries(API_ROUTES).some(([name, r]) => r.path === p && r.method === m.toUpperCase() && op.operationId === name), `${m} ${p} has its route's name as operationId`);
      for (const name of [...p.matchAll(/\{([a-z]+)\}/g)].map((x) => x[1])) assert.ok(op.parameters?.some((q) => q.in === 'path' && q.name === name), `${m} ${p} declares {${name}}`);
    }
  }
  assert.ok(doc.paths['/v1/runs']!.post!.requestBody, 'the spawn body is documented (SpawnRequestSchema)');
  // The event stream's filters, `graph` a graph id by the protocol's pattern.
  const evq = (doc.paths['/v1/events']!.get!.parameters ?? []) as { name: string; in: string; schema?: { pattern?: string } }[];
  assert.deepEqual(evq.map((q) => q.name), ['runId', 'rootRunId', 'graph', 'lastEventId']);
  assert.equal(evq.find((q) => q.name === 'graph')!.schema?.pattern, GRAPH_ID.source);
  assert.match(JSON.stringify(doc.paths['/v1/runs']!.post!.requestBody), /"task"/);

  // Every documented operation is served; every other method on its path is 405 with Allow.
  const leaseId = (JSON.parse((await h.run(['list', '--json'])).stdout) as { runs: { id: string; leaseId: string }[] }).runs.find((r) => r.id === runId)!.leaseId;
  const MINIMAL: Record<string, unknown> = { query: { sql: 'SELECT count(*) FROM ledger' }, revoke: { confirm: true }, steer: { message: 'x' }, send: { text: 'x' }, grep: { pattern: 'a' }, jq: { expr: '.' }, sql: { query: 'SELECT 1 FROM ref' }, jsonpath: { expr: '$.a' }, kill: { confirm: true }, define: { spec: 'graph: brig/v1' }, cancel: { confirm: true }, decide: { node: 'go', decision: 'approve' } };
  for (const [p, ops] of Object.entries(doc.paths)) {
    if (p === '/v1/events') continue; // a stream: its 200 is checked by the event tests
    const live = p.replace('{run}', runId).replace('{ref}', ref).replace('{lease}', leaseId).replace('{graph}', 'g-0000000000');
    for (const m of Object.keys(ops)) {
      const verb = p.split('/').pop()!;
      const body = m === 'post' ? (p === '/v1/runs' ? { task: 'contract', kind: 'command', argv: ['true'] } : p === '/v1/graphs' ? { spec: 'graph: brig/v1' } : p === '/v1/audit/query' ? MINIMAL.query : (MINIMAL[verb] ?? {})) : undefined;
      const r = await call(m.toUpperCase() as 'GET' | 'POST', live, body);
      const e = r.status >= 400 ? (JSON.parse(r.body) as { error: { code: string; message: string } }).error : { code: 'ok', message: '' };
      // Served: not an unknown route, not a wrong method, and the minimal request passes the schemas
      // (a handler may still refuse it for what the run is: a send to a command child).
      const schemaRefused = e.code === 'invalid_input' && /^(body|query): /.test(e.message);
      assert.ok(!['route_not_found', 'method_not_allowed'].includes(e.code) && !schemaRefused, `${m.toUpperCase()} ${p} is served (${r.status} ${e.code}: ${r.body.slice(0, 200)})`);
      // A refusal is one the operation declares, naming its code.
      if (r.status >= 400) assert.match(JSON.stringify(ops[m]!.responses[String(r.status)] ?? null), new RegExp(`\\b${e.code}\\b`), `${m.toUpperCase()} ${p} declares ${r.status} ${e.code}`);
    }
    const other = ops.get ? 'POST' : 'GET';
    if (!ops[other.toLowerCase()]) {
      const r = await call(other, live, other === 'POST' ? {} : undefined);
      assert.equal(r.status, 405, `${other} ${p}`);
    }
  }

  // A page says how many older runs it left out (there are two runs now: the spawn and the one
  // the loop above spawned); the whole list says nothing of the kind.
  const count = (JSON.parse((await call('GET', '/v1/runs')).body) as { runs: unknown[]; more?: number });
  assert.equal(count.more, undefined, 'all of them: nothing left out');
  const page = JSON.parse((await call('GET', '/v1/runs?limit=1')).body) as { runs: unknown[]; more?: number };
  assert.deepEqual([page.runs.length, page.more], [1, count.runs.length - 1], 'the newest one, and how many older ones');
  // The schemas refuse at the edge, naming the field.
  const badBody = await call('POST', `/v1/runs/${runId}/steer`, { message: 5 });
  assert.equal(badBody.status, 400);
  assert.match(badBody.body, /body: message/);
  const badQuery = await call('GET', '/v1/runs?limit=-1');
  assert.equal(badQuery.status, 400);
  assert.match(badQuery.body, /query: limit/);
  const badEnum = await call('GET', '/v1/runs?status=runing');
  assert.match(badEnum.body, /runing/);
  assert.match(badEnum.body, /queued, starting, running, materializing, ended/);
  await serve.signal('SIGTERM');
});
