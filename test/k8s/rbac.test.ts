/**
 * The least-privilege RBAC shipped for a user's own cluster (deploy/kubernetes/rbac.yaml, issue
 * 33 item 10), on brig's own cluster: applied in the namespace, a token of its ServiceAccount
 * runs create → verify → start of a hardened child pod; `kubectl auth can-i` as that account
 * says yes to what the driver needs and no to everything else (secrets, another namespace,
 * nodes, RBAC, pods/ephemeralcontainers).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { KubeApi, readKubeconfig } from '../../src/jail/k8s/kube-api.js';
import { launchVerified, waitPodEnd } from '../../src/jail/k8s/pod-launch.js';
import { renderPod } from '../../src/jail/k8s/pod-spec.js';
import { kubectl, requireCluster } from '../helpers/k8s.js';

const MANIFEST = path.resolve(import.meta.dirname, '../../deploy/kubernetes/rbac.yaml');

test('the shipped RBAC: its ServiceAccount runs a child pod through create → verify → start, and may do nothing else', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const applied = await kubectl(c, ['apply', '-f', '-'], fs.readFileSync(MANIFEST, 'utf8'));
  assert.equal(applied.code, 0, applied.stderr);
  // Cleanups run last-registered first: the pod goes while its account may still delete it.
  const cleanups: (() => Promise<unknown>)[] = [() => kubectl(c, ['delete', '-f', '-', '--ignore-not-found'], fs.readFileSync(MANIFEST, 'utf8'))];
  t.after(async () => {
    for (const f of cleanups.reverse()) await f().catch(() => undefined);
  });
  const sa = `system:serviceaccount:${c.namespace}:brig-driver`;
  const can = async (...args: string[]) => (await kubectl(c, ['auth', 'can-i', '--as', sa, ...args])).stdout.trim();
  for (const args of [['create', 'pods'], ['delete', 'pods'], ['patch', 'pods'], ['create', 'pods', '--subresource=exec'], ['get', 'pods', '--subresource=log'], ['create', 'networkpolicies.networking.k8s.io']]) {
    assert.equal(await can(...args), 'yes', args.join(' '));
  }
  for (const args of [['get', 'secrets'], ['create', 'pods', '-n', 'default'], ['list', 'nodes'], ['create', 'roles.rbac.authorization.k8s.io'], ['patch', 'pods', '--subresource=ephemeralcontainers'], ['create', 'serviceaccounts', '--subresource=token'], ['create', 'deployments.apps'], ['update', 'pods', '--subresource=status']]) {
    assert.equal(await can(...args), 'no', args.join(' '));
  }

  const token = await kubectl(c, ['create', 'token', 'brig-driver', '--duration=10m']);
  assert.equal(token.code, 0, token.stderr);
  const admin = readKubeconfig(c.kubeconfig);
  const api = new KubeApi({ server: admin.server, ...(admin.ca ? { ca: admin.ca } : {}), token: token.stdout.trim() }, c.namespace);
  const id = `r-${randomBytes(8).toString('hex')}`;
  const m = renderPod(
    { runId: id, leaseId: 'l-rbac', rootRunId: id, argv: ['sh', '-c', 'exit 7'], env: { HOME: '/workspace' }, limits: { memoryMb: 64, cpu: 0.25, pids: 32, tmpfsMb: 8, diskMb: 32 }, artifacts: [] },
    { namespace: c.namespace, owner: 'rbac-test', image: c.childImage, workspace: c.workspace, activeDeadlineSeconds: 60 },
  );
  cleanups.push(async () => {
    await api.deletePod(m.metadata.name);
    await api.close();
  });
  await launchVerified(api, m);
  const end = await waitPodEnd(api, m.metadata.name, 90_000);
  assert.equal(end?.exitCode, 7, JSON.stringify(end));
  // The same token cannot leave the namespace.
  const outside = new KubeApi({ server: admin.server, ...(admin.ca ? { ca: admin.ca } : {}), token: token.stdout.trim() }, 'default');
  cleanups.push(() => outside.close());
  await assert.rejects(outside.listPods('brig.dev/owner'), /403/);
});
