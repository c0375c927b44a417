/**
 * The engine gate itself: with CI=true a missing engine fails the run; elsewhere the test is
 * skipped with the reason. Run in a subprocess whose DOCKER_HOST points at a socket that does
 * not exist, so no engine answers whatever this host has.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';

const fixture = path.resolve(import.meta.dirname, '../../fixtures/jail/engine-gate.ts');

function runGate(ci: string | undefined): Promise<{ code: number; out: string }> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', DOCKER_HOST: 'unix:///nonexistent/brig-gate/docker.sock' };
  if (ci !== undefined) env.CI = ci;
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', '--test', fixture], { env, cwd: path.resolve(import.meta.dirname, '../../..') }, (e, stdout, stderr) => {
      resolve({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, out: stdout + stderr });
    });
  });
}

test('without CI a missing engine skips the test and says why', async () => {
  const r = await runGate(undefined);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /# SKIP no Docker engine answers \(run `make engine`\)/);
  assert.match(r.out, /# skipped 1/);
});

test('with CI=true a missing engine fails the run', async () => {
  const r = await runGate('true');
  assert.notEqual(r.code, 0, r.out);
  assert.match(r.out, /CI requires the engine/);
  assert.match(r.out, /# fail 1/);
});
