import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'undici';
import { listenApi } from '../../../src/api/index.js';
import { readOnlyBrig } from '../../../src/client/index.js';
import type { OperatorSurface, RefSurface } from '../../../src/protocol/index.js';

/** The HTTP faces' bad-input paths over a real unix socket; no engine needed (records on disk). */
test('the API refuses an unknown status filter (400), an unknown route (404), a wrong method (405, with Allow) and a body over 2 MiB (413), each with {code, message, hint}', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-api-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  // The records on disk; no drill-in or operator route is reached by this test.
  const api = await listenApi(readOnlyBrig(path.join(home, 'runs'), {} as RefSurface, {} as OperatorSurface), path.join(home, 'brig.sock'));
  const c = new Client('http://brig', { socketPath: path.join(home, 'brig.sock') });
  try {
    const get = async (p: string) => {
      const r = await c.request({ path: p, method: 'GET' });
      return { status: r.statusCode, body: (await r.body.json()) as { runs?: unknown[]; error?: { code: string; message: string; hint: string } } };
    };
    const ok = await get('/v1/runs?status=running&status=queued');
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body.runs, []);
    const bad = await get('/v1/runs?status=runing');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error?.code, 'invalid_input');
    assert.match(bad.body.error!.message, /runing/);
    assert.match(bad.body.error!.hint, /queued, starting, running, materializing, ended/);
    // The read-only view has no events: the stream is refused with its reason, not left hanging.
    const events = await get('/v1/events');
    assert.equal(events.status, 503);
    assert.equal(events.body.error?.code, 'daemon_unavailable');
    const none = await get('/v1/nowhere');
    assert.equal(none.status, 404);
    assert.equal(none.body.error?.code, 'route_not_found');
    assert.match(none.body.error!.hint, /\/v1/);
    for (const [method, p, allow] of [
      ['DELETE', '/v1/runs', 'GET, POST'],
      ['POST', '/v1/health', 'GET'],
      ['GET', '/v1/refs/ref_abcdefghijklmnopqrstuvwxyz/read', 'POST'],
    ] as const) {
      const r = await c.request({ path: p, method });
      const body = (await r.body.json()) as { error?: { code: string; message: string; hint: string } };
      assert.equal(r.statusCode, 405, `${method} ${p}`);
      assert.equal(r.headers.allow, allow, `${method} ${p}`);
      assert.equal(body.error?.code, 'method_not_allowed');
      assert.match(body.error!.message, new RegExp(`takes ${allow}`));
    }
    // A malformed ref id is no ref, whatever the method: ref_not_found naming the shape, never a 405.
    for (const method of ['GET', 'POST'] as const) {
      const r = await c.request({ path: '/v1/refs/ref_abcdefgh12345678/read', method, ...(method === 'POST' ? { body: '{}' } : {}) });
      const body = (await r.body.json()) as { error?: { code: string; hint: string } };
      assert.equal(r.statusCode, 404, method);
      assert.equal(body.error?.code, 'ref_not_found', method);
      assert.match(body.error!.hint, /ref_…/);
    }
    // An id the URL parser would fold (`..`, `.`) or an empty one is still the route's id: no ref, never another route.
    for (const p of ['/v1/refs/../read', '/v1/refs/./sql', '/v1/refs//read', '/v1/refs/%2e%2e/grep']) {
      const r = await c.request({ path: p, method: 'POST', body: '{}' });
      const body = (await r.body.json()) as { error?: { code: string; hint: string } };
      assert.equal(body.error?.code, 'ref_not_found', p);
      assert.equal(r.statusCode, 404, p);
    }
    // Hints speak the caller's language: an HTTP client is shown routes, brig's CLI its commands.
    for (const [p, method] of [['/v1/runs/r-0000000000000000', 'GET'], ['/v1/refs/nope/read', 'POST'], ['/v1/leases/ls_nope', 'GET'], ['/v1/runs?status=runing', 'GET']] as const) {
      const http = await c.request({ path: p, method, ...(method === 'POST' ? { body: '{}' } : {}) });
      const h = (await http.body.json()) as { error: { code: string; hint: string } };
      assert.doesNotMatch(h.error.hint, /`brig |--[a-z]/, `${p}: an HTTP client is told no CLI command (${h.error.hint})`);
      const cli = await c.request({ path: p, method, headers: { 'x-brig-client': 'cli' }, ...(method === 'POST' ? { body: '{}' } : {}) });
      const k = (await cli.body.json()) as { error: { code: string; hint: string } };
      assert.equal(k.error.code, h.error.code);
      if (h.error.code !== 'invalid_input') assert.match(k.error.hint, /`brig /, `${p}: the CLI is told its command`);
    }
    const runHint = (await (await c.request({ path: '/v1/runs/r-0000000000000000', method: 'GET' })).body.json()) as { error: { hint: string } };
    assert.match(runHint.error.hint, /GET \/v1\/runs/);
    const big = await c.request({ path: '/v1/runs', method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ task: 'x'.repeat(3 * 1024 * 1024) }) });
    const bigBody = (await big.body.json()) as { error?: { code: string; hint: string } };
    assert.equal(big.statusCode, 413);
    assert.equal(bigBody.error?.code, 'body_too_large');
    assert.match(bigBody.error!.hint, /2 MiB/);
  } finally {
    await c.close();
    await api.close();
  }
});
