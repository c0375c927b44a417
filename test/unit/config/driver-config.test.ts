/**
 * Where jails run (config/ driverConfigFrom): docker unless BRIG_DRIVER or config.yaml says
 * kubernetes; the kubernetes driver's cluster, namespace and image from the environment over the
 * file, and a clear refusal for what is missing or malformed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { driverConfigFrom } from '../../../src/config/index.js';
import { BrigError } from '../../../src/util/errors.js';

test('driver: docker by default; kubernetes from BRIG_DRIVER with KUBECONFIG, BRIG_K8S_* over config.yaml', () => {
  assert.deepEqual(driverConfigFrom({}), { kind: 'docker' });
  assert.deepEqual(driverConfigFrom({ BRIG_DRIVER: 'docker' }, 'driver: kubernetes\n'), { kind: 'docker' }, 'the environment wins');
  assert.deepEqual(driverConfigFrom({ BRIG_DRIVER: 'kubernetes', KUBECONFIG: '/k/admin.conf:/other', BRIG_K8S_IMAGE: 'brig-child:abc', BRIG_K8S_WORKSPACE_CLASS: 'brig-loop' }), { kind: 'kubernetes', kubeconfig: '/k/admin.conf', namespace: 'brig', image: 'brig-child:abc', workspace: { storageClass: 'brig-loop' } });
  const file = 'driver: kubernetes\nkubernetes:\n  kubeconfig: /etc/brig/kube.conf\n  namespace: jails\n  image: brig-child:def\n  runtimeClassName: gvisor\n  workspaceEmptyDir: true\n';
  assert.deepEqual(driverConfigFrom({ HOME: '/root' }, file), { kind: 'kubernetes', kubeconfig: '/etc/brig/kube.conf', namespace: 'jails', image: 'brig-child:def', runtimeClassName: 'gvisor', workspace: { emptyDir: true } });
  assert.equal((driverConfigFrom({ BRIG_K8S_NAMESPACE: 'other', BRIG_K8S_IMAGE: 'x:1' }, file) as { namespace: string }).namespace, 'other');
  // A class named wins over an allowed emptyDir; the environment over the file.
  assert.deepEqual((driverConfigFrom({ BRIG_K8S_WORKSPACE_CLASS: 'fast-xfs' }, file) as { workspace: unknown }).workspace, { storageClass: 'fast-xfs' });
  assert.deepEqual((driverConfigFrom({ BRIG_DRIVER: 'kubernetes', BRIG_K8S_IMAGE: 'x:1', BRIG_K8S_WORKSPACE_EMPTYDIR: '1' }) as { workspace: unknown }).workspace, { emptyDir: true });
});

test('driver: an unknown driver, a kubernetes driver without an image or a workspace, a bad namespace, class or flag, or an unknown key are refused with what to do', () => {
  const refused = (f: () => unknown, re: RegExp) => assert.throws(f, (e: unknown) => e instanceof BrigError && e.code === 'invalid_input' && re.test(`${e.message} ${e.hint ?? ''}`));
  refused(() => driverConfigFrom({ BRIG_DRIVER: 'podman' }), /BRIG_DRIVER.*docker.*kubernetes/);
  refused(() => driverConfigFrom({ BRIG_DRIVER: 'kubernetes' }), /child image.*BRIG_K8S_IMAGE/);
  refused(() => driverConfigFrom({ BRIG_DRIVER: 'kubernetes', BRIG_K8S_IMAGE: 'x:1', BRIG_K8S_NAMESPACE: 'Not_A_Name' }), /namespace/);
  refused(() => driverConfigFrom({}, 'driver: kubernetes\nkubernetes:\n  image: x:1\n  nodeName: n1\n'), /config.yaml kubernetes/);
  // No workspace named: the choice and its cost are the operator's, never a silent emptyDir.
  refused(() => driverConfigFrom({ BRIG_DRIVER: 'kubernetes', BRIG_K8S_IMAGE: 'x:1' }), /where a run's \/workspace lives.*BRIG_K8S_WORKSPACE_CLASS.*ENOSPC.*evicts/);
  refused(() => driverConfigFrom({ BRIG_DRIVER: 'kubernetes', BRIG_K8S_IMAGE: 'x:1', BRIG_K8S_WORKSPACE_EMPTYDIR: '0' }), /where a run's \/workspace lives/);
  refused(() => driverConfigFrom({ BRIG_DRIVER: 'kubernetes', BRIG_K8S_IMAGE: 'x:1', BRIG_K8S_WORKSPACE_EMPTYDIR: 'yes' }), /BRIG_K8S_WORKSPACE_EMPTYDIR/);
  refused(() => driverConfigFrom({ BRIG_DRIVER: 'kubernetes', BRIG_K8S_IMAGE: 'x:1', BRIG_K8S_WORKSPACE_CLASS: 'Bad Class' }), /StorageClass name/);
});
