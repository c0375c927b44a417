/**
 * The Kubernetes jail's pod (src/jail/k8s/pod-spec.ts), pure: the rendered pod is gated,
 * hardened and labelled; what the API server fills in without changing the jail is not drift,
 * and each change that matters is named.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { podEnd } from '../../../src/jail/k8s/pod-launch.js';
import { CHILD_INIT, VERIFY_GATE, deniesAll, denyPolicy, podName, renderPod, verifyPod } from '../../../src/jail/k8s/pod-spec.js';
import type { JailSpec } from '../../../src/jail/index.js';

const spec: JailSpec = { runId: 'r-0123456789abcdef', leaseId: 'l-1', rootRunId: 'r-0123456789abcdef', argv: ['sh', '-c', 'true'], env: { HOME: '/workspace' }, limits: { memoryMb: 256, cpu: 0.5, pids: 64, tmpfsMb: 16, diskMb: 128 }, artifacts: [] };
const asked = renderPod(spec, { namespace: 'brig', owner: 'default', image: 'brig-child:abc', workspace: { emptyDir: true }, activeDeadlineSeconds: 60 });

/** What an API server writes back: defaults added, keys reordered, quantities respelled. */
function admitted(): Record<string, any> {
  const p = JSON.parse(JSON.stringify(asked)) as Record<string, any>;
  p.metadata.uid = 'u-1';
  p.metadata.resourceVersion = '42';
  Object.assign(p.spec, { dnsPolicy: 'ClusterFirst', schedulerName: 'default-scheduler', serviceAccountName: 'default', priority: 0, preemptionPolicy: 'PreemptLowerPriority', tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }] });
  const c = p.spec.containers[0];
  for (const x of p.spec.containers) Object.assign(x, { terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File' });
  // The server drops an empty env list.
  delete p.spec.containers[1].env;
  c.resources.limits.memory = '256Mi';
  c.resources.limits.cpu = '500m';
  c.securityContext = Object.fromEntries(Object.entries(c.securityContext as object).reverse());
  return p;
}

test('the rendered pod: gated, restricted and stricter, labelled, limits from the lease', () => {
  const s = asked.spec as Record<string, any>;
  assert.deepEqual(s.schedulingGates, [{ name: VERIFY_GATE }]);
  assert.equal(s.restartPolicy, 'Never');
  assert.equal(s.automountServiceAccountToken, false);
  assert.equal(s.enableServiceLinks, false);
  assert.deepEqual(s.securityContext.seccompProfile, { type: 'RuntimeDefault' });
  const c = s.containers[0];
  assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'] });
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.equal(c.imagePullPolicy, 'Never');
  assert.deepEqual(c.resources.limits, { cpu: '500m', memory: '256Mi', 'ephemeral-storage': '144Mi' });
  assert.deepEqual(c.resources.requests, { ...c.resources.limits, cpu: '250m' }, 'memory and disk reserved in full, CPU up to a quarter');
  assert.deepEqual(c.command.slice(0, 2), ['/bin/sh', '-c'], 'PID 1 is the init that forwards SIGTERM and exits with the program');
  assert.ok(c.command[2].endsWith(CHILD_INIT) && !c.command[2].includes('.brig-prepared') && !c.command[2].includes('broker.sock'), 'no inputs, no broker: nothing awaited');
  assert.deepEqual(c.command.slice(3), ['brig-init', 'sh', '-c', 'true'], 'the argv after it, never a shell string');
  // Both containers hardened alike; the relay reads /workspace only; no init container.
  assert.deepEqual(s.containers.map((x: { name: string }) => x.name), ['child', 'relay']);
  assert.equal(s.initContainers, undefined);
  for (const x of s.containers) assert.deepEqual(x.securityContext, c.securityContext, x.name);
  assert.deepEqual(s.containers[1].volumeMounts, [{ name: 'workspace', mountPath: '/workspace', readOnly: true }]);
  assert.ok(!JSON.stringify(s).includes('hostPath'), 'no hostPath');
  assert.equal(asked.metadata.labels['brig.dev/run'], 'r-0123456789abcdef');
  assert.equal(podName('r-ABC_def'), 'brig-r-abc-def');
});

test('renderPod: with inputs and a broker the child\'s PID 1 awaits both before its program (the inputs never travel in the pod object)', () => {
  const p = renderPod(spec, { namespace: 'brig', owner: 'default', image: 'brig-child:abc', workspace: { emptyDir: true }, inputs: true, broker: true });
  const s = p.spec as Record<string, any>;
  const init = s.containers[0].command[2] as string;
  assert.ok(init.indexOf('.brig-prepared') < init.indexOf('broker.sock') && init.indexOf('broker.sock') < init.indexOf(CHILD_INIT), init);
  assert.deepEqual(s.containers[0].volumeMounts.at(-1), { name: 'run-brig', mountPath: '/run/brig', readOnly: true }, 'the relay\'s sockets, read-only to the child');
  assert.deepEqual(s.containers[1].volumeMounts.at(-1), { name: 'run-brig', mountPath: '/run/brig' });
  assert.deepEqual(s.containers[0].env, [{ name: 'HOME', value: '/workspace' }], 'the spec\'s environment only');
});

test('verifyPod: server defaults are not drift; every change that matters is named', () => {
  assert.deepEqual(verifyPod(asked, admitted()), []);
  const cases: [string, (p: Record<string, any>) => void][] = [
    ['spec.containers', (p) => p.spec.containers.push({ name: 'sidecar', image: 'x' })],
    ['spec.initContainers', (p) => (p.spec.initContainers = [{ name: 'init', image: 'x' }])],
    ['containers.child.restartPolicy', (p) => (p.spec.containers[0].restartPolicy = 'Always')],
    ['containers.relay.volumeMounts', (p) => (p.spec.containers[1].volumeMounts[0].readOnly = false)],
    ['containers.child.command', (p) => (p.spec.containers[0].command = ['sh', '-c', 'true'])],
    ['spec.volumes', (p) => p.spec.volumes.push({ name: 'host', hostPath: { path: '/' } })],
    ['containers.child.volumeMounts', (p) => p.spec.containers[0].volumeMounts.push({ name: 'workspace', mountPath: '/x' })],
    ['spec.runtimeClassName', (p) => (p.spec.runtimeClassName = 'runc-plain')],
    ['spec.automountServiceAccountToken', (p) => (p.spec.automountServiceAccountToken = true)],
    ['containers.child.securityContext', (p) => (p.spec.containers[0].securityContext.capabilities = { drop: [] })],
    ['spec.securityContext', (p) => delete p.spec.securityContext.seccompProfile],
    ['containers.child.resources.limits.memory', (p) => (p.spec.containers[0].resources.limits.memory = '1Gi')],
    ['containers.child.image', (p) => (p.spec.containers[0].image = 'evil:1')],
    ['containers.child.env', (p) => p.spec.containers[0].env.push({ name: 'LD_PRELOAD', value: '/x.so' })],
    ['spec.hostNetwork', (p) => (p.spec.hostNetwork = true)],
    ['spec.schedulingGates', (p) => (p.spec.schedulingGates = [])],
    ['volumes.workspace.emptyDir', (p) => (p.spec.volumes[0].emptyDir.sizeLimit = '10Gi')],
    ['spec.nodeName', (p) => (p.spec.nodeName = 'node-1')],
  ];
  for (const [field, change] of cases) {
    const p = admitted();
    change(p);
    assert.ok(verifyPod(asked, p).some((d) => d.field === field), `${field}: ${JSON.stringify(verifyPod(asked, p))}`);
  }
});

test("verifyPod: a workspace claim's class, size, access and source are the jail's — each change named; the server's defaults are not drift", () => {
  const vol = renderPod(spec, { namespace: 'brig', owner: 'default', image: 'brig-child:abc', workspace: { storageClass: 'brig-loop' } });
  const w = (vol.spec.volumes as Record<string, any>[]).find((v) => v.name === 'workspace')!;
  assert.deepEqual(w, { name: 'workspace', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'brig-loop', volumeMode: 'Filesystem', resources: { requests: { storage: '128Mi' } } } } } });
  const got = (change: (t: Record<string, any>) => void) => {
    const p = JSON.parse(JSON.stringify(vol)) as Record<string, any>;
    change(p.spec.volumes.find((v: Record<string, any>) => v.name === 'workspace').ephemeral.volumeClaimTemplate.spec);
    return verifyPod(vol, p).map((x) => x.field);
  };
  assert.deepEqual(got((t) => { delete t.volumeMode; t.resources.requests.storage = '134217728'; }), [], 'defaults and respelled quantities are not drift');
  assert.deepEqual(got((t) => { t.storageClassName = 'standard'; }), ['volumes.workspace.ephemeral']);
  assert.deepEqual(got((t) => { t.resources.requests.storage = '10Gi'; }), ['volumes.workspace.ephemeral']);
  assert.deepEqual(got((t) => { t.accessModes = ['ReadWriteMany']; }), ['volumes.workspace.ephemeral']);
  assert.deepEqual(got((t) => { t.dataSource = { kind: 'PersistentVolumeClaim', name: 'someone-elses' }; }), ['volumes.workspace.ephemeral'], 'a claim cloned from another volume is not an empty workspace');
  assert.deepEqual(got((t) => { t.volumeName = 'pv-prepared'; }), ['volumes.workspace.ephemeral']);
  // The workspace swapped for node disk: another volume kind.
  const p = JSON.parse(JSON.stringify(vol)) as Record<string, any>;
  p.spec.volumes = p.spec.volumes.map((v: Record<string, any>) => (v.name === 'workspace' ? { name: 'workspace', emptyDir: {} } : v));
  assert.deepEqual(verifyPod(vol, p).map((x) => x.field), ['volumes.workspace']);
});

test("verifyPod: the lease's process cap rides in the annotation brig.dev/pids-max; removed or raised is drift", () => {
  assert.deepEqual(asked.metadata.annotations, { 'brig.dev/pids-max': '64' });
  const p = admitted();
  p.metadata.annotations = { ...p.metadata.annotations, 'other.example/x': 'y' };
  assert.deepEqual(verifyPod(asked, p), [], 'another annotation beside it is not drift');
  p.metadata.annotations['brig.dev/pids-max'] = '4096';
  assert.deepEqual(verifyPod(asked, p).map((x) => x.field), ['metadata.annotations.brig.dev/pids-max']);
  delete p.metadata.annotations['brig.dev/pids-max'];
  assert.deepEqual(verifyPod(asked, p).map((x) => x.field), ['metadata.annotations.brig.dev/pids-max']);
});

test('podEnd: the child container\'s exit, OOM, and a pod ended without one', () => {
  assert.equal(podEnd({ status: { phase: 'Running', containerStatuses: [{ name: 'child', state: { running: {} } }] } }), null);
  assert.deepEqual(podEnd({ status: { phase: 'Failed', containerStatuses: [{ name: 'child', state: { terminated: { exitCode: 3, reason: 'Error' } } }] } }), { exitCode: 3, oomKilled: false, phase: 'Failed', reason: 'Error' });
  assert.equal(podEnd({ status: { phase: 'Failed', containerStatuses: [{ name: 'child', state: { terminated: { exitCode: 137, reason: 'OOMKilled' } } }] } })?.oomKilled, true);
  assert.deepEqual(podEnd({ status: { phase: 'Failed', reason: 'DeadlineExceeded' } }), { exitCode: -1, oomKilled: false, phase: 'Failed', reason: 'DeadlineExceeded' });
});

test('denyPolicy denies all ingress and egress to every pod; deniesAll tells a weaker one', () => {
  const p = denyPolicy('brig');
  assert.equal(deniesAll(p), true);
  // As the API server may write it back: empty lists dropped.
  assert.equal(deniesAll({ spec: { podSelector: {}, policyTypes: ['Egress', 'Ingress'] } }), true);
  assert.equal(deniesAll({ spec: { podSelector: {}, policyTypes: ['Ingress'] } }), false, 'egress left open');
  assert.equal(deniesAll({ spec: { podSelector: { matchLabels: { a: 'b' } }, policyTypes: ['Ingress', 'Egress'] } }), false, 'some pods only');
  assert.equal(deniesAll({ spec: { podSelector: {}, policyTypes: ['Ingress', 'Egress'], egress: [{}] } }), false, 'an allow-all egress rule');
});
