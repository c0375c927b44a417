/**
 * The warm pool on Kubernetes (issue 33 item 8) on brig's own cluster: pods made, verified and
 * running before a run asks, holding nothing of any run until claimed; a claimed pod runs the
 * run's program by exec and ends with its whole process tree; a pod is never reused, one that
 * drifted is refused, and a pooled pod found after a restart is ended, not run again.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { K8sJailDriver, K8sWarmPool, type JailSpec } from '../../src/jail/index.js';
import { execText } from '../../src/jail/k8s/kube-exec.js';
import { CONTAINER, LABEL_ASSIGNED, POOL_WAITER } from '../../src/jail/k8s/pod-spec.js';
import type { PoolEvent } from '../../src/jail/index.js';
import { loadConfig } from '../../src/config/index.js';
import { compose } from '../../src/daemon/index.js';
import { driverEnv, kubectl, requireCluster, untilInWorkspace, type Cluster } from '../helpers/k8s.js';

const LIMITS = { memoryMb: 96, cpu: 0.5, pids: 64, tmpfsMb: 16, diskMb: 64 };
const CAPS = { perFileBytes: 1024 * 1024, perRunBytes: 4 * 1024 * 1024, maxEntries: 1000 };

type Obj = Record<string, unknown>;

function tmpDir(t: { after(fn: () => void): void }): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-k8s-pool-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

function spec(t: { after(fn: () => void): void }, argv: string[], extra: Partial<JailSpec> = {}): JailSpec {
  const id = `r-${randomBytes(8).toString('hex')}`;
  return { runId: id, leaseId: `l-${randomBytes(4).toString('hex')}`, rootRunId: id, argv, env: { HOME: '/workspace', PATH: '/bin:/usr/bin' }, limits: LIMITS, artifacts: [], brokerDir: tmpDir(t), askedBy: 'operator', ...extra } as JailSpec;
}

async function poolFor(c: Cluster, t: { after(fn: () => Promise<void>): void }, size = 1): Promise<{ pool: K8sWarmPool; driver: K8sJailDriver; events: PoolEvent[]; owner: string }> {
  const owner = `k8s-pool-${randomBytes(3).toString('hex')}`;
  const driver = new K8sJailDriver({ kubeconfig: c.kubeconfig, namespace: c.namespace, image: c.childImage, workspace: c.workspace, owner, pollMs: 100 });
  const events: PoolEvent[] = [];
  const pool = new K8sWarmPool({ driver, size, prime: [LIMITS], onEvent: (e) => events.push(e) });
  t.after(async () => {
    await pool.close();
    await driver.sweep(() => false);
    await driver.close();
  });
  await pool.start();
  await pool.filled(120_000);
  return { pool, driver, events, owner };
}

async function ownPods(c: Cluster, owner: string): Promise<Obj[]> {
  const r = await kubectl(c, ['get', 'pods', '-l', `brig.dev/owner=${owner}`, '-o', 'json']);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { items: Obj[] }).items.filter((p) => !(p.metadata as Obj).deletionTimestamp);
}

/** Whether an exec into the pod's child container is refused because it no longer runs. */
async function childEnded(driver: K8sJailDriver, pod: string): Promise<boolean> {
  return execText(driver.api, pod, CONTAINER, ['true']).then(
    () => false,
    (e: Error) => /not found|not running|CONTAINER_EXITED|stopped|finished/i.test(e.message),
  );
}

// req: kube:pool-claimed
test('[INV-2] a warm pod holds nothing of any run until claimed; the claimed run gets its inputs by exec (never in the pod object), its exit code, stdout and stderr apart, out/ collected; the pod is never reused', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const { pool, driver, events, owner } = await poolFor(c, t);
  const [idle] = await ownPods(c, owner);
  assert.ok(idle, 'a pool pod is ready');
  const child = ((idle.spec as Obj).containers as Obj[]).find((x) => x.name === CONTAINER)!;
  assert.deepEqual(child.command, ['/bin/sh', '-c', POOL_WAITER], 'its PID 1 is the waiter');
  assert.equal((child.env as unknown[] | undefined)?.length ?? 0, 0, 'no environment of any run');
  const look = 'ls -A /workspace; echo ---; ls -A /workspace/out; echo ---; for p in /proc/[0-9]*; do n=${p#/proc/}; [ "$n" -lt $$ ] && echo "$n $(tr "\\0" " " < $p/cmdline)"; done; true';
  const before = await execText(driver.api, String((idle.metadata as Obj).name), CONTAINER, ['sh', '-c', look]);
  const [ws, out, procs] = before.stdout.split('---\n');
  assert.equal(ws, 'out\n', 'only out/ in the workspace');
  assert.equal(out, '', 'out/ empty');
  assert.deepEqual(procs!.trim().split('\n').map((l) => l.trim().replace(/^\d+ /, '')).sort(), [`/bin/sh -c ${POOL_WAITER}`, 'sleep 3600'], 'only the waiter and its sleep run');

  const secret = `token-${randomBytes(12).toString('hex')}`;
  const s = spec(t, ['sh', '-c', `cat in/task.txt; printf '%s' "$SECRET_NAME" > out/env.txt; printf abc > out/a.txt; cp in/task.txt out/; echo oops >&2; exit 3`], {
    env: { HOME: '/workspace', PATH: '/bin:/usr/bin', SECRET_NAME: `it's "q" $HOME` },
    inputs: [{ path: 'in/task.txt', data: 'the task\n' }, { path: '.brig/token', data: secret, mode: 0o400 }],
  });
  const jail = await pool.create(s);
  assert.match(jail.key ?? '', /^pool-/, 'a pool pod served it');
  assert.ok(jail.verified?.pooled, 'the record says it was pooled');
  assert.equal(jail.verified?.limits.memoryMb, 96);
  try {
    await jail.start();
    const end = await jail.wait();
    assert.equal(end.exitCode, 3, 'the program\'s own status');
    const tails = jail.tails();
    assert.equal(tails.stdoutTail, 'the task\n', 'stdout');
    assert.equal(tails.stderrTail.trim(), 'oops', 'stderr apart from stdout');
    assert.ok(await childEnded(driver, jail.id), 'the child container ended with its program');
    const report = await jail.collect(path.join(tmpDir(t), 'out'), CAPS);
    assert.deepEqual(report.files.map((f) => f.path).sort(), ['a.txt', 'env.txt', 'task.txt']);
    assert.equal(fs.readFileSync(path.join(report.dir, 'env.txt'), 'utf8'), `it's "q" $HOME`, 'the environment arrives as given, quotes and $ intact');
    const obj = await kubectl(c, ['get', 'pod', jail.id, '-o', 'json']);
    assert.doesNotMatch(obj.stdout, new RegExp(secret), 'the token is in no pod object');
    assert.match(obj.stdout, new RegExp(`"${LABEL_ASSIGNED}": "${s.runId}"`), 'labelled with the run it served');
  } finally {
    await jail.destroy();
  }
  assert.ok(events.some((e) => e.type === 'jail.pool_assigned' && e.runId === s.runId), 'ledgered');
  // The next run of the shape gets another pod (the refill), never this one.
  await pool.filled(120_000);
  const next = await pool.create(spec(t, ['true']));
  try {
    assert.notEqual(next.id, jail.id, 'a pod serves one run');
    await next.start();
    assert.equal((await next.wait()).exitCode, 0);
  } finally {
    await next.destroy();
  }
  assert.equal(await driver.api.getPod(jail.id).then((p) => p === null || Boolean((p.metadata as Obj).deletionTimestamp)), true, 'the served pod is deleted');
});

// req: kube:pool-claimed
test('[INV-2] a pooled child cannot outlive its end: what it left running is killed with the pod\'s PID namespace; a kill ends the program (137) and everything it started', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const { pool, driver } = await poolFor(c, t, 2);
  // The program exits at once and leaves a writer behind, ignoring TERM and HUP.
  const left = await pool.create(spec(t, ['sh', '-c', '(trap "" TERM HUP; while :; do date >> out/late.txt; sleep 0.05; done) & sleep 0.3; exit 0']));
  const long = await pool.create(spec(t, ['sh', '-c', 'trap "" TERM; (trap "" TERM; sleep 600) & printf up > out/up.txt; while :; do sleep 1; done']));
  try {
    assert.ok(left.verified?.pooled && long.verified?.pooled, 'both pooled');
    await Promise.all([left.start(), long.start()]);
    assert.equal((await left.wait()).exitCode, 0);
    assert.ok(await childEnded(driver, left.id), 'nothing of the child runs after its end');
    const dest = path.join(tmpDir(t), 'left');
    const size = (await left.collect(dest, CAPS)).files.find((f) => f.path === 'late.txt')?.bytes ?? 0;
    await new Promise((r) => setTimeout(r, 300));
    const again = (await left.collect(path.join(tmpDir(t), 'left2'), CAPS)).files.find((f) => f.path === 'late.txt')?.bytes ?? 0;
    assert.ok(size > 0 && again === size, `the writer it left is gone (${size} then ${again} bytes)`);
    await new Promise((r) => setTimeout(r, 500));
    await long.kill();
    const killed = await long.wait();
    assert.deepEqual([killed.exitCode, killed.oomKilled], [137, false], 'killed by brig, not by the OOM killer');
    assert.ok(await childEnded(driver, long.id), 'its background sleep went with it');
  } finally {
    await Promise.all([left.destroy(), long.destroy()]);
  }
});

test("stop on a pooled pod: SIGTERM reaches the program (it chooses its exit, its outputs kept); one that ignores it is killed after the grace (137)", async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const { pool, driver } = await poolFor(c, t, 2);
  const polite = await pool.create(spec(t, ['sh', '-c', 'trap "printf bye > out/bye.txt; exit 7" TERM; printf up > out/up.txt; while :; do sleep 1; done']));
  const rude = await pool.create(spec(t, ['sh', '-c', 'trap "" TERM; printf up > out/up.txt; while :; do sleep 1; done']));
  try {
    assert.ok(polite.verified?.pooled && rude.verified?.pooled, 'both pooled');
    await Promise.all([polite.start(), rude.start()]);
    for (const j of [polite, rude]) await untilInWorkspace(driver.api, j.id, 'out/up.txt');
    await Promise.all([polite.stop(10_000), rude.stop(1_500)]);
    assert.equal((await polite.wait()).exitCode, 7, 'the program saw SIGTERM and chose its exit');
    assert.equal((await rude.wait()).exitCode, 137, 'killed past the grace');
    const report = await polite.collect(path.join(tmpDir(t), 'polite'), CAPS);
    assert.deepEqual(report.files.map((f) => f.path).sort(), ['bye.txt', 'up.txt'], 'outputs kept after a stop');
    assert.ok((await childEnded(driver, polite.id)) && (await childEnded(driver, rude.id)), 'both containers ended');
  } finally {
    await Promise.all([polite.destroy(), rude.destroy()]);
  }
});

test('a warm pod changed after it was made is refused at claim (jail_unverified), never run; a pooled pod found after a restart is ended and fails, not run again', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const { pool, driver, owner } = await poolFor(c, t);
  const [idle] = await ownPods(c, owner);
  const name = String((idle!.metadata as Obj).name);
  const patched = await kubectl(c, ['patch', 'pod', name, '--type=json', '-p', JSON.stringify([{ op: 'replace', path: '/spec/containers/0/image', value: `${c.childImage.split(':')[0]}:drifted` }])]);
  assert.equal(patched.code, 0, patched.stderr);
  const drifted = await pool.create(spec(t, ['sh', '-c', 'printf ran > out/ran.txt']));
  assert.equal(drifted.id, name, 'the changed pod was the one handed out');
  await assert.rejects(drifted.start(), (e: Error & { code?: string }) => e.code === 'jail_unverified' && /image/.test(e.message));
  await drifted.destroy();

  await pool.filled(120_000);
  const s = spec(t, ['sh', '-c', 'printf up > out/up.txt; sleep 600']);
  const jail = await pool.create(s);
  try {
  await jail.start();
  // Running: its first output is there (read through the relay container).
  await untilInWorkspace(driver.api, jail.id, 'out/up.txt');
  // The supervisor dies (its exec stream with it); the next one finds the pod by its key.
  const second = new K8sJailDriver({ kubeconfig: c.kubeconfig, namespace: c.namespace, image: c.childImage, workspace: c.workspace, owner, pollMs: 100 });
  t.after(() => second.close());
  const back = await second.attach(jail.key!);
  assert.ok(back, 'reattached by its key');
  await assert.rejects(back.wait(), (e: Error & { code?: string }) => e.code === 'jail_failed' && /not run again/.test(e.message));
  const report = await back.collect(path.join(tmpDir(t), 'out'), CAPS);
  assert.deepEqual(report.files.map((f) => f.path), ['up.txt'], 'what it wrote is still collected');
  await back.destroy();
  } finally {
    await jail.destroy(); // the dead supervisor's stream, closed
  }
});

test('through the supervisor (compose with warm: 1 on the kubernetes driver): a script child is served a warm pod, reaches its broker through the pre-started relay, spawns a nested child, and returns the same envelope as a cold run', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const home = tmpDir(t);
  const cfg = loadConfig({ BRIG_HOME: home, ...driverEnv(c) });
  const sup = await compose(cfg, { tickMs: 200, reconcile: true, warm: 1 });
  t.after(() => sup.brig.close());
  await sup.supervisor.start();
  await sup.warm!.start();
  await sup.warm!.filled(120_000);
  const script = `export default async function (brig) {
  await brig.progress('pooled on kubernetes');
  const child = await brig.spawn({ task: 'nested', kind: 'command', argv: ['sh', '-c', 'printf nested-out > out/n.txt'] });
  const text = (await child.refs.find((r) => r.path === 'out/n.txt').read()).text;
  return { child: child.endReason, text };
}`;
  const r = await sup.supervisor.spawn({ task: 'pooled', kind: 'script', script });
  assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
  const run = r.value;
  assert.equal(run.endReason, 'completed', `${run.error?.message} ${run.stdoutTail} ${run.stderrTail}`);
  assert.deepEqual(run.result, { child: 'completed', text: 'nested-out' });
  assert.ok(run.jail?.pooled, `served warm: ${JSON.stringify(run.jail)}`);
  assert.match(run.jail!.containerId, /^pod\/brig-pool-/);
  assert.equal(run.stepsExecuted, 1, 'its progress call was counted');
  const ledger = fs.readdirSync(path.join(home, 'ledger')).map((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8')).join('');
  assert.match(ledger, new RegExp(`"type":"jail\\.pool_assigned"[^\\n]*"runId":"${run.id}"`), 'the assignment is ledgered');
});

test("a pooled program the kernel's OOM killer ends: 137 with oomKilled, read from the container's memory cgroup; the wrapper's count line is not left in the stderr tail", async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const { pool } = await poolFor(c, t);
  // Off-heap buffers, touched: the container's memory limit (96 MiB) is reached, not node's heap limit.
  const jail = await pool.create(spec(t, ['/usr/bin/node', '-e', 'const a = []; for (;;) a.push(Buffer.alloc(4 << 20, 1));']));
  try {
    assert.ok(jail.verified?.pooled, 'pooled');
    await jail.start();
    const end = await jail.wait();
    assert.deepEqual([end.exitCode, end.oomKilled], [137, true]);
    assert.doesNotMatch(jail.tails().stderrTail, /oom_kill/, 'the count line is brig\'s, not the program\'s');
  } finally {
    await jail.destroy();
  }
});
