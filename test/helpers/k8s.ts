/**
 * The test cluster for the Kubernetes tier (scripts/k8s-up.sh): where it is and a kubectl to
 * drive it. A test without a cluster is skipped with the reason printed, except in CI, where
 * `make test` starts one and its absence is a failure.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import type { TestContext } from 'node:test';
import type { KubeApi } from '../../src/jail/k8s/kube-api.js';
import { execText } from '../../src/jail/k8s/kube-exec.js';

export interface Cluster {
  kubeconfig: string;
  kubectl: string;
  namespace: string;
  /** brig's child image as the cluster's containerd holds it (imported by k8s-up.sh). */
  childImage: string;
  /** Where a run's /workspace lives: brig-loop on brig's own cluster; on a user's, BRIG_K8S_WORKSPACE_CLASS or else an emptyDir. */
  workspace: { storageClass: string } | { emptyDir: true };
}

/** The cluster `make k8s-up` started (its env file), or the one KUBECONFIG names with BRIG_K8S_LIVE=1. */
export function testCluster(): Cluster | null {
  const state = process.env.BRIG_K8S_STATE ?? '/var/lib/brig-k8s';
  const envFile = `${state}/env`;
  const fromFile: Record<string, string> = {};
  if (fs.existsSync(envFile)) {
    for (const line of fs.readFileSync(envFile, 'utf8').split('\n')) {
      const m = /^export ([A-Z0-9_]+)=(.*)$/.exec(line);
      if (m) fromFile[m[1]!] = m[2]!;
    }
  }
  const live = process.env.BRIG_K8S_LIVE === '1';
  const kubeconfig = live ? process.env.KUBECONFIG : fromFile.KUBECONFIG;
  const kubectl = process.env.BRIG_KUBECTL ?? fromFile.BRIG_KUBECTL ?? 'kubectl';
  if (!kubeconfig || !fs.existsSync(kubeconfig)) return null;
  const childImage = process.env.BRIG_K8S_CHILD_IMAGE ?? fromFile.BRIG_K8S_CHILD_IMAGE ?? '';
  const cls = live ? process.env.BRIG_K8S_WORKSPACE_CLASS : 'brig-loop';
  return { kubeconfig, kubectl, namespace: process.env.BRIG_K8S_NAMESPACE ?? 'brig', childImage, workspace: cls ? { storageClass: cls } : { emptyDir: true } };
}

/** The environment that points brig at the cluster with the Kubernetes driver. */
export function driverEnv(c: Cluster): Record<string, string> {
  return { BRIG_DRIVER: 'kubernetes', KUBECONFIG: c.kubeconfig, BRIG_K8S_NAMESPACE: c.namespace, BRIG_K8S_IMAGE: c.childImage, ...('storageClass' in c.workspace ? { BRIG_K8S_WORKSPACE_CLASS: c.workspace.storageClass } : { BRIG_K8S_WORKSPACE_EMPTYDIR: '1' }) };
}

export function requireCluster(t: TestContext): Cluster | null {
  const c = testCluster();
  if (c) return c;
  const why = 'no test cluster (run `make k8s-up`, or BRIG_K8S_LIVE=1 with KUBECONFIG for your own)';
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`${why}; CI requires it`);
  t.skip(why);
  return null;
}

/** kubectl against the cluster; stdin when given. Resolves with its exit code and output, never rejects on a non-zero exit. */
export function kubectl(c: Cluster, args: readonly string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(c.kubectl, ['--kubeconfig', c.kubeconfig, '-n', c.namespace, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    p.stdin.end(stdin ?? '');
  });
}

/** Resolves once /workspace/<rel> exists in the pod (looked at through its relay container, which mounts the workspace); fails after ~10 s. */
export async function untilInWorkspace(api: KubeApi, pod: string, rel: string): Promise<void> {
  for (let i = 0; (await execText(api, pod, 'relay', ['test', '-e', `/workspace/${rel}`]).catch(() => ({ exitCode: 1 }))).exitCode !== 0; i++) {
    if (i >= 100) throw new Error(`/workspace/${rel} did not appear in pod ${pod}: the program did not start`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
