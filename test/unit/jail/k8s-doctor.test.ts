/**
 * The Kubernetes doctor's judgement of its probe pod (jail/k8s/k8s-doctor.ts), pure: each fact
 * from inside the pod becomes a check, and a connection that reached anything fails its line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeK8sProbe, type K8sProbe } from '../../../src/jail/index.js';

const good: K8sProbe = { uid: 65534, gid: 65534, capEff: '0000000000000000', capBnd: '0000000000000000', noNewPrivs: '1', seccomp: '2', rootWrite: 'EROFS', connects: { '10.0.0.1:10250': 'ENETUNREACH', '10.89.0.7:8080': 'TIMEOUT' } };
const targets = { '10.0.0.1:10250': "the node's kubelet", '10.89.0.7:8080': 'another pod' };

test('a hardened, unreachable-everywhere pod passes every line', () => {
  const checks = judgeK8sProbe(good, targets);
  assert.deepEqual(checks.filter((c) => !c.ok), []);
  assert.deepEqual(checks.map((c) => c.name), ['pod: non-root', 'pod: no capabilities', 'pod: no new privileges', 'pod: seccomp filtering', 'pod: read-only root', "pod: no route to the node's kubelet", 'pod: no route to another pod']);
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
