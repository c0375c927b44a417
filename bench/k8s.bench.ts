/**
 * The Kubernetes driver against the bare API, on the same cluster in the same run (issue 33
 * item 8: cold spawn ≤ ×1.3 of the `create pod → ended` floor):
 *
 * floor   a plain pod of the same image running `true` (hardened the same, no gate, no relay,
 *         no prepare): POST the pod, poll its status until the container terminated (every
 *         100 ms, as brig's driver does), DELETE it.
 * brig    the driver's whole cold path for `true`: create gated → verify → lift the gate →
 *         the kubelet's end → collect out/ through the relay's tar → delete.
 * brig+io the same with an input file (unpacked by exec) and one output file collected.
 *
 * Rounds alternate floor and brig so a slow minute hits both. Needs brig's test cluster
 * (`make k8s-up`) or BRIG_K8S_LIVE=1 with KUBECONFIG. Prints p50/p95 and ratios; asserts nothing.
 *   node --import tsx bench/k8s.bench.ts [ROUNDS]     (default 8)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { K8sJailDriver, type JailSpec } from '../src/jail/index.js';
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
const driver = new K8sJailDriver({ kubeconfig: c.kubeconfig, namespace: c.namespace, image: c.childImage, owner: `bench-k8s-${process.pid}`, pollMs: 100 });
const api = driver.api;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-k8s-bench-'));

let seq = 0;
function spec(argv: string[], extra: Partial<JailSpec> = {}): JailSpec {
  const id = `bench-${process.pid}-${++seq}`;
  return { runId: id, leaseId: 'bench', rootRunId: id, argv, env: { PATH: '/usr/bin:/bin', HOME: '/workspace' }, limits: LIMITS, artifacts: [], ...extra };
}

/** A plain pod: the same image and hardening, no gate, no init, no relay. */
async function floor(): Promise<number> {
  const m = renderPod(spec(['true']), { namespace: c!.namespace, owner: `bench-k8s-${process.pid}`, image: c!.childImage });
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

async function viaBrig(io: boolean): Promise<number> {
  const s = io ? spec(['sh', '-c', 'cp in/x.txt out/y.txt'], { inputs: [{ path: 'in/x.txt', data: 'bench\n' }] }) : spec(['true']);
  const t0 = performance.now();
  const jail = await driver.create(s);
  try {
    await jail.start();
    await jail.wait();
    await jail.collect(path.join(tmp, s.runId), CAPS);
  } finally {
    await jail.destroy();
  }
  return performance.now() - t0;
}

const xs = { floor: [] as number[], brig: [] as number[], io: [] as number[] };
try {
  await report.phase('warm-up', async () => {
    await floor();
    await viaBrig(false);
  });
  await report.phase('rounds', async () => {
    for (let i = 0; i < N; i++) {
      xs.floor.push(await floor());
      xs.brig.push(await viaBrig(false));
      xs.io.push(await viaBrig(true));
      process.stderr.write(`\rround ${i + 1}/${N}`);
    }
    process.stderr.write('\n');
  });
  const pct = (v: number[], q: number) => [...v].sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor((v.length - 1) * q))]!;
  const line = (name: string, v: number[], floorV?: number[]) =>
    console.log(`${name.padEnd(44)} p50 ${pct(v, 0.5).toFixed(0).padStart(6)} ms  p95 ${pct(v, 0.95).toFixed(0).padStart(6)} ms${floorV ? `  ×${(pct(v, 0.5) / pct(floorV, 0.5)).toFixed(2)} of the floor` : ''}`);
  console.log(`k8s bench, ${N} rounds, load ${os.loadavg()[0]!.toFixed(2)}`);
  line('create pod → ended, bare API (floor)', xs.floor);
  line('cold run, kubernetes driver (true)', xs.brig, xs.floor);
  line('cold run with an input and an output', xs.io, xs.floor);
  report.samples('create pod → ended, bare API', xs.floor);
  report.samples('cold run on the kubernetes driver (true)', xs.brig, { floor: 'create pod → ended, bare API', headline: true, goal: { ratioMax: 1.3 } });
  report.samples('cold run with an input and an output', xs.io, { floor: 'create pod → ended, bare API' });
} finally {
  await driver.sweep(() => false).catch(() => undefined);
  await driver.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
report.write();
