/**
 * scripts/engine-up.sh when the DOCKER_HOST it is given does not answer: it stops with a
 * message saying what to do and starts nothing (the running-engine case is an integration test).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';

const script = path.resolve(import.meta.dirname, '../../../scripts/engine-up.sh');

function engineUp(env: Record<string, string>): Promise<{ code: number; err: string }> {
  return new Promise((resolve) => {
    execFile('bash', [script], { env: { PATH: process.env.PATH ?? '', ...env } }, (e, _out, err) => {
      resolve({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, err });
    });
  });
}

test('engine-up: a DOCKER_HOST that does not answer stops with what to do, and starts nothing', async () => {
  for (const host of ['unix:///nonexistent/brig-test/docker.sock', 'tcp://127.0.0.1:1']) {
    const r = await engineUp({ DOCKER_HOST: host });
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /does not answer/);
    assert.match(r.err, /Start that engine, or unset DOCKER_HOST/);
    assert.doesNotMatch(r.err, /starting dockerd/);
  }
});
