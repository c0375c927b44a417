/**
 * brig's own test cluster (scripts/k8s-up.sh, issue 33 item 1) holds what the Kubernetes
 * driver will rely on, proven from inside real pods:
 * - the namespace enforces PodSecurity `restricted`: a plain pod is refused with the reasons,
 *   the hardened one is admitted and runs with no capabilities, no new privileges, seccomp
 *   filtering, a read-only root and uid 65534;
 * - "no route out" has no holes: from a pod, the node's address (the kubelet), a Service VIP,
 *   another pod's listener and a host listener on the pod bridge's IPv6 link-local side all
 *   fail — while the same probe reaches a listener inside its own pod (the probe works).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { kubectl, requireCluster, type Cluster } from '../helpers/k8s.js';

// Issue 33 item 1: the test cluster is the project's own.

const LABEL = 'brig.test/k8s-cluster';

function podName(what: string): string {
  return `t-${what}-${randomBytes(3).toString('hex')}`;
}

function hardenedPod(c: Cluster, name: string, command: string[], extra: { labels?: Record<string, string> } = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { [LABEL]: '1', ...extra.labels } },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'c',
          image: c.childImage,
          imagePullPolicy: 'Never',
          command,
          securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
          resources: { limits: { cpu: '500m', memory: '128Mi' } },
        },
      ],
    },
  };
}

async function apply(c: Cluster, manifest: Record<string, unknown>): Promise<{ code: number; stdout: string; stderr: string }> {
  return kubectl(c, ['apply', '-f', '-'], JSON.stringify(manifest));
}

async function runToEnd(c: Cluster, manifest: Record<string, unknown>): Promise<{ phase: string; logs: string }> {
  const name = (manifest.metadata as { name: string }).name;
  const made = await apply(c, manifest);
  assert.equal(made.code, 0, made.stderr);
  const waited = await kubectl(c, ['wait', `pod/${name}`, '--for=jsonpath={.status.phase}=Succeeded', '--timeout=90s']);
  const phase = (await kubectl(c, ['get', `pod/${name}`, '-o', 'jsonpath={.status.phase}'])).stdout;
  const logs = (await kubectl(c, ['logs', name])).stdout;
  assert.equal(waited.code, 0, `pod ${name} ended ${phase}: ${waited.stderr}\n${logs}`);
  return { phase, logs };
}

async function podIp(c: Cluster, name: string): Promise<string> {
  const r = await kubectl(c, ['wait', `pod/${name}`, '--for=condition=Ready', '--timeout=90s']);
  assert.equal(r.code, 0, r.stderr);
  return (await kubectl(c, ['get', `pod/${name}`, '-o', 'jsonpath={.status.podIP}'])).stdout.trim();
}

function cleanup(c: Cluster) {
  return async () => {
    await kubectl(c, ['delete', 'pod', '-l', LABEL, '--wait=false', '--grace-period=0', '--force']);
  };
}

/**
 * A node program for a pod: listens on its own loopback (the control), then tries each target
 * once and prints one line per target — `ok`, or the error code — and exits.
 */
function probeProgram(targets: readonly { name: string; host: string; port: number; family?: number }[]): string {
  return `
const net = require('node:net');
const targets = ${JSON.stringify(targets)};
const try1 = (t) => new Promise((res) => {
  const s = net.connect({ host: t.host, port: t.port, family: t.family || 0, timeout: 3000 });
  s.on('connect', () => { s.destroy(); res('ok'); });
  s.on('timeout', () => { s.destroy(); res('ETIMEDOUT'); });
  s.on('error', (e) => res(e.code || String(e)));
});
net.createServer((s) => { s.on('error', () => {}); s.end('self'); }).listen(8081, '127.0.0.1', async () => {
  for (const t of targets) console.log(t.name + ' ' + (await try1(t)));
  process.exit(0);
});
`;
}

/** The host's IPv6 link-local addresses on the pod bridge and its ports (none when IPv6 is off there). */
async function hostLinkLocal(bridge: string): Promise<{ address: string; ifname: string }[]> {
  const { execFile } = await import('node:child_process');
  const out = await new Promise<string>((res, rej) => execFile('ip', ['-j', '-6', 'addr', 'show'], (e, o) => (e ? rej(e) : res(o))));
  const links = JSON.parse(out) as { ifname: string; master?: string; addr_info?: { local: string; scope: string }[] }[];
  return links
    .filter((l) => l.ifname === bridge || l.master === bridge)
    .flatMap((l) => (l.addr_info ?? []).filter((a) => a.scope === 'link').map((a) => ({ address: a.local, ifname: l.ifname })));
}

// req: cluster:pod-hardened
test('[INV-2] the test namespace enforces PodSecurity restricted: a plain pod is refused with the reasons, a hardened one runs with CapEff 0, NoNewPrivs 1, seccomp filtering, a read-only root as 65534', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  t.after(cleanup(c));
  const plain = await apply(c, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName('plain'), labels: { [LABEL]: '1' } },
    spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: c.childImage, imagePullPolicy: 'Never', command: ['true'] }] },
  });
  assert.notEqual(plain.code, 0, 'a plain pod is refused');
  assert.match(plain.stderr, /violates PodSecurity "restricted/);
  assert.match(plain.stderr, /allowPrivilegeEscalation|runAsNonRoot|capabilities|seccompProfile/);

  const { logs } = await runToEnd(
    c,
    hardenedPod(c, podName('hardened'), ['/bin/sh', '-c', 'grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status; id -u; touch /probe 2>&1 || true; ls /var/run/secrets 2>&1 || true']),
  );
  assert.match(logs, /^CapEff:\s+0000000000000000$/m, logs);
  assert.match(logs, /^NoNewPrivs:\s+1$/m, logs);
  assert.match(logs, /^Seccomp:\s+2$/m, logs);
  assert.match(logs, /^65534$/m, logs);
  assert.match(logs, /Read-only file system/, logs);
  assert.match(logs, /No such file or directory/, 'no service-account token is mounted');
});

// req: cluster:no-route-out
test('[INV-2] no route out of a pod: the node address, a Service VIP, another pod and a host listener on IPv6 link-local all fail; a listener in its own pod answers', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  t.after(cleanup(c));
  // Another pod listening: pod-to-pod over the bridge must be dropped (isolated ports).
  const server = podName('server');
  const serve = await apply(c, hardenedPod(c, server, ['/usr/bin/node', '-e', "require('node:net').createServer((s) => { s.on('error', () => {}); s.end('hi'); }).listen(8080)"]));
  assert.equal(serve.code, 0, serve.stderr);
  const serverIp = await podIp(c, server);
  assert.match(serverIp, /^10\.89\./);

  // The host side: a listener on every address, the pod bridge's link-local included.
  const { createServer } = await import('node:net');
  const host = createServer((s) => {
    s.on('error', () => {});
    s.end('host');
  });
  await new Promise<void>((r) => host.listen({ port: 0, host: '::', ipv6Only: false }, r));
  t.after(() => host.close());
  const hostPort = (host.address() as { port: number }).port;

  // The reference's hole: a host listener on [::] reached over the bridge's link-local side.
  const linkLocal = await hostLinkLocal('brigk8spods');
  const v6 = linkLocal.length > 0 ? linkLocal : [{ address: 'fe80::1', ifname: 'none' }];
  const targets = [
    { name: 'self', host: '127.0.0.1', port: 8081 },
    { name: 'kubelet', host: '10.255.0.1', port: 10250 },
    { name: 'node-host-listener', host: '10.255.0.1', port: hostPort },
    { name: 'service-vip', host: '10.96.0.1', port: 443 },
    { name: 'other-pod', host: serverIp, port: 8080 },
    ...v6.map((a, i) => ({ name: `ipv6-link-local-${i}`, host: `${a.address}%eth0`, port: hostPort, family: 6 })),
  ];
  const { logs } = await runToEnd(c, hardenedPod(c, podName('probe'), ['/usr/bin/node', '-e', probeProgram(targets)]));
  const got = Object.fromEntries(logs.trim().split('\n').map((l) => l.split(' ') as [string, string]));
  assert.equal(got.self, 'ok', `the probe works: a listener in its own pod answers (${logs})`);
  for (const { name } of targets.slice(1)) {
    assert.ok(got[name] !== undefined, `${name} probed: ${logs}`);
    assert.notEqual(got[name], 'ok', `${name} must not be reachable from a pod: ${logs}`);
  }
});
