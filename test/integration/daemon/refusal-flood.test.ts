/**
 * A client retrying refused spawns (issue 29 item 6): a real `brig serve` whose one slot is
 * taken and whose one queue place is taken (--max-queued 1) answers 300 spawns `429 queue_full`. Before,
 * each refusal was one synchronous, hashed ledger line (~65 MB/h from retrying clients); now the
 * first of a caller and code is a line at once and the repeats are counted into one line per
 * window (flushed at the latest when the daemon closes): a handful of lines whose counts add up
 * to every refusal, content-free, and the chain verifies. Real engine; dist/ must be built.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { RunRecord } from '../../../src/runs/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { until } from '../runs/fixture.js';
import { daemonHome } from './serve-proc.js';

function call(sock: string, method: 'GET' | 'POST', route: string, body?: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ socketPath: sock, method, path: route, headers: text ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } : {} }, (res) => {
      let b = '';
      res.setEncoding('utf8').on('data', (c: string) => (b += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body: b ? JSON.parse(b) : undefined }));
    });
    req.on('error', reject);
    req.end(text);
  });
}

const ledgerText = (dir: string) => fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort().map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).join('');

test('300 refused spawns from one caller cost a few counted ledger lines, not 300: the counts add up to every refusal, no line carries the request, and the ledger verifies', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const s = await h.serve(['--max-concurrent', '1', '--max-queued', '1']);
  const busy = await call(s.socket, 'POST', '/v1/runs', { task: 'hold the one slot', kind: 'command', argv: ['sleep', '120'], async: true });
  assert.equal(busy.status, 202, JSON.stringify(busy.body));
  const id = (busy.body.run as RunRecord).id;
  await until(async () => (await call(s.socket, 'GET', `/v1/runs/${id}`)).body.run.status === 'running', 'the slot taken');
  const queued = await call(s.socket, 'POST', '/v1/runs', { task: 'take the queue place', kind: 'command', argv: ['true'], async: true });
  assert.equal(queued.status, 202, JSON.stringify(queued.body));
  const before = Buffer.byteLength(ledgerText(h.paths.ledger));
  const N = 300;
  for (let i = 0; i < N; i++) {
    const r = await call(s.socket, 'POST', '/v1/runs', { task: `secret-task-text-${i}`, kind: 'command', argv: ['true'], async: true });
    assert.equal(r.status, 429, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'queue_full');
  }
  const during = ledgerText(h.paths.ledger);
  const linesDuring = during.split('\n').filter((l) => l.includes('"type":"run.refused"')).length;
  assert.ok(linesDuring <= 3, `refusals written as they came: ${linesDuring} lines for ${N}`);
  // A line of the ledger is ~300 bytes: 300 of them would be ~90 KB.
  assert.ok(Buffer.byteLength(during) - before < 8 * 1024, `the ledger grew ${Buffer.byteLength(during) - before} bytes for ${N} refusals`);
  assert.equal((await call(s.socket, 'POST', `/v1/runs/${id}/kill`, { confirm: true })).status, 200);
  await s.signal('SIGTERM');
  assert.equal((await s.exited).code, 0, s.stderr());

  const refused = ledgerText(h.paths.ledger).split('\n').filter((l) => l.includes('"type":"run.refused"')).map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.ok(refused.length >= 1 && refused.length <= 4, `${refused.length} lines`);
  assert.equal(refused.reduce((n, r) => n + ((r.count as number | undefined) ?? 1), 0), N, 'every refusal counted, none twice');
  assert.ok(refused.every((r) => r.code === 'queue_full' && r.parentRunId === null));
  assert.doesNotMatch(JSON.stringify(refused), /secret-task-text/, 'content-free');
  const v = await h.run(['audit', 'verify', '--json']);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  const fleet = await h.run(['fleet', '--json']);
  assert.equal(fleet.code, 0, fleet.stderr);
  assert.equal((JSON.parse(fleet.stdout) as { fleet: { refusals: { byCode: Record<string, number> } } }).fleet.refusals.byCode.queue_full, N, fleet.stdout);
});
