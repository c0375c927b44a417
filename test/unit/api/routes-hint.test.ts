import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { listenApi } from '../../../src/api/index.js';
import { exchange } from '../../../src/client/wire.js';
import { API_ROUTES, type Brig } from '../../../src/protocol/index.js';

test("route_not_found's hint, as a client gets it, names every route of the table (method and path)", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-hint-'));
  // No route is reached: the hint comes from the table before any of the Brig is used.
  const brig = { events: () => { throw new Error('no events'); }, get: async () => undefined } as unknown as Brig;
  const api = await listenApi(brig, path.join(dir, 'api.sock'));
  try {
    const r = await exchange({ socketPath: path.join(dir, 'api.sock'), method: 'GET', path: '/v1/no-such-thing', timeoutMs: 5000 });
    assert.equal(r.status, 404);
    const e = (JSON.parse(r.body) as { error: { code: string; hint: string } }).error;
    assert.equal(e.code, 'route_not_found');
    for (const x of Object.values(API_ROUTES)) assert.ok(e.hint.includes(`${x.method} ${x.path}`), `${x.method} ${x.path} is missing from the hint`);
    // A known path with another method is 405 with the methods it takes, never route_not_found.
    const m = await exchange({ socketPath: path.join(dir, 'api.sock'), method: 'POST', path: '/v1/health', body: '{}', timeoutMs: 5000 });
    assert.equal(m.status, 405);
    assert.deepEqual((JSON.parse(m.body) as { error: { data: { allow: string[] } } }).error.data.allow, ['GET']);
  } finally {
    await api.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
