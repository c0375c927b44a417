/**
 * `brig doctor` with the Kubernetes driver on brig's own cluster: the API answers, brig's verbs
 * are granted (and the admin kubeconfig is named broader than needed), PodSecurity refuses an
 * unhardened pod in a dry run, and two real pods show from inside that the jail holds —
 * non-root, capless, no-new-privs, seccomp, read-only root — and that neither the node's
 * kubelet nor another pod can be reached. Nothing is left behind.
 *
 * NetworkPolicy enforcement (kube-router on the test cluster) is shown where it is the only
 * thing holding pods apart: in a namespace whose bridge ports the test opened
 * (`scripts/k8s-up.sh open`), the doctor's allowed pair connects and brig's default-deny holds
 * the other; with the policy controller stopped (`policy off`) the same doctor refuses the
 * cluster, naming the pod it reached and a policy someone else put beside brig's.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { runCli } from '../helpers/cli.js';
import { driverEnv, kubectl, requireCluster } from '../helpers/k8s.js';

test('brig doctor on the kubernetes driver judges the cluster from the API and from inside two real pods', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-k8s-doctor-'));
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  const r = await runCli(['doctor', '--json'], { home, env: driverEnv(c) });
  const out = JSON.parse(r.out) as { ok: boolean; checks: { name: string; ok: boolean; detail: string; hint?: string }[] };
  const byName = new Map(out.checks.map((x) => [x.name, x]));
  assert.deepEqual(out.checks.filter((x) => !x.ok), [], r.out);
  assert.equal(r.code, 0);
  for (const name of ['kubernetes API answers', `RBAC: brig's verbs in ${c.namespace}`, 'PodSecurity restricted', 'NetworkPolicy default-deny', 'NetworkPolicy: nothing else allows', 'NetworkPolicy enforced', 'pod: IPv6 link-local', "the child image runs on the cluster's nodes", 'pod: non-root', 'pod: no capabilities', 'pod: no new privileges', 'pod: seccomp filtering', 'pod: read-only root', "pod: no route to the node's kubelet", "pod: no route to another pod (brig's own listener)"]) {
    assert.ok(byName.has(name), `${name} is checked: ${[...byName.keys()].join(' | ')}`);
  }
  assert.match(byName.get('PodSecurity restricted')!.detail, /PodSecurity|violates/);
  assert.match(byName.get('RBAC: least privilege')!.detail, /broader than brig needs: .*secrets/, 'the admin kubeconfig is named for what it is');
  assert.match(byName.get("pod: no route to another pod (brig's own listener)")!.detail, /TIMEOUT|EHOSTUNREACH|ENETUNREACH|ECONNREFUSED/);
  // The Service VIP the kubelet names in every container's environment: tried, not reached.
  const vip = out.checks.find((x) => x.name.startsWith('pod: no route to the Service VIP'));
  assert.ok(vip, r.out);
  assert.match(vip.detail, /^\S+:\d+: (ENETUNREACH|EHOSTUNREACH|TIMEOUT|ECONNREFUSED)$/);
  if (process.env.BRIG_K8S_LIVE !== '1') {
    // brig's own cluster: isolated bridge ports and no IPv6 in a pod, whatever the policies say.
    assert.match(byName.get('NetworkPolicy enforced')!.detail, /^not observable: .*allowed by a policy: (TIMEOUT|EHOSTUNREACH)/);
    assert.match(byName.get('pod: IPv6 link-local')!.detail, /IPv6 is off in the pod/);
    // The workspace is a brig-loop volume of the size the doctor's pods asked: ENOSPC past it.
    assert.match(byName.get('pod: workspace capped')!.detail, /^StorageClass brig-loop: 1[0-5]\.\d MiB for the 16 MiB asked/);
    // The runc wrapper of brig's cluster applies the annotation: the probe's own cap is the one asked.
    assert.equal(byName.get("pod: the lease's process cap")!.detail, 'pids.max 64: the cap asked in brig.dev/pids-max');
  }
  const left = await kubectl(c, ['get', 'pods,networkpolicies', '-o', 'name']);
  assert.doesNotMatch(left.stdout, /doctor/, "the probe pods and the doctor's policy are gone");
});

const k8sUp = (...args: string[]) => promisify(execFile)('bash', [path.join(import.meta.dirname, '../../scripts/k8s-up.sh'), ...args], { timeout: 120_000 });

// req: kube:policy-enforced
test("[INV-2] NetworkPolicy is enforced on the test cluster where nothing else holds pods apart, and brig doctor refuses the cluster once it is not", async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  if (process.env.BRIG_K8S_LIVE === '1') {
    t.skip("needs brig's own test cluster: it opens a namespace's bridge ports and stops the policy controller");
    return;
  }
  const ns = `brig-open-${Date.now().toString(36)}`;
  const inNs = { ...c, namespace: ns };
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-k8s-doctor-'));
  t.after(async () => {
    await k8sUp('policy', 'on').catch((e: unknown) => console.error('policy on:', e));
    await kubectl(c, ['delete', 'namespace', ns, '--wait=false']);
    fs.rmSync(home, { recursive: true, force: true });
  });
  assert.equal((await kubectl(c, ['create', 'namespace', ns])).code, 0);
  assert.equal((await kubectl(c, ['label', 'namespace', ns, 'pod-security.kubernetes.io/enforce=restricted'])).code, 0);
  await k8sUp('open', ns);
  for (let i = 0; (await kubectl(inNs, ['get', 'serviceaccount', 'default'])).code !== 0; i++) {
    assert.ok(i < 100, `the namespace ${ns} got no default ServiceAccount`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const env = { ...driverEnv(c), BRIG_K8S_NAMESPACE: ns };
  type Out = { ok: boolean; checks: { name: string; ok: boolean; detail: string; hint?: string }[] };
  const doctor = async () => {
    const r = await runCli(['doctor', '--json'], { home, env });
    return { code: r.code, out: JSON.parse(r.out) as Out, raw: r.out };
  };
  const another = "pod: no route to another pod (brig's own listener)";

  // Enforced: the pair the doctor's policy allows connects (so the bridge carries pod-to-pod
  // here), the listener brig's default-deny forbids does not.
  const on = await doctor();
  assert.deepEqual(on.out.checks.filter((x) => !x.ok), [], on.raw);
  const enforced = on.out.checks.find((x) => x.name === 'NetworkPolicy enforced')!;
  assert.match(enforced.detail, /^the cluster enforces it \(allowed by a policy: CONNECTED; forbidden by brig-default-deny: (TIMEOUT|EHOSTUNREACH|ECONNREFUSED)\)$/);
  assert.match(on.out.checks.find((x) => x.name === another)!.detail, /TIMEOUT|EHOSTUNREACH|ECONNREFUSED/);

  // Someone else's policy beside brig's, and no policy controller: refused, each named.
  const foreign = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'someone-elses' }, spec: { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Egress'], egress: [{}] } };
  assert.equal((await kubectl(inNs, ['apply', '-f', '-'], JSON.stringify(foreign))).code, 0);
  await k8sUp('policy', 'off');
  const off = await doctor();
  assert.equal(off.code, 1, off.raw);
  const failing = new Map(off.out.checks.filter((x) => !x.ok).map((x) => [x.name, x]));
  assert.deepEqual([...failing.keys()].sort(), [another, 'NetworkPolicy enforced', 'NetworkPolicy: nothing else allows'].sort(), off.raw);
  assert.match(failing.get('NetworkPolicy enforced')!.detail, /ignores NetworkPolicy.*forbidden by brig-default-deny: CONNECTED/);
  assert.match(failing.get(another)!.detail, /: CONNECTED$/);
  assert.match(failing.get('NetworkPolicy: nothing else allows')!.detail, /someone-elses/);
  for (const x of failing.values()) assert.ok(x.hint, `${x.name} says what to do`);

  await k8sUp('policy', 'on');
  const left = await kubectl(inNs, ['get', 'pods,networkpolicies', '-o', 'name']);
  assert.doesNotMatch(left.stdout, /doctor/, "the doctor's pods and policies are gone");
});

test('brig doctor --driver kubernetes with a kubeconfig for a cluster that does not answer says so and fails', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-k8s-doctor-'));
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  // The same credentials, aimed at a loopback port nothing listens on.
  const bad = path.join(home, 'kubeconfig');
  fs.writeFileSync(bad, fs.readFileSync(c.kubeconfig, 'utf8').replace(/server: https:\/\/[^\s]+/, 'server: https://127.0.0.1:1'));
  // The driver named by the flag alone (no BRIG_DRIVER): without it these would be Docker's checks.
  const { BRIG_DRIVER: _, ...env } = driverEnv(c);
  const r = await runCli(['doctor', '--driver', 'kubernetes', '--json'], { home, env: { ...env, KUBECONFIG: bad } });
  assert.equal(r.code, 1);
  const out = JSON.parse(r.out) as { ok: boolean; checks: { name: string; ok: boolean; detail: string; hint?: string }[] };
  assert.equal(out.ok, false);
  assert.deepEqual(out.checks.map((x) => [x.name, x.ok]), [['kubernetes API answers', false]]);
  assert.ok(out.checks[0]!.hint);
});
