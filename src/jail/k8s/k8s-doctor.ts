/**
 * `brig doctor` on the Kubernetes driver: can this cluster give brig the jail it promises?
 * Facts come from the API server (its version, brig's own rights by SelfSubjectAccessReview,
 * PodSecurity's answer to an unhardened pod in a dry run) and from inside two real pods made by
 * the driver itself (create → verify → start): two listeners and a probe that reports what it
 * is (uid, capabilities, no-new-privs, seccomp, a write to /) and tries to reach the node's
 * kubelet, a listener pod, the API server, the cluster's Service VIP (from the environment the
 * kubelet gives every container) and, where the pod has IPv6, the node and the listener over
 * IPv6 link-local. A cluster that fails any check is one where brig should not run children.
 *
 * Whether the CNI enforces NetworkPolicy is shown, not assumed: a policy of the doctor's own
 * allows the probe and one listener to talk, brig's default-deny forbids the other; the probe
 * first waits until the allowed one answers (policies take a few seconds to apply), then tries
 * the forbidden one. Allowed and forbidden both answering: the CNI ignores NetworkPolicy,
 * refused. Neither answering: the network keeps pods apart below any policy (brig's test
 * cluster isolates bridge ports) — nothing got out, and enforcement could not be seen; said so.
 *
 * Guarantees: every probe connection aims at an address of this cluster (the node's, a pod's
 * of brig's own namespace, the kubeconfig's API server, the Service VIP the kubelet names),
 * never elsewhere; the pods and the doctor's policy are deleted whatever happens, and the policy
 * names only the doctor's own pods. Trusts: the API server's answers; the probe's report (it is
 * brig's own program in a fresh pod, read from the kubelet's log).
 */
import type { DoctorCheck } from '../../protocol/index.js';
import { toBrigError } from '../../util/errors.js';
import type { Jail, JailSpec } from '../types.js';
import type { K8sJailDriver } from './k8s-jail-driver.js';
import { DENY_POLICY, foreignPolicies, type K8sWorkspace, LABEL_RUN, labelValue } from './pod-spec.js';

/** The verbs brig's driver uses in its namespace (deploy/kubernetes/rbac.yaml grants them). */
export const NEEDED_RIGHTS: readonly { verb: string; resource: string; subresource?: string; group?: string }[] = [
  { verb: 'create', resource: 'pods' },
  { verb: 'get', resource: 'pods' },
  { verb: 'list', resource: 'pods' },
  { verb: 'watch', resource: 'pods' },
  { verb: 'patch', resource: 'pods' },
  { verb: 'delete', resource: 'pods' },
  { verb: 'get', resource: 'pods', subresource: 'log' },
  { verb: 'create', resource: 'pods', subresource: 'exec' },
  { verb: 'get', resource: 'pods', subresource: 'exec' },
  { verb: 'get', resource: 'persistentvolumeclaims' },
  { verb: 'get', resource: 'networkpolicies', group: 'networking.k8s.io' },
  { verb: 'create', resource: 'networkpolicies', group: 'networking.k8s.io' },
  { verb: 'list', resource: 'networkpolicies', group: 'networking.k8s.io' },
  { verb: 'delete', resource: 'networkpolicies', group: 'networking.k8s.io' },
];

/** Rights brig does not need: holding them is not a failure, but the doctor says so. */
export const UNNEEDED_RIGHTS: readonly { verb: string; resource: string; namespace?: string }[] = [
  { verb: 'get', resource: 'secrets' },
  { verb: 'create', resource: 'pods', namespace: 'default' },
  { verb: 'list', resource: 'nodes', namespace: '' },
];

/**
 * Pure, and part of the probe's program (its source is put into the script): the IPv6
 * link-local next hops of a `/proc/net/ipv6_route` table, each with its interface as the scope
 * (`fe80:0:0:0:0:0:0:1%eth0`) — where a pod has IPv6, the node is one of them.
 */
export function linkLocalHops(table: string): string[] {
  const hops: string[] = [];
  for (const line of table.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || !/^fe80[0-9a-f]{28}$/i.test(f[4] ?? '')) continue;
    const hop = (f[4]!.match(/.{4}/g) ?? []).map((g) => g.replace(/^0{1,3}/, '')).join(':') + '%' + f[9];
    if (!hops.includes(hop)) hops.push(hop);
  }
  return hops;
}

/**
 * The probe pod's program: one line `BRIG-PROBE {json}` (Node built-ins only). Its argument is
 * a plan, `{"first": addr|null, "firstWithinMs": n, "rest": [addr…]}`: `first` is tried until it
 * connects or the time is up, then the rest side by side. It adds targets of its own: the
 * Service VIP the kubelet names in its environment, and each IPv6 link-local next hop of its
 * routes (the node, where the pod has IPv6) at the kubelet's port.
 */
export const K8S_PROBE_SCRIPT = String.raw`
const net = require('net'), fs = require('fs'), os = require('os');
const st = fs.readFileSync('/proc/self/status', 'utf8');
const field = (k) => (st.match(new RegExp('^' + k + ':\\s*(\\S+)', 'm')) || [])[1];
let rootWrite = 'WROTE';
try { fs.writeFileSync('/brig-probe', 'x'); } catch (e) { rootWrite = e.code; }
const out = { uid: process.getuid(), gid: process.getgid(), capEff: field('CapEff'), capBnd: field('CapBnd'), noNewPrivs: field('NoNewPrivs'), seccomp: field('Seccomp'), rootWrite, connects: {}, v6: [], extra: {} };
try { const f = fs.statfsSync('/workspace'); out.workspaceBytes = f.blocks * f.bsize; } catch (e) { out.workspaceError = e.code || String(e); }
for (const f of ['/sys/fs/cgroup/pids/pids.max', '/sys/fs/cgroup/pids.max']) { try { out.pidsMax = fs.readFileSync(f, 'utf8').trim(); break; } catch {} }
for (const [name, addrs] of Object.entries(os.networkInterfaces())) for (const a of addrs || []) if (a.family === 'IPv6' && !a.internal) out.v6.push(a.address + (a.address.startsWith('fe80') ? '%' + name : ''));
const plan = JSON.parse(process.argv[1] || '{}');
const rest = [...(plan.rest || [])];
const vh = process.env.KUBERNETES_SERVICE_HOST, vp = process.env.KUBERNETES_SERVICE_PORT;
if (vh && vp) { const t = (vh.includes(':') ? '[' + vh + ']' : vh) + ':' + vp; out.extra[t] = 'the Service VIP (KUBERNETES_SERVICE_HOST)'; rest.push(t); }
const linkLocalHops = ${linkLocalHops.toString()};
try {
  for (const hop of linkLocalHops(fs.readFileSync('/proc/net/ipv6_route', 'utf8'))) {
    const t = '[' + hop + ']:10250';
    if (!out.extra[t]) { out.extra[t] = "the node over IPv6 link-local (a route's next hop)"; rest.push(t); }
  }
} catch {}
const once = (t, ms) => new Promise((res) => {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(t);
  const s = net.connect({ host: m[1], port: Number(m[2]) });
  let done = false;
  const end = (r) => { if (done) return; done = true; s.destroy(); res(r); };
  s.setTimeout(ms, () => end('TIMEOUT'));
  s.on('connect', () => end('CONNECTED'));
  s.on('error', (e) => end(e.code || 'ERROR'));
});
(async () => {
  if (plan.first) {
    const until = Date.now() + plan.firstWithinMs;
    let r;
    for (;;) {
      r = await once(plan.first, 1000);
      if (r === 'CONNECTED' || Date.now() > until) break;
      await new Promise((z) => setTimeout(z, 250));
    }
    out.connects[plan.first] = r;
  }
  const rs = await Promise.all(rest.map((t) => once(t, 2000)));
  rest.forEach((t, i) => { out.connects[t] = rs[i]; });
  console.log('BRIG-PROBE ' + JSON.stringify(out));
})();
`;

/** A listener pod's program: answers on 8080 (IPv6 and IPv4 where it can), prints `BRIG-LISTENING [its IPv6 link-local addresses]`. */
const LISTENER = String.raw`
const net = require('net'), os = require('os');
const v6 = [];
for (const [name, addrs] of Object.entries(os.networkInterfaces())) for (const a of addrs || []) if (a.family === 'IPv6' && !a.internal && a.address.startsWith('fe80')) v6.push(a.address + '%' + name);
const srv = net.createServer((c) => c.end('brig'));
const ready = () => console.log('BRIG-LISTENING ' + JSON.stringify(v6));
srv.once('error', () => net.createServer((c) => c.end('brig')).listen(8080, '0.0.0.0', ready));
srv.listen(8080, '::', ready);
setTimeout(() => process.exit(0), 90000);
`;
const LIMITS = { memoryMb: 128, cpu: 0.25, pids: 64, tmpfsMb: 8, diskMb: 16 };
/** How long the probe waits for the listener a policy allows before judging what it saw. */
const ALLOWED_WITHIN_MS = 5000;

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
  /** The pod's own IPv6 addresses (link-local with their interface). */
  v6?: string[];
  /** Targets the probe added itself (the Service VIP, IPv6 next hops), with what they stand for. */
  extra?: Record<string, string>;
  /** The size of the file system under /workspace (statfs), or why it could not be read. */
  workspaceBytes?: number;
  workspaceError?: string;
  /** The child container's own pids.max (cgroup v1 or v2), as it reads it. */
  pidsMax?: string;
}

/** Pure: whether the node's runtime applied the lease's process cap (brig.dev/pids-max) to the child container. */
export function judgePids(p: K8sProbe, pids: number): DoctorCheck {
  const name = "pod: the lease's process cap";
  if (p.pidsMax === String(pids)) return { name, ok: true, detail: `pids.max ${p.pidsMax}: the cap asked in brig.dev/pids-max` };
  return { name, ok: true, detail: `pids.max ${p.pidsMax ?? 'unreadable'} for the ${pids} asked: the node's runtime does not apply brig.dev/pids-max`, hint: "Not a failure: a pod's processes are then bounded by the kubelet's podPidsLimit alone, not each lease's — set podPidsLimit, or have the node's runtime apply the annotation as brig's test cluster does (docs/kubernetes.md)." };
}

/** Pure: what the probe saw of /workspace, against the disk the doctor's pods asked for. */
export function judgeWorkspace(p: K8sProbe, ws: K8sWorkspace, diskMb: number): DoctorCheck {
  const name = 'pod: workspace capped';
  const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;
  if (p.workspaceBytes === undefined) return { name, ok: false, detail: `/workspace could not be read: ${p.workspaceError ?? 'no report'}`, hint: 'kubectl describe pod shows what its workspace volume is.' };
  if ('emptyDir' in ws) {
    return { name, ok: true, detail: `an emptyDir (allowed by the operator): ${mib(p.workspaceBytes)} of node disk visible for the ${diskMb} MiB asked`, hint: `Not a failure, but its cost: past ${diskMb} MiB the kubelet evicts the pod and the run's outputs are lost, where a volume of the size asked fails the write with ENOSPC — name a StorageClass (BRIG_K8S_WORKSPACE_CLASS).` };
  }
  // A file system of exactly the size asked shows a little less (its own metadata); more is not a cap.
  const ok = p.workspaceBytes > 0 && p.workspaceBytes <= diskMb * 1048576;
  return ok
    ? { name, ok, detail: `StorageClass ${ws.storageClass}: ${mib(p.workspaceBytes)} for the ${diskMb} MiB asked — a write past it fails ENOSPC` }
    : { name, ok, detail: `StorageClass ${ws.storageClass} gave ${mib(p.workspaceBytes)} for the ${diskMb} MiB asked: a run's disk would not be capped at its lease`, hint: 'Name a StorageClass whose volumes are exactly the size claimed (an LVM or loop-device provisioner, most block-storage CSI drivers; not a shared file system or hostPath).' };
}

/** The pair the NetworkPolicy test compares: a listener the doctor's policy allows, one brig's default-deny forbids. */
export interface PolicyPair {
  allowed: string;
  forbidden: string;
}

/** Pure: the probe's report judged; `targets` names what each address stood for. */
export function judgeK8sProbe(p: K8sProbe, targets: Record<string, string>, pair?: PolicyPair): DoctorCheck[] {
  const c = (name: string, ok: boolean, detail: string, hint?: string): DoctorCheck => (ok || !hint ? { name, ok, detail } : { name, ok, detail, hint });
  const zero = (v: string | undefined) => v !== undefined && /^0+$/.test(v);
  const out = [
    c('pod: non-root', p.uid !== 0 && p.gid !== 0, `uid ${p.uid}, gid ${p.gid}`, 'The pod must run as 65534 (runAsNonRoot): an admission policy changed it.'),
    c('pod: no capabilities', zero(p.capEff) && zero(p.capBnd), `CapEff ${p.capEff ?? '?'}, CapBnd ${p.capBnd ?? '?'}`, 'Every capability must be dropped: something in the admission chain adds them.'),
    c('pod: no new privileges', p.noNewPrivs === '1', `NoNewPrivs ${p.noNewPrivs ?? '?'}`, 'allowPrivilegeEscalation: false must reach the runtime.'),
    c('pod: seccomp filtering', p.seccomp === '2', `Seccomp ${p.seccomp ?? '?'}`, 'The runtime must apply RuntimeDefault (seccomp mode 2).'),
    c('pod: read-only root', p.rootWrite === 'EROFS', `a write to / got ${p.rootWrite}`, 'readOnlyRootFilesystem must reach the runtime.'),
  ];
  for (const [addr, what] of Object.entries({ ...targets, ...(p.extra ?? {}) })) {
    if (pair && addr === pair.allowed) continue;
    const r = p.connects[addr] ?? 'not tried';
    out.push(c(`pod: no route to ${what}`, r !== 'CONNECTED', `${addr}: ${r}`, `A pod reached ${what}: give brig's namespace a default-deny NetworkPolicy and a CNI that enforces it (docs/kubernetes.md).`));
  }
  const v6 = p.v6 ?? [];
  const hops = Object.entries(p.extra ?? {}).filter(([, what]) => /IPv6 link-local/.test(what)).length;
  out.push(v6.length === 0
    ? c('pod: IPv6 link-local', true, 'IPv6 is off in the pod: no link-local way to the node or another pod')
    : { name: 'pod: IPv6 link-local', ok: true, detail: `the pod has ${v6.join(', ')}; ${hops} IPv6 next hop(s) of its routes tried (lines above)`, hint: "Not a failure: a node listener on [::] that no route names (brig cannot learn the node's link-local address) could still be reached; turn IPv6 off on the pod network, or make sure the CNI enforces NetworkPolicy for IPv6 too." });
  if (pair) out.push(judgePolicy(p.connects[pair.allowed] ?? 'not tried', p.connects[pair.forbidden] ?? 'not tried'));
  return out;
}

/** Pure: what the allowed and the forbidden connection say about NetworkPolicy enforcement. */
export function judgePolicy(allowed: string, forbidden: string): DoctorCheck {
  const name = 'NetworkPolicy enforced';
  const seen = `allowed by a policy: ${allowed}; forbidden by ${DENY_POLICY}: ${forbidden}`;
  const a = allowed === 'CONNECTED';
  const f = forbidden === 'CONNECTED';
  if (a && !f) return { name, ok: true, detail: `the cluster enforces it (${seen})` };
  if (a && f) return { name, ok: false, detail: `the cluster's network ignores NetworkPolicy: a pod connected where ${DENY_POLICY} forbids it (${seen})`, hint: 'Install a CNI or policy controller that enforces NetworkPolicy (Calico, Cilium, kube-router, …): without it nothing holds a pod in.' };
  if (!a && !f) return { name, ok: true, detail: `not observable: even a connection a policy allows did not get through — the network keeps pods apart below NetworkPolicy (${seen})` };
  return { name, ok: false, detail: `NetworkPolicy is applied wrongly: the forbidden connection got through and the allowed one did not (${seen})`, hint: "Check the CNI's policy controller: its rules do not match the namespace's policies." };
}

/** The doctor's own policy: the probe and the allowed listener may talk on 8080, nothing else. */
export function allowPairPolicy(namespace: string, name: string, runIds: string[]): Record<string, unknown> {
  const sel = { matchExpressions: [{ key: LABEL_RUN, operator: 'In', values: runIds.map(labelValue) }] };
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace, labels: { 'app.kubernetes.io/managed-by': 'brig', 'brig.dev/doctor': 'true' } },
    spec: {
      podSelector: sel,
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [{ podSelector: sel }], ports: [{ protocol: 'TCP', port: 8080 }] }],
      egress: [{ to: [{ podSelector: sel }], ports: [{ protocol: 'TCP', port: 8080 }] }],
    },
  };
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
  const can = (verb: string, resource: string, subresource?: string, ns: string = namespace, group?: string) => d.api.canI({ verb, resource, ...(subresource ? { subresource } : {}), ...(group ? { group } : {}), namespace: ns }).catch(() => null);
  const missing: string[] = [];
  const rights = await Promise.all(NEEDED_RIGHTS.map((r) => can(r.verb, r.resource, r.subresource, namespace, r.group)));
  NEEDED_RIGHTS.forEach((r, i) => { if (rights[i] !== true) missing.push(`${r.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ''}`); });
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
  // Nothing else in the namespace may allow what the default-deny forbids (policies add up).
  const others = await d.api.listNetworkPolicies().then(foreignPolicies, (e: unknown) => toBrigError(e));
  checks.push(others instanceof Error
    ? { name: 'NetworkPolicy: nothing else allows', ok: false, detail: `the namespace's policies could not be listed: ${others.message}`, hint: `Grant brig networkpolicies list in ${namespace} (deploy/kubernetes/rbac.yaml).` }
    : others.length === 0
      ? { name: 'NetworkPolicy: nothing else allows', ok: true, detail: `${namespace} holds no policy but ${DENY_POLICY} (and the doctor's own)` }
      : { name: 'NetworkPolicy: nothing else allows', ok: false, detail: `other policies in ${namespace}: ${others.join(', ')} — NetworkPolicies add up, so one that allows traffic opens brig's pods`, hint: `Keep ${namespace} for brig alone: remove them (kubectl -n ${namespace} delete networkpolicy …).` });
  // From inside: two listener pods, a policy of the doctor's own allowing the probe to reach the
  // first, then the probe aimed at both, the node, the API server (and what it adds itself).
  const allowedSpec = spec('allow', ['node', '-e', LISTENER]);
  const forbiddenSpec = spec('listen', ['node', '-e', LISTENER]);
  const probeSpec = spec('probe', ['node', '-e', K8S_PROBE_SCRIPT]);
  const pairName = `brig-doctor-allow-${probeSpec.runId.slice('doctor-probe-'.length)}`;
  const jails: Jail[] = [];
  let pairMade = false;
  try {
    await d.api.createNetworkPolicy(allowPairPolicy(namespace, pairName, [allowedSpec.runId, probeSpec.runId]));
    pairMade = true;
    const listeners = await Promise.all([allowedSpec, forbiddenSpec].map(async (ls) => {
      const j = await d.create(ls);
      jails.push(j);
      await j.start();
      return { j, placed: await untilPlaced(d, j.id) };
    }));
    const [allowed, forbidden] = listeners as [(typeof listeners)[number], (typeof listeners)[number]];
    const at = (ip: string, port: number) => `${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
    const targets: Record<string, string> = {};
    if (forbidden.placed.hostIP) targets[at(forbidden.placed.hostIP, 10250)] = "the node's kubelet";
    const pair = forbidden.placed.podIP && allowed.placed.podIP ? { allowed: at(allowed.placed.podIP, 8080), forbidden: at(forbidden.placed.podIP, 8080) } : undefined;
    if (pair) targets[pair.forbidden] = "another pod (brig's own listener)";
    for (const ll of await listenerV6(d, forbidden.j.id)) targets[`[${ll}]:8080`] = 'another pod over IPv6 link-local';
    const api = apiServerTarget(d.api.config.server);
    if (api) targets[api] = 'the API server';
    const plan = { first: pair?.allowed ?? null, firstWithinMs: ALLOWED_WITHIN_MS, rest: Object.keys(targets) };
    const probe = await d.create({ ...probeSpec, argv: [...probeSpec.argv, JSON.stringify(plan)] });
    jails.push(probe);
    await probe.start();
    const end = await probe.wait();
    const line = /BRIG-PROBE (\{.*\})/.exec(probe.tails().stdoutTail)?.[1];
    if (!line) throw new Error(`the probe pod printed no report (exit ${end.exitCode}): ${probe.tails().stdoutTail.slice(-300)}`);
    checks.push({ name: "the child image runs on the cluster's nodes", ok: true, detail: `${await d.ensureImage()} (a probe pod and two listener pods ran)` });
    const report = JSON.parse(line) as K8sProbe;
    checks.push(...judgeK8sProbe(report, targets, pair), judgeWorkspace(report, d.workspace, LIMITS.diskMb), judgePids(report, LIMITS.pids));
  } catch (e) {
    const be = toBrigError(e);
    checks.push({ name: 'a probe pod runs', ok: false, detail: be.message, hint: be.hint ?? 'kubectl describe pod in brig\'s namespace shows why.' });
  } finally {
    await Promise.all(jails.map((j) => j.destroy().catch(() => undefined)));
    if (pairMade) await d.api.deleteNetworkPolicy(pairName).catch(() => undefined);
  }
  return checks;
}

/** A listener's IPv6 link-local addresses, from the line it prints once it listens. */
async function listenerV6(d: K8sJailDriver, name: string): Promise<string[]> {
  const until = Date.now() + 15_000;
  for (;;) {
    const log = await d.api.podLog(name, 'child', 4096).catch(() => '');
    const m = /BRIG-LISTENING (\[.*\])/.exec(log);
    if (m) return (JSON.parse(m[1]!) as unknown[]).filter((a): a is string => typeof a === 'string' && /^fe80:[0-9a-f:]*%[\w.-]+$/i.test(a));
    if (Date.now() > until) throw new Error(`the listener pod ${name} did not say it listens within 15 s: ${log.slice(-200)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
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
