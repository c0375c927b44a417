/**
 * The Kubernetes driver against the bare API, on the same cluster in the same run (issue 33
 * item 8: cold spawn ≤ ×1.3 of the `create pod → ended` floor):
 *
 * floor   a plain pod of the same image running `true` (hardened the same, the same workspace
 *         volume — brig-loop on the test cluster — no gate, no relay, no prepare): POST the pod,
 *         poll its status until the container terminated (every 100 ms, as brig's driver does),
 *         DELETE it. Beside it the same pod with an emptyDir workspace: the volume's own cost.
 * brig    the driver's whole cold path for `true`: create gated → verify → lift the gate →
 *         the kubelet's end → collect out/ through the relay's tar → delete.
 * brig+io the same with an input file (unpacked by exec) and one output file collected.
 * exec    one `exec true` into a running pod of the same image (the floor of anything done in a
 *         pod that already runs: a pooled run is at least three — assign, confirm, collect).
 * pooled  the warm pool's round trip for `true` (k8s-pool.ts): claim a ready pod → verify it
 *         again → exec the assignment → its end (the namespace ended, confirmed) → collect →
 *         delete; the refill is not timed (the pool is filled before each round). Goal ≤ 300 ms.
 *
 * Rounds alternate floor and brig so a slow minute hits both. Before each timed step the bench
 * waits a random 0–1 s (not timed): the kubelet sees a container's end at its next relist, once
 * a second, so a sequence of steps of steady lengths locks onto one phase of that tick — one
 * run of this bench measured every cold run at ~2.0 s, the next at ~1.0 s, the same code. The
 * random start samples every phase, so each median is the typical wait. Needs brig's test cluster
 * (`make k8s-up`) or BRIG_K8S_LIVE=1 with KUBECONFIG. Prints p50/p95 and ratios; asserts nothing.
 *   node --import tsx bench/k8s.bench.ts [ROUNDS]     (default 8)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { K8sJailDriver, K8sWarmPool, type JailSpec } from '../src/jail/index.js';
import { execText } from '../src/jail/k8s/kube-exec.js';
import { renderPod } from '../src/jail/k8s/pod-spec.js';
import { testCluster } from '../test/helpers/k8s.js';
import { BenchReport } from './report.js';

const N = Math.max(3, Number(process.argv[2] ?? 8));
const report = new BenchReport('k8s');
const LIMITS = { memoryMb: 128, cpu: 0.5, pids: 64, tmpfsMb: 16, diskMb: 64 };
const CAPS = { perFileBytes: 1 << 20, perRunBytes: 4 << 20, maxEntries: 100 };

const c = testCluster();
if (!c) {
  console.log('k8s bench: no cluster (run `make k8s-up`, or BRIG_K8S_LIVE=1 with KUBECONFIG): skipped');
  process.exit(0);
}
const driver = new K8sJailDriver({ kubeconfig: c.kubeconfig, namespace: c.namespace, image: c.childImage, workspace: c.workspace, owner: `bench-k8s-${process.pid}`, pollMs: 100 });
const api = driver.api;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-k8s-bench-'));
const pool = new K8sWarmPool({ driver, size: 1, prime: [LIMITS] });

let seq = 0;
function spec(argv: string[], extra: Partial<JailSpec> = {}): JailSpec {
  const id = `bench-${process.pid}-${++seq}`;
  return { runId: id, leaseId: 'bench', rootRunId: id, argv, env: { PATH: '/usr/bin:/bin', HOME: '/workspace' }, limits: LIMITS, artifacts: [], askedBy: 'operator', ...extra };
}

/** A plain pod: the same image, hardening and workspace volume, no gate, no init, no relay (`node`: an emptyDir workspace instead). */
async function floor(workspace: NonNullable<typeof c>["workspace"] = c!.workspace): Promise<number> {
  const m = renderPod(spec(['true']), { namespace: c!.namespace, owner: `bench-k8s-${process.pid}`, image: c!.childImage, workspace });
  const s = m.spec as { schedulingGates?: unknown; initContainers?: unknown; containers: { name: string; command: string[] }[] };
  delete s.schedulingGates;
  delete s.initContainers;
  s.containers = [{ ...s.containers[0]!, command: ['true'] }];
  const t0 = performance.now();
  await api.createPod(m);
  for (;;) {
    const pod = await api.getPod(m.metadata.name);
    const st = ((pod?.status as { containerStatuses?: { state?: { terminated?: unknown } }[] } | undefined)?.containerStatuses ?? [])[0];
    if (st?.state?.terminated) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await api.deletePod(m.metadata.name);
  return performance.now() - t0;
}

/** One `exec true` into a running pod (the pool's own idle pod would be taken: a plain one). */
let execPod: string | undefined;
async function execFloor(): Promise<number> {
  if (!execPod) {
    const m = renderPod(spec(['sleep', '3600']), { namespace: c!.namespace, owner: `bench-k8s-${process.pid}`, image: c!.childImage, workspace: c!.workspace });
    const s = m.spec as { schedulingGates?: unknown; containers: { name: string; command: string[] }[] };
    delete s.schedulingGates;
    s.containers = [{ ...s.containers[0]!, command: ['sleep', '3600'] }];
    await api.createPod(m);
    execPod = m.metadata.name;
    while ((await execText(api, execPod, 'child', ['true']).catch(() => null)) === null) await new Promise((r) => setTimeout(r, 100));
  }
  const t0 = performance.now();
  await execText(api, execPod, 'child', ['true']);
  return performance.now() - t0;
}

async function viaBrig(io: boolean, pooled = false): Promise<number> {
  // A pooled run has a broker (the pool serves only those); the cold rows stay without one, as before.
  const extra = pooled ? { brokerDir: tmp } : {};
  const s = io ? spec(['sh', '-c', 'cp in/x.txt out/y.txt'], { inputs: [{ path: 'in/x.txt', data: 'bench\n' }], ...extra }) : spec(['true'], extra);
  if (pooled) await pool.filled(120_000);
  const t0 = performance.now();
  const jail = await (pooled ? pool.create(s) : driver.create(s));
  if (pooled && !jail.verified?.pooled) throw new Error('the pool did not serve the round');
  try {
    await jail.start();
    await jail.wait();
    await jail.collect(path.join(tmp, s.runId), CAPS);
  } finally {
    await jail.destroy();
  }
  return performance.now() - t0;
}

/** A random pause of up to a second, untimed: the next step starts at any phase of the kubelet's 1 s relist. */
const jitter = () => new Promise((r) => setTimeout(r, Math.random() * 1000));

const xs = { floorNode: [] as number[], floor: [] as number[], brig: [] as number[], io: [] as number[], exec: [] as number[], pooled: [] as number[], pooledIo: [] as number[] };
try {
  await pool.start();
  await report.phase('warm-up', async () => {
    await floor();
    await viaBrig(false);
    await execFloor();
    await viaBrig(false, true);
  });
  await report.phase('rounds', async () => {
    for (let i = 0; i < N; i++) {
      // No refill of the pool overlaps a cold round: the kubelet serves one pod start at a time well.
      await pool.filled(120_000);
      await jitter();
      xs.floor.push(await floor());
      await jitter();
      xs.floorNode.push(await floor({ emptyDir: true }));
      await jitter();
      xs.brig.push(await viaBrig(false));
      await jitter();
      xs.io.push(await viaBrig(true));
      xs.exec.push(await execFloor());
      xs.pooled.push(await viaBrig(false, true));
      xs.pooledIo.push(await viaBrig(true, true));
      process.stderr.write(`\rround ${i + 1}/${N}`);
    }
    process.stderr.write('\n');
  });
  const pct = (v: number[], q: number) => [...v].sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor((v.length - 1) * q))]!;
  const line = (name: string, v: number[], floorV?: number[]) =>
    console.log(`${name.padEnd(44)} p50 ${pct(v, 0.5).toFixed(0).padStart(6)} ms  p95 ${pct(v, 0.95).toFixed(0).padStart(6)} ms${floorV ? `  ×${(pct(v, 0.5) / pct(floorV, 0.5)).toFixed(2)} of the floor` : ''}`);
  console.log(`k8s bench, ${N} rounds, load ${os.loadavg()[0]!.toFixed(2)}`);
  line('create pod → ended, bare API (floor)', xs.floor);
  line('  the same with an emptyDir workspace', xs.floorNode);
  line('cold run, kubernetes driver (true)', xs.brig, xs.floor);
  line('cold run with an input and an output', xs.io, xs.floor);
  report.samples('create pod → ended, bare API', xs.floor);
  report.samples('create pod → ended, bare API, an emptyDir workspace', xs.floorNode);
  report.samples('cold run on the kubernetes driver (true)', xs.brig, { floor: 'create pod → ended, bare API', headline: true, goal: { ratioMax: 1.3 } });
  report.samples('cold run with an input and an output', xs.io, { floor: 'create pod → ended, bare API' });
  line('exec true into a running pod (floor)', xs.exec);
  line('pooled round trip (true)', xs.pooled, xs.exec);
  line('pooled round trip, an input and an output', xs.pooledIo, xs.exec);
  report.samples('exec true into a running pod', xs.exec);
  report.samples('pooled round trip on the kubernetes driver (true)', xs.pooled, { floor: 'exec true into a running pod', goal: { max: 300 } });
  report.samples('pooled round trip, an input and an output', xs.pooledIo, { floor: 'exec true into a running pod' });
} finally {
  await pool.close().catch(() => undefined);
  await driver.sweep(() => false).catch(() => undefined);
  await driver.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
report.write();
