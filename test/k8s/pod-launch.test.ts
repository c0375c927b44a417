/**
 * The Kubernetes jail's create → verify → start (issue 33 items 2–3) on brig's own cluster: a
 * pod rendered from a JailSpec is created behind brig's scheduling gate, read back, verified
 * and only then started — hardened as PodSecurity `restricted` admits it, its exit code read
 * back. A real mutating admission webhook (a TLS server on loopback, registered with the API
 * server) that injects a sidecar makes the pod drift: the run is refused `jail_unverified` with
 * the drifted field named, the pod deleted before it was ever scheduled.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { BrigError } from '../../src/util/errors.js';
import { KubeApi, readKubeconfig } from '../../src/jail/k8s/kube-api.js';
import { launchVerified, waitPodEnd } from '../../src/jail/k8s/pod-launch.js';
import { CONTAINER, renderPod, type PodManifest } from '../../src/jail/k8s/pod-spec.js';
import type { JailSpec } from '../../src/jail/index.js';
import { kubectl, requireCluster, type Cluster } from '../helpers/k8s.js';

const run = promisify(execFile);
const LIMITS = { memoryMb: 128, cpu: 0.5, pids: 64, tmpfsMb: 16, diskMb: 64 };

function spec(argv: string[]): JailSpec {
  const id = `r-${randomBytes(8).toString('hex')}`;
  return { runId: id, leaseId: `l-${randomBytes(4).toString('hex')}`, rootRunId: id, argv, env: { HOME: '/workspace', PATH: '/bin:/usr/bin' }, limits: LIMITS, artifacts: [] };
}

function manifest(c: Cluster, argv: string[], labels: Record<string, string> = {}): PodManifest {
  const m = renderPod(spec(argv), { namespace: c.namespace, owner: 'k8s-test', image: c.childImage, workspace: c.workspace, activeDeadlineSeconds: 120 });
  Object.assign(m.metadata.labels, labels);
  return m;
}

test('a pod is created gated, verified against what was asked, then started: hardened, its exit code read back', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const api = new KubeApi(readKubeconfig(c.kubeconfig), c.namespace);
  const m = manifest(c, ['sh', '-c', 'echo "uid=$(id -u) $(grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\\t\\n" "  ")"; touch /x 2>&1 | head -1; exit 3']);
  t.after(async () => {
    await api.deletePod(m.metadata.name);
    await api.close();
  });
  const launched = await launchVerified(api, m);
  assert.equal(launched.name, m.metadata.name);
  const end = await waitPodEnd(api, launched.name, 90_000);
  assert.ok(end, 'the pod ended');
  assert.equal(end.exitCode, 3, JSON.stringify(end));
  const log = await api.podLog(launched.name, CONTAINER);
  assert.match(log, /uid=65534 CapEff:\s*0000000000000000 NoNewPrivs:\s*1 Seccomp:\s*2/);
  assert.match(log, /Read-only file system/);
});

/** A self-signed certificate for 127.0.0.1 (the webhook's; its own CA bundle). */
async function loopbackCert(dir: string): Promise<{ cert: Buffer; key: Buffer }> {
  const key = path.join(dir, 'wh.key');
  const cert = path.join(dir, 'wh.crt');
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1']);
  return { cert: fs.readFileSync(cert), key: fs.readFileSync(key) };
}

test('a mutating webhook that injects a sidecar makes the pod drift: refused jail_unverified naming the field, deleted before it was scheduled', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-wh-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { cert, key } = await loopbackCert(dir);
  let reviewed = 0;
  const server = https.createServer({ cert, key }, (req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const review = JSON.parse(body) as { request: { uid: string } };
      reviewed++;
      const patch = [{ op: 'add', path: '/spec/containers/-', value: {
            // Hardened, so PodSecurity admits it: only brig's own check sees the change.
            name: 'injected',
            image: c.childImage,
            imagePullPolicy: 'Never',
            command: ['sleep', '3600'],
            securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } },
          },
        },
      ];
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request.uid, allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(patch)).toString('base64') } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as { port: number }).port;
  const whName = `brig-test-inject-${randomBytes(3).toString('hex')}`;
  const selector = { 'brig.test/inject': whName };
  const config = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: whName },
    webhooks: [
      {
        name: `${whName}.brig.test`,
        clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle: cert.toString('base64') },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        objectSelector: { matchLabels: selector },
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: 'Fail',
        timeoutSeconds: 5,
      },
    ],
  };
  const applied = await kubectl(c, ['apply', '-f', '-'], JSON.stringify(config));
  assert.equal(applied.code, 0, applied.stderr);
  t.after(async () => void (await kubectl(c, ['delete', 'mutatingwebhookconfiguration', whName, '--ignore-not-found'])));

  const api = new KubeApi(readKubeconfig(c.kubeconfig), c.namespace);
  const m = manifest(c, ['sh', '-c', 'echo must-not-run'], selector);
  t.after(async () => {
    await api.deletePod(m.metadata.name);
    await api.close();
  });
  const drifted: string[] = [];
  // The API server may take a moment to use a new webhook configuration: retry while it is not yet called.
  let refused: unknown;
  for (let i = 0; i < 20 && reviewed === 0; i++) {
    refused = await launchVerified(api, m, { onDrift: (_n, d) => drifted.push(...d.map((x) => x.field)) }).then(
      () => null,
      (e: unknown) => e,
    );
    if (reviewed === 0) {
      await api.deletePod(m.metadata.name);
      await waitGone(api, m.metadata.name);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  assert.ok(reviewed > 0, 'the webhook was called');
  assert.ok(refused instanceof BrigError, `refused: ${String(refused)}`);
  assert.equal(refused.code, 'jail_unverified');
  assert.match(refused.message, /spec\.containers/);
  assert.ok(drifted.includes('spec.containers'), `drift named: ${drifted.join(', ')}`);
  await waitGone(api, m.metadata.name);
});

async function waitGone(api: KubeApi, name: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const p = await api.getPod(name);
    if (!p) return;
    assert.ok(!(p.spec as { nodeName?: string }).nodeName, 'never scheduled');
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`pod ${name} is still there`);
}
