/**
 * `brig doctor` on the Kubernetes driver: can this cluster give brig the jail it promises?
 * Facts come from the API server (its version, brig's own rights by SelfSubjectAccessReview,
 * PodSecurity's answer to an unhardened pod in a dry run) and from inside two real pods made by
 * the driver itself (create → verify → start): a listener, and a probe that reports what it is
 * (uid, capabilities, no-new-privs, seccomp, a write to /) and tries to reach the node's kubelet,
 * the listener pod and the API server. A cluster that fails any check is one where brig should
 * not run children.
 *
 * Guarantees: every probe connection aims at an address of this cluster (the node's, a pod's
 * of brig's own namespace, the kubeconfig's API server), never elsewhere; both pods are deleted
 * whatever happens. Trusts: the API server's answers; the probe's report (it is brig's own
 * program in a fresh pod, read from the kubelet's log).
 */
import type { DoctorCheck } from '../../protocol/index.js';
import { toBrigError } from '../../util/errors.js';
import type { Jail, JailSpec } from '../types.js';
import type { K8sJailDriver } from './k8s-jail-driver.js';
import { DENY_POLICY } from './pod-spec.js';

/** The verbs brig's driver uses in its namespace (deploy/kubernetes/rbac.yaml grants them). */
export const NEEDED_RIGHTS: readonly { verb: string; resource: string; subresource?: string }[] = [
  { verb: 'create', resource: 'pods' },
  { verb: 'get', resource: 'pods' },
  { verb: 'list', resource: 'pods' },
  { verb: 'patch', resource: 'pods' },
  { verb: 'delete', resource: 'pods' },
  { verb: 'get', resource: 'pods', subresource: 'log' },
  { verb: 'create', resource: 'pods', subresource: 'exec' },
  { verb: 'get', resource: 'pods', subresource: 'exec' },
];

/** Rights brig does not need: holding them is not a failure, but the doctor says so. */
export const UNNEEDED_RIGHTS: readonly { verb: string; resource: string; namespace?: string }[] = [
  { verb: 'get', resource: 'secrets' },
  { verb: 'create', resource: 'pods', namespace: 'default' },
  { verb: 'list', resource: 'nodes', namespace: '' },
];

/** The probe pod's program: one line `BRIG-PROBE {json}` (Node built-ins only). */
export const K8S_PROBE_SCRIPT = String.raw`
const net = require('net'), fs = require('fs');
const st = fs.readFileSync('/proc/self/status', 'utf8');
const field = (k) => (st.match(new RegExp('^' + k + ':\\s*(\\S+)', 'm')) || [])[1];
let rootWrite = 'WROTE';
try { fs.writeFileSync('/brig-probe', 'x'); } catch (e) { rootWrite = e.code; }
const out = { uid: process.getuid(), gid: process.getgid(), capEff: field('CapEff'), capBnd: field('CapBnd'), noNewPrivs: field('NoNewPrivs'), seccomp: field('Seccomp'), rootWrite, connects: {} };
const targets = process.argv.slice(1);
let left = targets.length;
const done = () => console.log('BRIG-PROBE ' + JSON.stringify(out));
if (left === 0) done();
for (const t of targets) {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(t);
  const s = net.connect({ host: m[1], port: Number(m[2]) });
  const end = (r) => { if (out.connects[t]) return; out.connects[t] = r; s.destroy(); if (--left === 0) done(); };
  s.setTimeout(2000, () => end('TIMEOUT'));
  s.on('connect', () => end('CONNECTED'));
  s.on('error', (e) => end(e.code || 'ERROR'));
}
`;

const LISTENER = "require('net').createServer((c) => c.end('brig')).listen(8080, '0.0.0.0', () => console.log('listening')); setTimeout(() => process.exit(0), 60000);";
const LIMITS = { memoryMb: 128, cpu: 0.25, pids: 64, tmpfsMb: 8, diskMb: 16 };

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

export interface K8sProbe {
  uid: number;
  gid: number;
  capEff?: string;
  capBnd?: string;
  noNewPrivs?: string;
  seccomp?: string;
  rootWrite: string;
  connects: Record<string, string>;
}

/** Pure: the probe's report judged; `targets` names what each address stood for. */
export function judgeK8sProbe(p: K8sProbe, targets: Record<string, string>): DoctorCheck[] {
  const c = (name: string, ok: boolean, detail: string, hint?: string): DoctorCheck => (ok || !hint ? { name, ok, detail } : { name, ok, detail, hint });
  const zero = (v: string | undefined) => v !== undefined && /^0+$/.test(v);
  const out = [
    c('pod: non-root', p.uid !== 0 && p.gid !== 0, `uid ${p.uid}, gid ${p.gid}`, 'The pod must run as 65534 (runAsNonRoot): an admission policy changed it.'),
    c('pod: no capabilities', zero(p.capEff) && zero(p.capBnd), `CapEff ${p.capEff ?? '?'}, CapBnd ${p.capBnd ?? '?'}`, 'Every capability must be dropped: something in the admission chain adds them.'),
    c('pod: no new privileges', p.noNewPrivs === '1', `NoNewPrivs ${p.noNewPrivs ?? '?'}`, 'allowPrivilegeEscalation: false must reach the runtime.'),
    c('pod: seccomp filtering', p.seccomp === '2', `Seccomp ${p.seccomp ?? '?'}`, 'The runtime must apply RuntimeDefault (seccomp mode 2).'),
    c('pod: read-only root', p.rootWrite === 'EROFS', `a write to / got ${p.rootWrite}`, 'readOnlyRootFilesystem must reach the runtime.'),
  ];
  for (const [addr, what] of Object.entries(targets)) {
    const r = p.connects[addr] ?? 'not tried';
    out.push(c(`pod: no route to ${what}`, r !== 'CONNECTED', `${addr}: ${r}`, `A pod reached ${what}: give brig's namespace a default-deny NetworkPolicy and a CNI that enforces it (docs/kubernetes.md).`));
  }
  return out;
}

/** The kubeconfig's API server as host:port, when it is not on loopback (a pod's own loopback would prove nothing). */
function apiServerTarget(server: string): string | null {
  try {
    const u = new URL(server);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    if (host === 'localhost' || host.startsWith('127.') || host === '::1') return null;
    return `${host.includes(':') ? `[${host}]` : host}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
  } catch {
    return null;
  }
}

function spec(kind: string, argv: string[]): JailSpec {
  const id = `doctor-${kind}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  return { runId: id, leaseId: 'doctor', rootRunId: id, argv, env: { PATH: '/usr/bin:/bin', HOME: '/workspace' }, limits: LIMITS, artifacts: [] };
}

/** The checks for a cluster, gathered and judged. */
export async function kubernetesDoctor(d: K8sJailDriver, namespace: string): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  try {
    const v = await d.api.version();
    checks.push({ name: 'kubernetes API answers', ok: true, detail: `${v.gitVersion} at ${d.api.config.server}` });
  } catch (e) {
    return [{ name: 'kubernetes API answers', ok: false, detail: toBrigError(e).message, hint: 'Point KUBECONFIG (or config.yaml kubernetes.kubeconfig) at the cluster, and make sure it answers.' }];
  }
  // brig's own rights, as the API server decides them for this kubeconfig's identity.
  const can = (verb: string, resource: string, subresource?: string, ns: string = namespace) => d.api.canI({ verb, resource, ...(subresource ? { subresource } : {}), namespace: ns }).catch(() => null);
  const missing: string[] = [];
  for (const r of NEEDED_RIGHTS) if ((await can(r.verb, r.resource, r.subresource)) !== true) missing.push(`${r.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ''}`);
  checks.push(missing.length === 0
    ? { name: `RBAC: brig's verbs in ${namespace}`, ok: true, detail: NEEDED_RIGHTS.map((r) => `${r.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ''}`).join(', ') }
    : { name: `RBAC: brig's verbs in ${namespace}`, ok: false, detail: `missing: ${missing.join(', ')}`, hint: `kubectl apply -n ${namespace} -f deploy/kubernetes/rbac.yaml, and a kubeconfig for its brig-driver account.` });
  const broader: string[] = [];
  for (const r of UNNEEDED_RIGHTS) if ((await can(r.verb, r.resource, undefined, r.namespace ?? namespace)) === true) broader.push(`${r.verb} ${r.resource}${r.namespace === '' ? ' (cluster-wide)' : r.namespace ? ` in ${r.namespace}` : ''}`);
  checks.push({ name: 'RBAC: least privilege', ok: true, detail: broader.length === 0 ? 'nothing beyond what brig needs was granted (of what was asked)' : `broader than brig needs: ${broader.join(', ')}`, ...(broader.length ? { hint: 'Not a failure: run brig with the brig-driver account of deploy/kubernetes/rbac.yaml rather than an admin kubeconfig.' } : {}) });
  // PodSecurity: an unhardened pod (no security context at all: root allowed, capabilities kept,
  // no seccomp) must be refused in brig's namespace — a dry run, nothing is stored.
  const plain = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'brig-doctor-plain', namespace }, spec: { containers: [{ name: 'c', image: 'brig-doctor:none' }] } };
  const psa = await d.api.createPod(plain, { dryRun: true }).then(() => null, (e: unknown) => toBrigError(e).message);
  checks.push(psa !== null && /PodSecurity|violates/i.test(psa)
    ? { name: 'PodSecurity restricted', ok: true, detail: `an unhardened pod is refused: ${psa.slice(0, 200)}` }
    : { name: 'PodSecurity restricted', ok: false, detail: psa ? `an unhardened pod was refused, but not by PodSecurity: ${psa.slice(0, 200)}` : 'an unhardened pod would be admitted', hint: `kubectl label namespace ${namespace} pod-security.kubernetes.io/enforce=restricted` });
  // brig's default-deny policy: made (or found) as the driver does before its first pod; enforcement is the probe's to show.
  const deny = await d.ensureDenyPolicy().then(() => null, (e: unknown) => toBrigError(e));
  checks.push(deny
    ? { name: 'NetworkPolicy default-deny', ok: false, detail: deny.message, ...(deny.hint ? { hint: deny.hint } : {}) }
    : { name: 'NetworkPolicy default-deny', ok: true, detail: `${DENY_POLICY} in ${namespace}: every pod, no ingress, no egress (whether the CNI enforces it: the probe's lines below)` });
  // From inside: a listener pod, then the probe aimed at it, the node and the API server.
  let listener: Jail | undefined;
  let probe: Jail | undefined;
  try {
    listener = await d.create(spec('listen', ['node', '-e', LISTENER]));
    await listener.start();
    const placed = await untilPlaced(d, listener.id);
    const targets: Record<string, string> = {};
    if (placed.hostIP) targets[`${placed.hostIP.includes(':') ? `[${placed.hostIP}]` : placed.hostIP}:10250`] = "the node's kubelet";
    if (placed.podIP) targets[`${placed.podIP.includes(':') ? `[${placed.podIP}]` : placed.podIP}:8080`] = "another pod (brig's own listener)";
    const api = apiServerTarget(d.api.config.server);
    if (api) targets[api] = 'the API server';
    probe = await d.create(spec('probe', ['node', '-e', K8S_PROBE_SCRIPT, ...Object.keys(targets)]));
    await probe.start();
    const end = await probe.wait();
    const line = /BRIG-PROBE (\{.*\})/.exec(probe.tails().stdoutTail)?.[1];
    if (!line) throw new Error(`the probe pod printed no report (exit ${end.exitCode}): ${probe.tails().stdoutTail.slice(-300)}`);
    checks.push({ name: "the child image runs on the cluster's nodes", ok: true, detail: `${await d.ensureImage()} (a probe pod and a listener pod ran)` });
    checks.push(...judgeK8sProbe(JSON.parse(line) as K8sProbe, targets));
  } catch (e) {
    const be = toBrigError(e);
    checks.push({ name: 'a probe pod runs', ok: false, detail: be.message, hint: be.hint ?? 'kubectl describe pod in brig\'s namespace shows why.' });
  } finally {
    await Promise.all([listener?.destroy(), probe?.destroy()].map((p) => p?.catch(() => undefined)));
  }
  return checks;
}

/** The listener pod once it runs: its node's and its own address. */
async function untilPlaced(d: K8sJailDriver, name: string): Promise<{ hostIP?: string; podIP?: string }> {
  const until = Date.now() + 60_000;
  for (;;) {
    const pod = await d.api.getPod(name);
    const st = obj(pod?.status);
    const running = ((st.containerStatuses as Obj[] | undefined) ?? []).some((c) => c.name === 'child' && obj(c.state).running !== undefined);
    if (running && typeof st.podIP === 'string') return { ...(typeof st.hostIP === 'string' ? { hostIP: st.hostIP } : {}), podIP: st.podIP };
    if (Date.now() > until) throw new Error(`the listener pod ${name} did not run within 60 s (phase ${String(st.phase ?? '?')})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
