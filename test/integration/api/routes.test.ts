import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'undici';
import { listenApi } from '../../../src/api/index.js';
import { ReadOnlyRuns } from '../../../src/runs/index.js';

/** The HTTP faces' bad-input paths over a real unix socket; no engine needed (records on disk). */
test('the API refuses an unknown status filter and an unknown route with {code, message, hint}', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-api-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const api = await listenApi(new ReadOnlyRuns(path.join(home, 'runs')), path.join(home, 'brig.sock'));
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
    const none = await get('/v1/nowhere');
    assert.equal(none.body.error?.code, 'invalid_input');
    assert.match(none.body.error!.hint, /\/v1/);
  } finally {
    await c.close();
    await api.close();
  }
});
