import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';

const script = path.resolve(import.meta.dirname, '../../../scripts/engine-up.sh');

test('engine-up: a running engine is left alone, and it says so', async (t) => {
  if (!(await requireEngine(t))) return;
  const env: Record<string, string> = { PATH: process.env.PATH ?? '' };
  if (process.env.DOCKER_HOST) env.DOCKER_HOST = process.env.DOCKER_HOST;
  const r = await new Promise<{ code: number; err: string }>((resolve) => {
    execFile('bash', [script], { env }, (e, _out, err) => resolve({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, err }));
  });
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /already answers .*leaving it alone/);
});
