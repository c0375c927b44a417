/**
 * Drill-in over the daemon's HTTP API (real unix socket, undici): a real jailed child's
 * outputs become ResultRefs; the coordinator lists them, slices them with each verb, and gets
 * the envelope. Refusals come back as {error: {code, message, hint}}.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from 'undici';
import { loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { ApiClient } from '../../../src/client/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome } from '../runs/fixture.js';

const CHILD = `
const fs = require('node:fs');
const rows = [];
for (let i = 0; i < 500; i++) rows.push(JSON.stringify({ i, kind: i % 5 === 0 ? 'fizz' : 'plain', installed_at: '2026-01-0' + (1 + (i % 9)) }));
fs.writeFileSync('out/rows.jsonl', rows.join('\\n') + '\\n');
fs.writeFileSync('out/notes.txt', 'alpha\\nbeta needle\\ngamma\\nneedle again\\n');
console.log('done');
`;

// req: slice:select-only
test('[INV-5] refs over the API: list, read, grep, jq, sql, jsonpath, result; a hostile query is refused', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  const api = new ApiClient(d.socketPath);
  const http = new Client('http://brig', { socketPath: d.socketPath });
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const r = await http.request({ method, path, ...(body ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}) });
    return { status: r.statusCode, json: (await r.body.json()) as Record<string, any> };
  };
  try {
    const spawned = await api.spawn({ task: 'rows', kind: 'command', argv: ['node', '-e', CHILD] });
    assert.ok(spawned.ok, spawned.ok ? '' : spawned.error.message);
    assert.equal(spawned.value.endReason, 'completed');
    const id = spawned.value.id;

    const list = await call('GET', `/v1/runs/${id}/refs`);
    assert.equal(list.status, 200);
    const refs = list.json.refs as { ref: string; path: string; kind: string; rows?: number }[];
    const rows = refs.find((r) => r.path.endsWith('rows.jsonl'))!;
    const notes = refs.find((r) => r.path.endsWith('notes.txt'))!;
    assert.equal(rows.kind, 'jsonl');
    assert.ok(refs.some((r) => r.path === 'stdout.txt'), 'bounded stdout is a ref too');

    const sql = await call('POST', `/v1/refs/${rows.ref}/sql`, { query: "SELECT kind, count(*) AS n FROM ref GROUP BY kind ORDER BY kind" });
    assert.equal(sql.status, 200);
    assert.deepEqual(sql.json.rows, [['fizz', 100], ['plain', 400]]);

    const grep = await call('POST', `/v1/refs/${notes.ref}/grep`, { pattern: 'needle', maxMatches: 1 });
    assert.equal(grep.status, 200);
    assert.equal(grep.json.returned, 1);
    assert.equal(grep.json.more, 1);

    const read = await call('POST', `/v1/refs/${rows.ref}/read`, { line: 250, lines: 1 });
    assert.equal(read.status, 200);
    assert.equal(JSON.parse(read.json.text.trim()).i, 249);

    const jq = await call('POST', `/v1/refs/${rows.ref}/jq`, { expr: 'select(.i == 7) | .kind' });
    assert.equal(jq.status, 200);
    assert.equal(jq.json.text.trim(), '"plain"');

    const jp = await call('POST', `/v1/refs/${rows.ref}/jsonpath`, { expr: '$.installed_at', maxRows: 2 });
    assert.equal(jp.status, 200);
    assert.equal(jp.json.returned, 2);

    const hostile = await call('POST', `/v1/refs/${rows.ref}/sql`, { query: "SELECT * FROM read_text('/etc/passwd')" });
    assert.equal(hostile.status, 403);
    assert.equal(hostile.json.error.code, 'query_refused');
    assert.ok(hostile.json.error.hint);

    const result = await call('GET', `/v1/runs/${id}/result`);
    assert.equal(result.status, 200);
    assert.match(result.json.envelope, /Full results \(drill in with read\/grep\/jq\/sql\/jsonpath\):\n- .*ref_/);
    assert.ok(result.json.savings.estSavedTokens > 0);

    const missing = await call('POST', `/v1/refs/ref_doesnotexist00/read`, { offset: 0, length: 10 });
    assert.equal(missing.status, 404);
    assert.equal(missing.json.error.code, 'ref_not_found');
  } finally {
    await http.close();
    await d.close();
  }
});
