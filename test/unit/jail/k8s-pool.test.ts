/**
 * The Kubernetes warm pool's pure parts (src/jail/k8s/k8s-pool.ts, pod-spec.ts): a pool pod
 * holds nothing of any run; the assignment a real shell sources gives back the run's argv and
 * environment byte for byte; a spec the pool cannot serve goes cold; a started pod is verified
 * without its gate and still refuses drift.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fits } from '../../../src/jail/k8s/k8s-pool.js';
import { POOL_WAITER, poolAssignment, renderPod, verifyPod, VERIFY_GATE } from '../../../src/jail/k8s/pod-spec.js';
import type { JailSpec } from '../../../src/jail/index.js';

const LIMITS = { memoryMb: 128, cpu: 0.5, pids: 64, tmpfsMb: 16, diskMb: 64 };
const spec = (extra: Partial<JailSpec> = {}): JailSpec => ({ runId: 'r-1', leaseId: 'l-1', rootRunId: 'r-1', argv: ['sh', '-c', 'true'], env: { HOME: '/workspace' }, limits: LIMITS, artifacts: [], brokerDir: '/tmp/x', ...extra });

test('a pool pod is rendered with no argv, no environment and no run: PID 1 is the waiter, the broker mounted, labelled as pooled', () => {
  const pod = renderPod({ ...spec({ runId: 'pool-abc', rootRunId: 'pool-abc', leaseId: 'pool', argv: [], env: {} }) }, { namespace: 'brig', owner: 'o', image: 'img:1', workspace: { storageClass: 'brig-loop' }, broker: true, pooled: true });
  const child = (pod.spec.containers as Record<string, unknown>[])[0]!;
  assert.deepEqual(child.command, ['/bin/sh', '-c', POOL_WAITER]);
  assert.deepEqual(child.env, []);
  assert.equal(pod.metadata.labels['brig.dev/pool'], 'true');
  assert.ok((pod.spec.volumes as { name: string }[]).some((v) => v.name === 'run-brig'), 'the relay socket directory is there');
});

test("the assignment, sourced by a real sh, gives back the run's argv and environment exactly (quotes, $, backslashes, newlines, empty)", (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-assign-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const argv = ['printf', '%s|', "it's", '"q"', '$HOME `id` $(id)', 'a\\b', 'two\nlines', '', "'"];
  const env = { WEIRD: "x' ; echo pwned; '", DOLLAR: '$PATH', EMPTY: '' };
  fs.writeFileSync(path.join(dir, 'assign'), poolAssignment(argv, env));
  const out = execFileSync('/bin/sh', ['-c', `. "$1"; "$@"; printf '%s|%s|%s' "$WEIRD" "$DOLLAR" "$EMPTY"`, 'sh', path.join(dir, 'assign')], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } });
  assert.equal(out, `${argv.slice(2).join('|')}|${env.WEIRD}|${env.DOLLAR}|`);
  assert.throws(() => poolAssignment(['true'], { 'A-B': '1' }), /not a shell name/);
});

test('the pool serves only what it can run exactly as the cold path would; anything else goes cold', () => {
  assert.equal(fits(spec(), 'img:1'), true);
  assert.equal(fits(spec({ image: 'img:1' }), 'img:1'), true);
  assert.equal(fits(spec({ image: 'other:2' }), 'img:1'), false, 'another image');
  assert.equal(fits(spec({ artifacts: [{ hostPath: '/x', name: 'x' }] }), 'img:1'), false, 'artifacts');
  assert.equal(fits(spec({ repoDir: '/r' }), 'img:1'), false, 'a repository');
  assert.equal(fits(spec({ brokerDir: undefined }), 'img:1'), false, 'no broker');
  assert.equal(fits(spec({ env: { 'A.B': '1' } }), 'img:1'), false, 'an environment name sh cannot export');
  assert.equal(fits(spec({ argv: ['a\0b'] }), 'img:1'), false, 'NUL in argv');
  assert.equal(fits(spec({ argv: [] }), 'img:1'), false, 'no program');
});

test('a started pod is verified without its gate and bound to a node, and still refuses a changed image or an added gate', () => {
  const asked = renderPod(spec({ argv: [], env: {} }), { namespace: 'brig', owner: 'o', image: 'img:1', workspace: { storageClass: 'brig-loop' }, broker: true, pooled: true });
  const got = JSON.parse(JSON.stringify(asked)) as { spec: Record<string, any> };
  got.spec.schedulingGates = [];
  got.spec.nodeName = 'node-1';
  assert.deepEqual(verifyPod(asked, got, { started: true }), []);
  assert.ok(verifyPod(asked, got).some((d) => d.field === 'spec.schedulingGates'), 'not started: the gate must be there');
  got.spec.containers[0].image = 'img:drifted';
  got.spec.schedulingGates = [{ name: VERIFY_GATE }];
  const fields = verifyPod(asked, got, { started: true }).map((d) => d.field);
  assert.ok(fields.includes('containers.child.image') && fields.includes('spec.schedulingGates'), fields.join(', '));
});
