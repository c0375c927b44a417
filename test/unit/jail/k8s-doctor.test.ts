/**
 * The Kubernetes doctor's judgement of its probe pod (jail/k8s/k8s-doctor.ts), pure: each fact
 * from inside the pod becomes a check, and a connection that reached anything fails its line;
 * NetworkPolicy enforcement judged from an allowed and a forbidden connection; the policies of
 * brig's namespace that could allow what its default-deny forbids; the probe's IPv6 next hops.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allowPairPolicy, foreignPolicies, judgeK8sProbe, judgePids, judgePolicy, judgeWorkspace, K8S_PROBE_SCRIPT, linkLocalHops, type K8sProbe } from '../../../src/jail/index.js';

const good: K8sProbe = { uid: 65534, gid: 65534, capEff: '0000000000000000', capBnd: '0000000000000000', noNewPrivs: '1', seccomp: '2', rootWrite: 'EROFS', connects: { '10.0.0.1:10250': 'ENETUNREACH', '10.89.0.7:8080': 'TIMEOUT' } };
const targets = { '10.0.0.1:10250': "the node's kubelet", '10.89.0.7:8080': 'another pod' };

test('a hardened, unreachable-everywhere pod passes every line', () => {
  const checks = judgeK8sProbe(good, targets);
  assert.deepEqual(checks.filter((c) => !c.ok), []);
  assert.deepEqual(checks.map((c) => c.name), ['pod: non-root', 'pod: no capabilities', 'pod: no new privileges', 'pod: seccomp filtering', 'pod: read-only root', "pod: no route to the node's kubelet", 'pod: no route to another pod', 'pod: IPv6 link-local']);
  assert.match(checks.at(-1)!.detail, /IPv6 is off/);
});

test('each weakness fails its own line, with a hint', () => {
  const failing = (p: Partial<K8sProbe>) => judgeK8sProbe({ ...good, ...p }, targets).filter((c) => !c.ok).map((c) => [c.name, Boolean(c.hint)]);
  assert.deepEqual(failing({ uid: 0 }), [['pod: non-root', true]]);
  assert.deepEqual(failing({ capEff: '00000000a80425fb' }), [['pod: no capabilities', true]]);
  assert.deepEqual(failing({ noNewPrivs: '0' }), [['pod: no new privileges', true]]);
  assert.deepEqual(failing({ seccomp: '0' }), [['pod: seccomp filtering', true]]);
  assert.deepEqual(failing({ rootWrite: 'WROTE' }), [['pod: read-only root', true]]);
  assert.deepEqual(failing({ connects: { ...good.connects, '10.89.0.7:8080': 'CONNECTED' } }), [['pod: no route to another pod', true]]);
});

test("the probe's own targets (the Service VIP, IPv6 next hops) are judged like the doctor's, and a pod with IPv6 is said so", () => {
  const p: K8sProbe = { ...good, v6: ['fe80::1%eth0'], extra: { '10.96.0.1:443': 'the Service VIP', '[fe80:0:0:0:0:0:0:2%eth0]:10250': 'the node over IPv6 link-local' }, connects: { ...good.connects, '10.96.0.1:443': 'ENETUNREACH', '[fe80:0:0:0:0:0:0:2%eth0]:10250': 'CONNECTED' } };
  const checks = judgeK8sProbe(p, targets);
  assert.deepEqual(checks.filter((c) => !c.ok).map((c) => c.name), ['pod: no route to the node over IPv6 link-local']);
  assert.ok(checks.some((c) => c.name === 'pod: no route to the Service VIP' && c.ok));
  const v6 = checks.find((c) => c.name === 'pod: IPv6 link-local')!;
  assert.equal(v6.ok, true);
  assert.match(v6.detail, /fe80::1%eth0; 1 IPv6 next hop/);
  assert.ok(v6.hint, 'a pod with IPv6 gets a hint: the node may listen on an address no route names');
});

test('NetworkPolicy enforcement: each pair of outcomes gets its verdict, and the allowed pair is no "route" line', () => {
  assert.deepEqual([judgePolicy('CONNECTED', 'TIMEOUT').ok, judgePolicy('CONNECTED', 'TIMEOUT').detail.startsWith('the cluster enforces')], [true, true]);
  const ignored = judgePolicy('CONNECTED', 'CONNECTED');
  assert.equal(ignored.ok, false);
  assert.match(ignored.detail, /ignores NetworkPolicy/);
  assert.ok(ignored.hint);
  const apart = judgePolicy('TIMEOUT', 'EHOSTUNREACH');
  assert.equal(apart.ok, true);
  assert.match(apart.detail, /not observable/);
  assert.equal(judgePolicy('TIMEOUT', 'CONNECTED').ok, false);
  const pair = { allowed: '10.89.0.8:8080', forbidden: '10.89.0.7:8080' };
  const checks = judgeK8sProbe({ ...good, connects: { ...good.connects, [pair.allowed]: 'CONNECTED' } }, targets, pair);
  assert.equal(checks.filter((c) => c.detail.includes(pair.allowed) && c.name.startsWith('pod: no route')).length, 0, 'the allowed connection is the test, not a way out');
  assert.deepEqual(checks.filter((c) => !c.ok), []);
  assert.equal(checks.at(-1)!.name, 'NetworkPolicy enforced');
});

test("the doctor's pair policy names only its two pods and port 8080; a policy beside brig's default-deny is named, a doctor pair is not", () => {
  const pol = allowPairPolicy('brig', 'brig-doctor-allow-x', ['doctor-allow-1', 'doctor-probe-2']) as { spec: { podSelector: unknown; ingress: { from: { podSelector: unknown }[]; ports: unknown[] }[]; egress: { to: { podSelector: unknown }[] }[] } };
  const sel = { matchExpressions: [{ key: 'brig.dev/run', operator: 'In', values: ['doctor-allow-1', 'doctor-probe-2'] }] };
  assert.deepEqual(pol.spec.podSelector, sel);
  assert.deepEqual(pol.spec.ingress[0]!.from[0]!.podSelector, sel);
  assert.deepEqual(pol.spec.egress[0]!.to[0]!.podSelector, sel);
  assert.deepEqual(pol.spec.ingress[0]!.ports, [{ protocol: 'TCP', port: 8080 }]);
  const deny = { metadata: { name: 'brig-default-deny' }, spec: { podSelector: {} } };
  const other = { metadata: { name: 'allow-egress' }, spec: { podSelector: {}, egress: [{}] } };
  // Named like the doctor's, but selecting a run that is not a doctor's: it could open a child.
  const posing = allowPairPolicy('brig', 'brig-doctor-allow-y', ['doctor-probe-3', 'run-abc']);
  assert.deepEqual(foreignPolicies([deny, pol as Record<string, unknown>, other, posing]), ['allow-egress', 'brig-doctor-allow-y']);
  assert.deepEqual(foreignPolicies([deny, pol as Record<string, unknown>]), []);
});

test("linkLocalHops reads a route table's IPv6 link-local next hops with their interface, and the probe carries the same code", () => {
  const table = [
    'fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0',
    '00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe80000000000000ecee00fffeeeeeee 00000400 00000001 00000000 00000003     eth0',
    '00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe80000000000000ecee00fffeeeeeee 00000400 00000001 00000000 00000003     eth0',
    '20010db8000000000000000000000000 40 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     net1',
    '',
  ].join('\n');
  assert.deepEqual(linkLocalHops(table), ['fe80:0:0:0:ecee:ff:feee:eeee%eth0', 'fe80:0:0:0:0:0:0:1%net1']);
  assert.deepEqual(linkLocalHops(''), []);
  assert.ok(K8S_PROBE_SCRIPT.includes(linkLocalHops.toString()), 'the pod runs the function this test ran');
});

test('the workspace: a class volume within the size asked passes, a larger one fails, an allowed emptyDir passes with its cost, an unreadable one fails', () => {
  const cls = { storageClass: 'brig-loop' };
  const at = (workspaceBytes?: number, workspaceError?: string) => ({ ...good, ...(workspaceBytes !== undefined ? { workspaceBytes } : {}), ...(workspaceError ? { workspaceError } : {}) });
  const fits = judgeWorkspace(at(15_459_328), cls, 16);
  assert.deepEqual([fits.ok, fits.hint], [true, undefined]);
  assert.match(fits.detail, /brig-loop: 14\.7 MiB for the 16 MiB asked .*ENOSPC/);
  const big = judgeWorkspace(at(50 * 1024 ** 3), cls, 16);
  assert.equal(big.ok, false);
  assert.match(big.detail, /would not be capped/);
  assert.ok(big.hint);
  const node = judgeWorkspace(at(50 * 1024 ** 3), { emptyDir: true }, 16);
  assert.equal(node.ok, true);
  assert.match(node.hint ?? '', /evicts the pod and the run's outputs are lost/);
  assert.equal(judgeWorkspace(at(undefined, 'ENOENT'), cls, 16).ok, false);
});

test("the lease's process cap: the child's pids.max as asked passes quietly; otherwise the line says podPidsLimit alone bounds it", () => {
  assert.deepEqual(judgePids({ ...good, pidsMax: '64' }, 64), { name: "pod: the lease's process cap", ok: true, detail: 'pids.max 64: the cap asked in brig.dev/pids-max' });
  const node = judgePids({ ...good, pidsMax: '512' }, 64);
  assert.equal(node.ok, true);
  assert.match(node.detail, /pids.max 512 for the 64 asked/);
  assert.match(node.hint ?? '', /podPidsLimit alone/);
  assert.match(judgePids(good, 64).detail, /unreadable/);
});
