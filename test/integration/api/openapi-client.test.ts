/**
 * A client generated from a real daemon's GET /v1/openapi.json type-checks: openapi-typescript
 * (pinned) turns the live document into `paths`; a small usage file assigns real bodies that
 * daemon answered (a run, its refs, a 404, a 400) to the generated response types, calls the
 * API through openapi-fetch typed by them (and fails to compile a wrong path or body);
 * `tsc --noEmit --strict` (the repo's TypeScript) checks it all, then the same client calls the
 * daemon over its socket.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { exchange } from '../../../src/client/wire.js';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome } from '../daemon/serve-proc.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');

test('a TypeScript client generated from the live document type-checks against real replies, and calls the daemon', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve();
  const call = async (method: 'GET' | 'POST', p: string, body?: unknown) => {
    const r = await exchange({ socketPath: serve.socket, method, path: p, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), timeoutMs: 20_000 });
    return { status: r.status, body: JSON.parse(r.body) as unknown };
  };

  const doc = await call('GET', '/v1/openapi.json');
  assert.equal(doc.status, 200);
  const spawned = await call('POST', '/v1/runs', { task: 'openapi client', kind: 'command', argv: ['sh', '-c', 'echo hi > out/hi.txt'] });
  assert.ok(spawned.status === 200 || spawned.status === 202, JSON.stringify(spawned.body));
  const runId = (spawned.body as { run: { id: string } }).run.id;
  const ended = await call('POST', `/v1/runs/${runId}/wait`, { timeoutMs: 15_000 });
  assert.equal((ended.body as { run: { status: string } }).run.status, 'ended');
  const bodies = {
    health: ['/v1/health', 'get', '200', await call('GET', '/v1/health')],
    runs: ['/v1/runs', 'get', '200', await call('GET', '/v1/runs')],
    run: ['/v1/runs/{run}', 'get', '200', await call('GET', `/v1/runs/${runId}`)],
    refs: ['/v1/runs/{run}/refs', 'get', '200', await call('GET', `/v1/runs/${runId}/refs`)],
    leases: ['/v1/leases', 'get', '200', await call('GET', '/v1/leases')],
    admission: ['/v1/admission', 'get', '200', await call('GET', '/v1/admission')],
    noRun: ['/v1/runs/{run}', 'get', '404', await call('GET', '/v1/runs/r-0000000000000000')],
    badQuery: ['/v1/runs', 'get', '400', await call('GET', '/v1/runs?limit=-1')],
    notRunning: ['/v1/runs/{run}/steer', 'post', '409', await call('POST', `/v1/runs/${runId}/steer`, { message: 'late' })],
  } as const;
  for (const [name, [, , status, got]] of Object.entries(bodies)) assert.equal(String(got.status), status, `${name}: ${JSON.stringify(got.body).slice(0, 300)}`);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-client-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  fs.writeFileSync(path.join(dir, 'brig-api.ts'), astToString(await openapiTS(doc.body as Parameters<typeof openapiTS>[0])));
  const typed = Object.entries(bodies).map(([name, [p, m, status, got]]) => `export const ${name}: Reply<'${p}', '${m}', ${status}> = ${JSON.stringify(got.body)};`);
  fs.writeFileSync(
    path.join(dir, 'usage.ts'),
    [
      "import createClient, { type Client } from 'openapi-fetch';",
      "import { Agent } from 'undici';",
      "import type { components, paths } from './brig-api';",
      '',
      "type Reply<P extends keyof paths, M extends 'get' | 'post', S extends number> = paths[P][M] extends { responses: { [K in S]: { content: { 'application/json': infer B } } } } ? B : never;",
      '// What this daemon answered, as the generated types read it.',
      ...typed,
      "export const code: components['schemas']['ErrorBody']['error']['code'] = noRun.error.code;",
      '',
      '// The socket is no TCP host: the requests go to it through an undici Agent.',
      'export function clientAt(socketPath: string): { brig: Client<paths>; close(): Promise<void> } {',
      '  const dispatcher = new Agent({ connect: { socketPath } });',
      "  const brig = createClient<paths>({ baseUrl: 'http://brig', fetch: (req) => fetch(req, { dispatcher } as RequestInit) });",
      '  return { brig, close: () => dispatcher.close() };',
      '}',
      'export async function statusOf(brig: Client<paths>, run: string): Promise<string> {',
      "  const { data, error } = await brig.GET('/v1/runs/{run}', { params: { path: { run } } });",
      "  return data ? data.run.status : (error?.error.code ?? 'no body');",
      '}',
      'export async function steer(brig: Client<paths>, run: string): Promise<string> {',
      "  const { data, error } = await brig.POST('/v1/runs/{run}/steer', { params: { path: { run } }, body: { message: 'go on' } });",
      "  return data ? data.steer.mode : (error?.error.code ?? 'no body');",
      '}',
      'export function wrong(brig: Client<paths>): void {',
      '  // @ts-expect-error no such route',
      "  void brig.GET('/v1/nowhere');",
      '  // @ts-expect-error a steer needs its message',
      "  void brig.POST('/v1/runs/{run}/steer', { params: { path: { run: 'r' } }, body: {} });",
      '  // @ts-expect-error a run status is one of five',
      "  const s: paths['/v1/runs/{run}']['get']['responses'][200]['content']['application/json']['run']['status'] = 'runing';",
      '  void s;',
      '}',
      '',
    ].join('\n'),
  );
  const args = [TSC, '--noEmit', '--strict', '--target', 'es2022', '--module', 'esnext', '--moduleResolution', 'bundler', '--lib', 'es2022,dom', '--types', 'node', 'usage.ts', 'brig-api.ts'];
  const r = await promisify(execFile)(process.execPath, args, { cwd: dir }).catch((e: { code?: number; stdout?: string }) => ({ stdout: `exit ${e.code}: ${e.stdout ?? ''}` }));
  assert.equal(r.stdout.trim(), '', `tsc --strict on the generated client:\n${r.stdout}`);

  // The same client, run: typed calls over the daemon's socket.
  const usage = (await import(pathToFileURL(path.join(dir, 'usage.ts')).href)) as { clientAt(s: string): { brig: unknown; close(): Promise<void> }; statusOf(b: unknown, run: string): Promise<string>; steer(b: unknown, run: string): Promise<string> };
  const c = usage.clientAt(serve.socket);
  try {
    assert.equal(await usage.statusOf(c.brig, runId), 'ended');
    assert.equal(await usage.statusOf(c.brig, 'r-0000000000000000'), 'run_not_found');
    assert.equal(await usage.steer(c.brig, runId), 'not_running');
  } finally {
    await c.close();
  }
  await serve.signal('SIGTERM');
});
