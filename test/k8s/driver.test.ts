/**
 * The Kubernetes jail driver behind brig's jail seam (issue 33 items 2, 5, 7) on brig's own
 * cluster: a run's pod is created gated and verified, started by lifting the gate, ends with the
 * kubelet's account of the child's container, and its outputs come out through the relay's `tar`
 * into brig's collector with the same caps and checks as on Docker. Then the whole path through
 * the CLI with `BRIG_DRIVER=kubernetes`: the same envelope and refs, no pod left behind.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { K8sJailDriver, type JailSpec } from '../../src/jail/index.js';
import { DENY_POLICY, LABEL_OWNER, deniesAll, denyPolicy, podName } from '../../src/jail/k8s/pod-spec.js';
import { loadConfig } from '../../src/config/index.js';
import { compose } from '../../src/daemon/index.js';
import { runCli } from '../helpers/cli.js';
import { startModelServer, toolCallTurn, type ModelServer } from '../helpers/model-server.js';
import { driverEnv, kubectl, requireCluster, untilInWorkspace, type Cluster } from '../helpers/k8s.js';

const LIMITS = { memoryMb: 128, cpu: 0.5, pids: 64, tmpfsMb: 16, diskMb: 64 };
const CAPS = { perFileBytes: 1024 * 1024, perRunBytes: 4 * 1024 * 1024, maxEntries: 1000 };

function spec(argv: string[], extra: Partial<JailSpec> = {}): JailSpec {
  const id = `r-${randomBytes(8).toString('hex')}`;
  return { runId: id, leaseId: `l-${randomBytes(4).toString('hex')}`, rootRunId: id, argv, env: { HOME: '/workspace', PATH: '/bin:/usr/bin' }, limits: LIMITS, artifacts: [], ...extra };
}

function driverFor(c: Cluster, t: { after(fn: () => Promise<void>): void }): K8sJailDriver {
  const d = new K8sJailDriver({ kubeconfig: c.kubeconfig, namespace: c.namespace, image: c.childImage, workspace: c.workspace, owner: `k8s-drv-${randomBytes(3).toString('hex')}`, pollMs: 100 });
  t.after(async () => {
    await d.sweep(() => false);
    await d.close();
  });
  return d;
}

function tmpDir(t: { after(fn: () => void): void }): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-k8s-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

// req: kube:pod-verified
test('[INV-2] a run on the kubernetes driver: gated until start, its inputs in /workspace by exec (never in the pod object), its exit code, its log as the tail, out/ collected through the relay', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const d = driverFor(c, t);
  const secret = `token-${randomBytes(12).toString('hex')}`;
  const big = randomBytes(2 * 1024 * 1024);
  const s = spec(['sh', '-c', 'cat in/task.txt; mkdir -p out/sub && cp in/task.txt out/sub/copy.txt && printf abc > out/a.txt && md5sum < in/big.bin > out/big.md5 && echo oops >&2; exit 3'], {
    inputs: [{ path: 'in/task.txt', data: 'the task\n' }, { path: '.brig/token', data: secret, mode: 0o400 }, { path: 'in/big.bin', data: big }],
  });
  const jail = await d.create(s);
  try {
    assert.equal(jail.verified?.readOnlyRoot, true);
    assert.deepEqual(jail.verified?.capDrop, ['ALL']);
    assert.equal(jail.verified?.user, '65534:65534');
    assert.equal(jail.verified?.limits.memoryMb, 128);
    // Created, verified, not started: the gate holds it unscheduled.
    const gated = await d.api.getPod(jail.id);
    assert.ok(((gated?.spec as { schedulingGates?: unknown[] }).schedulingGates ?? []).length > 0, 'still gated before start()');
    await jail.start();
    // The inputs went in by exec: the pod object (what etcd stores) holds none of them.
    assert.ok(!JSON.stringify(await d.api.getPod(jail.id)).includes(secret), 'the token is not in the pod object');
    const end = await jail.wait();
    assert.deepEqual(end, { exitCode: 3, oomKilled: false });
    assert.match(jail.tails().stdoutTail, /the task\n/);
    assert.match(jail.tails().stdoutTail, /oops/);
    const dest = path.join(tmpDir(t), 'out');
    const report = await jail.collect(dest, CAPS);
    assert.deepEqual(report.files.map((f) => [f.path, f.bytes]).sort(), [['a.txt', 3], ['big.md5', 36], ['sub/copy.txt', 9]]);
    assert.equal(fs.readFileSync(path.join(dest, 'big.md5'), 'utf8').split(' ')[0], createHash('md5').update(big).digest('hex'), 'a 2 MiB input arrived whole');
    assert.equal(fs.readFileSync(path.join(dest, 'sub/copy.txt'), 'utf8'), 'the task\n');
  } finally {
    await jail.destroy();
  }
  assert.equal(await d.api.getPod(jail.id).then((p) => (p ? String((p.metadata as { deletionTimestamp?: string }).deletionTimestamp ?? 'live') : 'gone')).then((x) => x !== 'live'), true, 'destroy deleted the pod');
});

// req: results:no-symlink
test('[INV-4] a hostile out/ on the kubernetes driver: a symlink is skipped, never followed; a file over the per-file cap is passed over as on Docker (named too_large), the rest kept; a sparse GiB never read', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const d = driverFor(c, t);
  const jail = await d.create(spec(['sh', '-c', 'ln -s /etc/passwd out/passwd; printf ok > out/ok.txt; ln -s ../.. out/up']));
  try {
    await jail.start();
    assert.equal((await jail.wait()).exitCode, 0);
    const dest = path.join(tmpDir(t), 'out');
    const report = await jail.collect(dest, CAPS);
    assert.deepEqual(report.files.map((f) => f.path), ['ok.txt']);
    assert.deepEqual(report.skipped.map((x) => [x.path, x.reason]).sort(), [['passwd', 'symlink'], ['up', 'symlink']]);
    assert.ok(!fs.existsSync(path.join(dest, 'passwd')), 'no link made on the host');
  } finally {
    await jail.destroy();
  }
  const big = await d.create(spec(['sh', '-c', 'head -c 3000000 /dev/zero > out/big.bin; truncate -s 1G out/sparse.img; printf ok > out/z.txt']));
  try {
    await big.start();
    assert.equal((await big.wait()).exitCode, 0);
    const report = await big.collect(path.join(tmpDir(t), 'big'), CAPS);
    assert.deepEqual(report.files.map((f) => f.path), ['z.txt'], 'the rest is kept');
    assert.deepEqual(report.tooLarge?.map((x) => [x.path, x.bytes]).sort(), [['big.bin', 3000000], ['sparse.img', 1024 ** 3]], 'named with their sizes');
  } finally {
    await big.destroy();
  }
});

test("stop on the kubernetes driver: SIGTERM reaches the program through the pod's PID 1; one that ignores it is killed after the grace (137), its whole process tree with it", async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const d = driverFor(c, t);
  const polite = await d.create(spec(['sh', '-c', 'trap "printf bye > out/bye.txt; exit 7" TERM; printf up > out/up.txt; while :; do sleep 1; done']));
  const rude = await d.create(spec(['sh', '-c', 'trap "" TERM; (trap "" TERM; sleep 600) & printf up > out/up.txt; while :; do sleep 1; done']));
  try {
    await Promise.all([polite.start(), rude.start()]);
    await Promise.all([running(d, polite.id), running(d, rude.id)]);
    await Promise.all([polite.stop(10_000), rude.stop(1_500)]);
    assert.equal((await polite.wait()).exitCode, 7, 'the program saw SIGTERM and chose its exit');
    assert.equal((await rude.wait()).exitCode, 137, 'killed past the grace');
    const dest = path.join(tmpDir(t), 'polite');
    const report = await polite.collect(dest, CAPS);
    assert.deepEqual(report.files.map((f) => f.path).sort(), ['bye.txt', 'up.txt'], 'outputs kept after a stop');
  } finally {
    await Promise.all([polite.destroy(), rude.destroy()]);
  }
});

test('a pod the scheduler cannot place fails its run past the bound, naming why; a kill before it ran deletes it at once', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const d = new K8sJailDriver({ kubeconfig: c.kubeconfig, namespace: c.namespace, image: c.childImage, workspace: c.workspace, owner: `k8s-drv-${randomBytes(3).toString('hex')}`, pollMs: 100, unschedulableMs: 1500 });
  t.after(async () => {
    await d.sweep(() => false);
    await d.close();
  });
  const huge = { ...LIMITS, memoryMb: 1024 * 1024 };
  const jail = await d.create(spec(['true'], { limits: huge }));
  await jail.start();
  await assert.rejects(jail.wait(), (e: Error & { code?: string }) => e.code === 'jail_failed' && /could not be scheduled.*Insufficient memory/.test(e.message));
  const dest = path.join(tmpDir(t), 'out');
  assert.deepEqual((await jail.collect(dest, CAPS)).files, [], 'nothing ran: an empty collection');
  const other = await d.create(spec(['true'], { limits: huge }));
  await other.start();
  await other.kill();
  assert.equal(await d.api.getPod(other.id).then((p) => p === null || Boolean((p.metadata as { deletionTimestamp?: string }).deletionTimestamp)), true, 'deleted: it held nothing');
  await jail.destroy();
});

test("a restarted supervisor's driver finds its pods by label, reattaches a running child and reads its end; another owner's pods are neither listed nor swept", async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const owner = `k8s-drv-${randomBytes(3).toString('hex')}`;
  const first = new K8sJailDriver({ kubeconfig: c.kubeconfig, namespace: c.namespace, image: c.childImage, workspace: c.workspace, owner, pollMs: 100 });
  const s = spec(['sh', '-c', 'sleep 3; printf done > out/late.txt; exit 4']);
  const jail = await first.create(s);
  await jail.start();
  await first.close(); // the supervisor is gone; its child runs on
  const again = driverFor(c, t);
  const stranger = await again.create(spec(['true']));
  const second = new K8sJailDriver({ kubeconfig: c.kubeconfig, namespace: c.namespace, image: c.childImage, workspace: c.workspace, owner, pollMs: 100 });
  t.after(async () => {
    await second.sweep(() => false);
    await second.close();
  });
  assert.deepEqual((await second.listLabelled()).map((r) => [r.runId, r.rootRunId]), [[s.runId, s.runId]], 'its own pod only');
  assert.equal(await second.attach(`r-${randomBytes(8).toString('hex')}`), null, 'no pod: null');
  const back = await second.attach(s.runId);
  assert.ok(back, 'reattached');
  assert.equal((await back.wait()).exitCode, 4);
  const report = await back.collect(path.join(tmpDir(t), 'out'), CAPS);
  assert.deepEqual(report.files.map((f) => f.path), ['late.txt']);
  assert.deepEqual(await second.sweep(() => false), { containers: 1, volumes: 0 });
  assert.ok(await again.api.getPod(stranger.id), "another owner's pod is untouched");
});

test("brig's default-deny NetworkPolicy is made before the first pod; one by that name that denies less is refused, not changed", async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const d = driverFor(c, t);
  const jail = await d.create(spec(['true']));
  await jail.destroy();
  const policy = await d.api.getNetworkPolicy(DENY_POLICY);
  assert.ok(policy && deniesAll(policy), JSON.stringify(policy?.spec));
  // Someone replaces it with one that lets egress out: a fresh driver refuses to make pods beside it.
  await kubectl(c, ['delete', 'networkpolicy', DENY_POLICY]);
  t.after(async () => {
    await kubectl(c, ['delete', 'networkpolicy', DENY_POLICY, '--ignore-not-found']);
    await d.ensureDenyPolicy(); // the next driver's runs find the real one again
  });
  const weak = { ...denyPolicy(c.namespace), spec: { podSelector: {}, policyTypes: ['Ingress'] } };
  const made = await kubectl(c, ['apply', '-f', '-'], JSON.stringify(weak));
  assert.equal(made.code, 0, made.stderr);
  const fresh = driverFor(c, t);
  await assert.rejects(fresh.create(spec(['true'])), (e: Error & { code?: string }) => e.code === 'jail_unverified' && /does not deny all ingress and egress/.test(e.message));
  assert.deepEqual(((await fresh.api.getNetworkPolicy(DENY_POLICY))?.spec as { policyTypes: string[] }).policyTypes, ['Ingress'], 'left as it was');
  await kubectl(c, ['delete', 'networkpolicy', DENY_POLICY]);
  const again = driverFor(c, t);
  await again.ensureDenyPolicy();
  assert.ok(deniesAll(await again.api.getNetworkPolicy(DENY_POLICY)), 'made again when it is gone');
});

test("another NetworkPolicy beside brig's default-deny (policies add up) stops the next pod, named; once it is gone a run goes again", async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  // Allows egress to everywhere for pods labelled app=web: none of brig's, but brig cannot know who will carry the label.
  const other = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'allow-web-egress' }, spec: { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Egress'], egress: [{}] } };
  assert.equal((await kubectl(c, ['apply', '-f', '-'], JSON.stringify(other))).code, 0);
  t.after(() => kubectl(c, ['delete', 'networkpolicy', 'allow-web-egress', '--ignore-not-found']));
  const d = driverFor(c, t);
  const refused = spec(['true']);
  await assert.rejects(d.create(refused), (e: Error & { code?: string; hint?: string }) => e.code === 'jail_unverified' && /other NetworkPolicies in .*: allow-web-egress/.test(e.message) && /delete networkpolicy allow-web-egress/.test(e.hint ?? ''));
  const pods = await kubectl(c, ['get', 'pods', '-o', 'name']);
  assert.doesNotMatch(pods.stdout, new RegExp(podName(refused.runId)), 'no pod was made');
  await kubectl(c, ['delete', 'networkpolicy', 'allow-web-egress']);
  // A refusal is not cached: the same driver reads the namespace again and runs.
  const jail = await d.create(spec(['true']));
  await jail.destroy();
});

/** Until the pod's child container runs and has written out/up.txt (its trap is set before). */
async function running(d: K8sJailDriver, name: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const pod = await d.api.getPod(name);
    const cs = ((pod?.status as { containerStatuses?: { name: string; state?: { running?: unknown } }[] } | undefined)?.containerStatuses ?? []).find((x) => x.name === 'child');
    if (cs?.state?.running) {
      await new Promise((r) => setTimeout(r, 500));
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`pod ${name} never ran`);
}

test("brig spawn with BRIG_DRIVER=kubernetes: the same envelope and refs as on Docker, the verified pod in the run's record, no pod left behind", async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const home = tmpDir(t);
  const env = driverEnv(c);
  const r = await runCli(['spawn', '--json', '--memory', '64', '--', 'sh', '-c', 'mkdir -p out/d && printf abc > out/d/x.txt && echo to-stdout'], { home, env });
  assert.equal(r.code, 0, r.err + r.out);
  const envelope = JSON.parse(r.out) as { runId: string; endReason: string; exitCode: number; files: { path: string; bytes: number }[]; refs: { ref: string; path: string }[]; stdoutPreview: string; run: { jail: { containerId: string; readOnlyRoot: boolean; capDrop: string[]; user: string; limits: { memoryMb: number } } } };
  assert.equal(envelope.endReason, 'completed');
  assert.equal(envelope.exitCode, 0);
  assert.deepEqual(envelope.files, [{ path: 'd/x.txt', bytes: 3 }]);
  assert.equal(envelope.stdoutPreview, 'to-stdout\n');
  const read = await runCli(['ref', 'read', envelope.refs.find((x) => x.path === 'out/d/x.txt')!.ref], { home, env });
  assert.equal(read.code, 0, read.err);
  assert.match(read.out, /abc/);
  // The run's record keeps the pod as verified, as it keeps a container on Docker.
  const jail = envelope.run.jail;
  assert.equal(jail.containerId, `pod/brig-${envelope.runId.toLowerCase()}`);
  assert.deepEqual([jail.readOnlyRoot, jail.capDrop, jail.user, jail.limits.memoryMb], [true, ['ALL'], '65534:65534', 64]);
  const ledger = fs.readdirSync(path.join(home, 'ledger')).map((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8')).join('');
  assert.match(ledger, /"type":"run\.lifecycle_ended"[^\n]*"endReason":"completed"/, 'the end is ledgered');
  const d = driverFor(c, t);
  const left = (await d.api.listPods(LABEL_OWNER)).filter((p) => JSON.stringify(p.metadata).includes(envelope.runId.toLowerCase()) && !(p.metadata as { deletionTimestamp?: string }).deletionTimestamp);
  assert.deepEqual(left.map((p) => (p.metadata as { name: string }).name), [], 'no pod of the run left');
});

// req: kube:pod-verified
test('[INV-2] a script child on the kubernetes driver reaches its broker through the relay: progress, a nested child spawned on the cluster, its ref read, its value returned — the same socket path as on Docker, read-only to it, the relay out of its sight', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const home = tmpDir(t);
  const env = driverEnv(c);
  const script = path.join(home, 'job.mjs');
  fs.writeFileSync(script, `import fs from 'node:fs';
export default async function (brig) {
  await brig.progress('on kubernetes');
  const child = await brig.spawn({ task: 'nested', kind: 'command', argv: ['sh', '-c', 'printf nested-out > out/n.txt'] });
  const text = (await child.refs.find((r) => r.path === 'out/n.txt').read()).text;
  const tries = (f) => { try { f(); return 'DONE'; } catch (e) { return e.code; } };
  // The relay's sockets are the child's to connect to, never to replace; its process is in another PID namespace.
  const socketDir = [tries(() => fs.unlinkSync('/run/brig/broker.sock')), tries(() => fs.writeFileSync('/run/brig/fake.sock', 'x'))];
  const cmdline = (p) => { try { return fs.readFileSync('/proc/' + p + '/cmdline', 'utf8'); } catch { return ''; } };
  const procs = fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p)).map(cmdline);
  // Its own runtime is listed (the look works); the relay is not.
  const relaySeen = [procs.some((c) => c.includes('runtime.js')), procs.some((c) => c.includes('pod-relay'))];
  return { socket: fs.statSync('/run/brig/broker.sock').isSocket(), child: child.endReason, text, socketDir, relaySeen };
}
`);
  const r = await runCli(['spawn', '--json', '--script', script], { home, env });
  assert.equal(r.code, 0, r.err + r.out);
  const envelope = JSON.parse(r.out) as { runId: string; endReason: string; result: unknown; run: { stepsExecuted: number } };
  assert.equal(envelope.endReason, 'completed', r.out);
  assert.deepEqual(envelope.result, { socket: true, child: 'completed', text: 'nested-out', socketDir: ['EROFS', 'EROFS'], relaySeen: [true, false] }, 'from inside: the socket cannot be removed or shadowed, the relay is not among its processes');
  assert.equal(envelope.run.stepsExecuted, 1, 'the progress call was counted by the supervisor');
});

// req: kube:pod-verified
test('[INV-2] an LLM agent on the kubernetes driver: its whole tool loop runs in the pod, its model calls go through the relayed broker, the key stays on the host, the host unreachable from the pod', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const home = tmpDir(t);
  const key = `sk-brig-k8s-${randomBytes(12).toString('hex')}`;
  let m!: ModelServer;
  const probe = [
    'id -u',
    `node -e "require('http').get(process.argv[1],()=>console.log('NET-REACHED')).on('error',e=>console.log('NET-REFUSED',e.code))" "$URL"`,
    `(env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n') | grep -c "$HINT" || true`,
    "printf 'a\\nb\\n' > /workspace/out/data.txt && wc -l < /workspace/out/data.txt",
  ].join('; echo ---; ');
  m = await startModelServer({
    script: [
      () => toolCallTurn('shell', { command: probe.replace('$URL', `${m.origin}/v1/models`).replace('$HINT', key.slice(3, 19)) }),
      toolCallTurn('finish', { answer: 'two lines', files: ['/workspace/out/data.txt'] }),
    ],
    expectKey: key,
  });
  t.after(() => m.close());
  const cfg = loadConfig({ BRIG_HOME: home, ...driverEnv(c), BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_API: 'openai-chat', BRIG_MODEL_API_KEY: key, BRIG_MODEL_CONTEXT_WINDOW: '32000' });
  const sup = await compose(cfg, { tickMs: 200, reconcile: true });
  t.after(() => sup.brig.close());
  await sup.supervisor.start();
  const r = await sup.supervisor.spawn({ task: 'Write two lines and count them.', kind: 'agent', agent: 'general' });
  assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
  const run = r.value;
  assert.equal(run.endReason, 'completed', `${run.error?.message} ${run.stdoutTail}`);
  assert.deepEqual(run.result, { answer: 'two lines', files: ['/workspace/out/data.txt'] });
  assert.equal(run.jail?.containerId, `pod/brig-${run.id.toLowerCase()}`, 'it ran in a pod');
  assert.equal(m.requests.length, 2);
  for (const q of m.requests) assert.equal(q.headers.authorization, `Bearer ${key}`, 'the supervisor, not the pod, holds the key');
  const last = m.requests[1]!.body as { messages: { role: string; content: unknown }[] };
  const seen = last.messages.filter((x) => x.role === 'tool').map((x) => String(x.content)).join('\n');
  const parts = seen.split('---').map((x) => x.trim());
  assert.match(parts[0]!, /65534/, seen);
  assert.match(parts[1]!, /NET-REFUSED/, 'the host loopback (the model server) is not reachable from the pod');
  assert.match(parts[2]!, /^0/, 'the key is in no environment of the pod');
  assert.match(parts[3]!, /2/);
});

test('brig spawn with BRIG_DRIVER=kubernetes past its timeout ends watchdog_timeout; an image the nodes lack ends with the kubelet\'s reason, not a hang', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const home = tmpDir(t);
  const env = driverEnv(c);
  const r = await runCli(['spawn', '--json', '--timeout', '4', '--', 'sh', '-c', 'sleep 600'], { home, env });
  const envelope = JSON.parse(r.out) as { endReason: string };
  assert.equal(envelope.endReason, 'watchdog_timeout', r.out + r.err);
  const missing = await runCli(['spawn', '--json', '--', 'true'], { home, env: { ...env, BRIG_K8S_IMAGE: 'brig-child:not-on-the-node' } });
  assert.notEqual(missing.code, 0);
  assert.match(missing.out + missing.err, /ErrImageNeverPull|image/i);
});

test('the end comes through one watch over the pods (item 7), not reads every 100 ms: a 3 s run is read a few times, the same run polled is read many; a pod deleted under a run (as the node-lifecycle controller deletes a lost node\'s pods) ends its wait at once with that reason, and nothing is run again', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const watched = driverFor(c, t);
  const polled = new K8sJailDriver({ kubeconfig: c.kubeconfig, namespace: c.namespace, image: c.childImage, workspace: c.workspace, owner: `k8s-drv-${randomBytes(3).toString('hex')}`, pollMs: 100, watch: false });
  t.after(async () => {
    await polled.sweep(() => false);
    await polled.close();
  });
  const reads = async (d: K8sJailDriver) => {
    const jail = await d.create(spec(['sh', '-c', 'sleep 3; exit 5']));
    try {
      await jail.start();
      const before = d.api.podReads;
      assert.equal((await jail.wait()).exitCode, 5);
      return d.api.podReads - before;
    } finally {
      await jail.destroy();
    }
  };
  const [w, p] = await Promise.all([reads(watched), reads(polled)]);
  assert.ok(w <= 4, `watched: ${w} reads of the pod while it ran`);
  assert.ok(p >= 10, `polled: ${p} reads (the control: the count can tell the two apart)`);
  assert.ok(watched.podWatch().relists >= 1 && watched.podWatch().events > 0, 'the watch listed and saw events');

  const s = spec(['sh', '-c', 'printf half > out/half.txt; sleep 600']);
  const jail = await watched.create(s);
  await jail.start();
  await untilInWorkspace(watched.api, jail.id, 'out/half.txt');
  const gone = await kubectl(c, ['delete', 'pod', jail.id, '--grace-period=0', '--force', '--wait=false']);
  assert.equal(gone.code, 0, gone.stderr);
  const t0 = Date.now();
  await assert.rejects(jail.wait(), (e: Error & { code?: string }) => e.code === 'jail_failed' && /is gone/.test(e.message));
  assert.ok(Date.now() - t0 < 10_000, `seen in ${Date.now() - t0} ms`);
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(await watched.api.getPod(jail.id), null, 'not made again: at most once');
  await jail.destroy();
});
