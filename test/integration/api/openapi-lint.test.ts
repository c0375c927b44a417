/**
 * The generated OpenAPI document (src/api/contract.ts) passes Redocly's `recommended` ruleset
 * with no error, linted by the pinned @redocly/cli; and every operation declares the error
 * statuses its route can answer, with the error body's schema. In-process: no daemon.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { openapiDocument } from '../../../src/api/contract.js';
import { API_ROUTES, API_VERSION } from '../../../src/protocol/index.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const REDOCLY = path.join(ROOT, 'node_modules/.bin/redocly');

type Lint = { totals: { errors: number; warnings: number }; problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] };

test('the OpenAPI document lints clean under Redocly recommended (the pinned CLI)', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-openapi-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'openapi.json');
  fs.writeFileSync(file, JSON.stringify(openapiDocument(API_VERSION), null, 2));
  // Exit 1 on errors: the JSON report says which; no telemetry, no update check.
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
  const out = await promisify(execFile)(REDOCLY, ['lint', '--extends', 'recommended', file, '--format', 'json'], { cwd: dir, env, maxBuffer: 16 * 1024 * 1024 }).catch((e: { stdout?: string; stderr?: string }) => ({ stdout: e.stdout ?? '', stderr: e.stderr ?? '' }));
  const report = JSON.parse(out.stdout) as Lint;
  const shown = report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ''}: ${p.message}`);
  t.diagnostic(`redocly recommended: ${report.totals.errors} errors, ${report.totals.warnings} warnings`);
  for (const line of shown) t.diagnostic(line);
  assert.equal(report.totals.errors, 0, shown.join('\n'));
});

test('every operation declares its error statuses with the error schema, and who may call', () => {
  const doc = openapiDocument(API_VERSION) as { security: unknown[]; servers: { url: string }[]; components: { securitySchemes: Record<string, { type: string }> }; paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>> };
  assert.deepEqual(doc.security, [{}, { consoleToken: [] }, { consoleTokenQuery: [] }], 'the socket needs nothing; the console its token');
  assert.equal(doc.components.securitySchemes.consoleToken!.type, 'http');
  assert.ok(doc.servers.some((s) => s.url.endsWith('/api')), "the console's listener");
  const errorBody = { $ref: '#/components/schemas/ErrorBody' };
  for (const [name, r] of Object.entries(API_ROUTES)) {
    const res = doc.paths[r.path]![r.method.toLowerCase()]!.responses;
    assert.ok(res['401'] && !res['401'].content, `${name}: 401 (the console's token), with no body`);
    assert.deepEqual(res['500']!.content!['application/json']!.schema, errorBody, `${name}: 500 internal`);
    assert.ok(res.default, `${name}: default`);
    if (r.method === 'POST') assert.ok(res['400'] && res['413'], `${name}: a POST body can be invalid or too large`);
    if (r.path.includes('{')) assert.match(JSON.stringify(res['404']), /_not_found/, `${name}: its path parameter may name nothing`);
  }
  const spawn = doc.paths['/v1/runs']!.post!.responses;
  for (const s of ['403', '429', '503', '507']) assert.ok(spawn[s], `spawn declares ${s}`);
  assert.match(JSON.stringify(doc.paths['/v1/runs/{run}/resume']!.post!.responses['409']), /resume_unavailable/);
});
