/**
 * `brig doctor` with the Kubernetes driver on brig's own cluster: the API answers, brig's verbs
 * are granted (and the admin kubeconfig is named broader than needed), PodSecurity refuses an
 * unhardened pod in a dry run, and two real pods show from inside that the jail holds —
 * non-root, capless, no-new-privs, seccomp, read-only root — and that neither the node's
 * kubelet nor another pod can be reached. Nothing is left behind.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
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
  for (const name of ['kubernetes API answers', `RBAC: brig's verbs in ${c.namespace}`, 'PodSecurity restricted', 'NetworkPolicy default-deny', "the child image runs on the cluster's nodes", 'pod: non-root', 'pod: no capabilities', 'pod: no new privileges', 'pod: seccomp filtering', 'pod: read-only root', "pod: no route to the node's kubelet", "pod: no route to another pod (brig's own listener)"]) {
    assert.ok(byName.has(name), `${name} is checked: ${[...byName.keys()].join(' | ')}`);
  }
  assert.match(byName.get('PodSecurity restricted')!.detail, /PodSecurity|violates/);
  assert.match(byName.get('RBAC: least privilege')!.detail, /broader than brig needs: .*secrets/, 'the admin kubeconfig is named for what it is');
  assert.match(byName.get("pod: no route to another pod (brig's own listener)")!.detail, /TIMEOUT|EHOSTUNREACH|ENETUNREACH|ECONNREFUSED/);
  const left = await kubectl(c, ['get', 'pods', '-o', 'name']);
  assert.doesNotMatch(left.stdout, /doctor-/, 'the probe pods are gone');
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
