/**
 * The workspace claim before the gate is lifted (jail/k8s/pod-launch.ts workspaceBound), against
 * a fake API: read until Bound; a claim that is not the one the verified pod asked for (another
 * class or size, a data source, not owned by the pod) is refused before anything is scheduled;
 * an emptyDir workspace reads nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workspaceBound, type LaunchedPod } from '../../../src/jail/k8s/pod-launch.js';
import { renderPod } from '../../../src/jail/k8s/pod-spec.js';
import type { KubeApi } from '../../../src/jail/k8s/kube-api.js';
import type { JailSpec } from '../../../src/jail/index.js';

const spec: JailSpec = { runId: 'r-claim', leaseId: 'l', rootRunId: 'r-claim', argv: ['true'], env: {}, limits: { memoryMb: 64, cpu: 0.5, pids: 32, tmpfsMb: 8, diskMb: 32 }, artifacts: [] };
const launched = (workspace: { storageClass: string } | { emptyDir: true }): LaunchedPod => {
  const m = renderPod(spec, { namespace: 'brig', owner: 'o', image: 'img:1', workspace });
  return { name: m.metadata.name, uid: 'pod-uid-1', admitted: m as unknown as Record<string, unknown> };
};
const claim = (o: { phase?: string; cls?: string; size?: string; owner?: string; dataSource?: unknown } = {}) => ({
  metadata: { name: 'brig-r-claim-workspace', ownerReferences: [{ kind: 'Pod', name: 'brig-r-claim', uid: o.owner ?? 'pod-uid-1' }] },
  spec: { storageClassName: o.cls ?? 'brig-loop', resources: { requests: { storage: o.size ?? '32Mi' } }, ...(o.dataSource ? { dataSource: o.dataSource } : {}) },
  status: { phase: o.phase ?? 'Bound' },
});
const api = (answers: (Record<string, unknown> | null)[]) => {
  const asked: string[] = [];
  const fake = { getClaim: async (name: string) => (asked.push(name), answers.length > 1 ? answers.shift()! : answers[0]!) } as unknown as KubeApi;
  return { fake, asked };
};

test('a claim not there yet, then Pending, then Bound: read until Bound, by its ephemeral name', async () => {
  const a = api([null, claim({ phase: 'Pending' }), claim({ size: '33554432' })]);
  await workspaceBound(a.fake, launched({ storageClass: 'brig-loop' }));
  assert.deepEqual(a.asked, ['brig-r-claim-workspace', 'brig-r-claim-workspace', 'brig-r-claim-workspace']);
});

test('a claim that is not the verified one is refused jail_unverified, whatever its phase', async () => {
  for (const bad of [claim({ cls: 'standard' }), claim({ size: '10Gi' }), claim({ owner: 'another-pod' }), claim({ dataSource: { kind: 'PersistentVolumeClaim', name: 'theirs' } })]) {
    await assert.rejects(workspaceBound(api([bad]).fake, launched({ storageClass: 'brig-loop' })), (e: Error & { code?: string }) => e.code === 'jail_unverified' && /not the one the verified pod asked for/.test(e.message));
  }
});

test('an emptyDir workspace has no claim to read', async () => {
  const a = api([claim()]);
  await workspaceBound(a.fake, launched({ emptyDir: true }));
  assert.deepEqual(a.asked, []);
});
