/**
 * The jail's conformance rows on both drivers (issue 33 item 9): the same child, the same
 * spec, run by Docker's driver and by the Kubernetes driver, each row proven from inside the
 * jail and negatively (the write fails, the capability is absent, the connect does not
 * connect). A row that cannot hold on a driver is skipped with its reason printed, never
 * silently. Docker needs the engine (`make engine`; CI starts it), Kubernetes brig's own cluster.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { DockerJailDriver, K8sJailDriver, type Jail, type JailDriver, type JailSpec } from '../../src/jail/index.js';
import { requireEngine } from '../helpers/engine.js';
import { requireCluster, testCluster } from '../helpers/k8s.js';

const LIMITS = { memoryMb: 128, cpu: 0.5, pids: 64, tmpfsMb: 16, diskMb: 32 };
const CAPS = { perFileBytes: 1 << 20, perRunBytes: 2 << 20, maxEntries: 100 };
const OWNER = `conf-${process.pid}-${randomBytes(3).toString('hex')}`;

interface Driver {
  name: 'docker' | 'kubernetes';
  driver: JailDriver & { close?(): Promise<void> };
  /** Rows this driver cannot hold, and why (printed as the skip reason). */
  cannot: Record<string, string>;
}

const drivers: Promise<Driver>[] = [
  (async () => ({ name: 'docker' as const, driver: new DockerJailDriver({ owner: OWNER }), cannot: {} }))(),
  (async () => {
    const c = testCluster();
    return {
      name: 'kubernetes' as const,
      driver: c ? new K8sJailDriver({ kubeconfig: c.kubeconfig, namespace: c.namespace, image: c.childImage, workspace: c.workspace, owner: OWNER, pollMs: 100 }) : (null as unknown as JailDriver),
      cannot: {
        // On brig's cluster the workspace is a brig-loop volume of the lease's size; a user's cluster may have allowed an emptyDir.
        ...(c && 'emptyDir' in c.workspace ? { enospc: 'the workspace is an emptyDir (BRIG_K8S_WORKSPACE_EMPTYDIR): past its sizeLimit the kubelet evicts the pod instead of a write failing ENOSPC; name a StorageClass in BRIG_K8S_WORKSPACE_CLASS' } : {}),
        // brig asks for the lease's cap in the pod annotation brig.dev/pids-max; brig's cluster applies it (a runc wrapper), a user's may not.
        ...(process.env.BRIG_K8S_LIVE === '1' ? { pids: "the pod has no PID field: on a user's cluster processes are bounded by the kubelet's podPidsLimit unless the node's runtime applies brig.dev/pids-max (docs/kubernetes.md)" } : {}),
      },
    };
  })(),
];

function spec(argv: string[]): JailSpec {
  const id = `r-${randomBytes(8).toString('hex')}`;
  return { runId: id, leaseId: 'conformance', rootRunId: id, argv, env: { HOME: '/workspace', PATH: '/usr/bin:/bin' }, limits: LIMITS, artifacts: [] };
}

/** Runs argv to its end on a driver; what it printed, its exit code, and its collected out/. */
async function runOn(d: Driver, argv: string[], t: TestContext): Promise<{ exitCode: number; out: string; collect: () => Promise<unknown> }> {
  const jail: Jail = await d.driver.create(spec(argv));
  t.after(() => jail.destroy());
  await jail.start();
  const end = await jail.wait();
  const tails = jail.tails();
  const dest = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-conf-'));
  t.after(() => fs.rmSync(dest, { recursive: true, force: true }));
  return { exitCode: end.exitCode, out: tails.stdoutTail + tails.stderrTail, collect: () => jail.collect(path.join(dest, 'out'), CAPS) };
}

/** The driver when it can run here, else null with the skip said. */
async function ready(t: TestContext, i: number, row: string): Promise<Driver | null> {
  const d = await drivers[i]!;
  if (d.name === 'docker' && !(await requireEngine(t))) return null;
  if (d.name === 'kubernetes' && !requireCluster(t)) return null;
  if (d.cannot[row]) {
    t.skip(`${d.name} cannot hold this row: ${d.cannot[row]}`);
    return null;
  }
  return d;
}

const ROWS: { row: string; title: string; argv: string[]; check: (r: { exitCode: number; out: string; collect: () => Promise<unknown> }) => Promise<void> | void }[] = [
  {
    row: 'identity',
    title: 'non-root, no capabilities, no new privileges, seccomp filtering',
    argv: ['sh', '-c', 'echo "uid=$(id -u) gid=$(id -g)"; grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status'],
    check: (r) => {
      assert.match(r.out, /uid=65534 gid=65534/);
      assert.match(r.out, /CapEff:\s*0000000000000000/);
      assert.match(r.out, /CapBnd:\s*0000000000000000/);
      assert.match(r.out, /NoNewPrivs:\s*1/);
      assert.match(r.out, /Seccomp:\s*2/);
    },
  },
  {
    row: 'read-only-root',
    title: 'the root file system is read-only: a write to / and to /etc fails',
    argv: ['sh', '-c', 'touch /x 2>&1; touch /etc/x 2>&1; echo done'],
    check: (r) => {
      assert.equal((r.out.match(/Read-only file system/g) ?? []).length, 2, r.out);
    },
  },
  {
    row: 'no-network',
    title: "no way out: a connect to the host's own addresses does not connect",
    argv: ['node', '-e', `const net=require('net');const ts=${JSON.stringify(hostTargets())};let n=ts.length;if(!n)console.log('NO-TARGETS');for(const [h,p] of ts){const s=net.connect({host:h,port:p});const e=(r)=>{console.log(h+':'+p+' '+r);s.destroy();if(--n===0)process.exit(0)};s.setTimeout(2000,()=>e('TIMEOUT'));s.on('connect',()=>e('CONNECTED'));s.on('error',(x)=>e(x.code))}`],
    check: (r) => {
      assert.doesNotMatch(r.out, /CONNECTED/, r.out);
      assert.match(r.out, /(ENETUNREACH|EHOSTUNREACH|TIMEOUT|ECONNREFUSED|NO-TARGETS)/, r.out);
    },
  },
  {
    row: 'output-caps',
    title: 'outputs are collected under the caps: a file over the per-run cap refuses the collection, never truncated',
    argv: ['sh', '-c', 'head -c 900000 /dev/zero > out/a.bin; head -c 900000 /dev/zero > out/b.bin; head -c 900000 /dev/zero > out/c.bin'],
    check: async (r) => {
      assert.equal(r.exitCode, 0);
      await assert.rejects(r.collect(), (e: Error & { code?: string }) => e.code === 'ref_too_large');
    },
  },
  {
    row: 'enospc',
    title: '/workspace is capped at the lease: a write past it fails ENOSPC inside',
    argv: ['node', '-e', "try { require('fs').writeFileSync('/workspace/fill', Buffer.alloc(64 << 20)); console.log('WROTE') } catch (e) { console.log(e.code) }"],
    check: (r) => {
      assert.match(r.out, /^ENOSPC$/m, r.out);
    },
  },
  {
    row: 'pids',
    title: "the lease's process cap holds: forks past it fail",
    argv: ['sh', '-c', 'i=0; while [ $i -lt 200 ]; do sleep 5 & i=$((i+1)); done 2>&1 | head -1; echo forked'],
    check: (r) => {
      assert.match(r.out, /can't fork|Resource temporarily unavailable/i, r.out);
    },
  },
];

/** Addresses of this host a jail must not reach (the node's kubelet port, sshd's, the engine's). */
function hostTargets(): [string, number][] {
  const out: [string, number][] = [];
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (!a.internal && a.family === 'IPv4') out.push([a.address, 10250], [a.address, 22]);
  }
  return out.slice(0, 8);
}

for (const row of ROWS) {
  for (const i of [0, 1]) {
    const name = i === 0 ? 'docker' : 'kubernetes';
    test(`conformance [${name}] ${row.row}: ${row.title}`, async (t) => {
      const d = await ready(t, i, row.row);
      if (!d) return;
      await row.check(await runOn(d, row.argv, t));
    });
  }
}

test('conformance: cross-run isolation on both drivers — a second run sees nothing of the first\'s workspace', async (t) => {
  for (const i of [0, 1]) {
    const d = await ready(t, i, 'isolation');
    if (!d) continue;
    const mark = `mark-${randomBytes(6).toString('hex')}`;
    await runOn(d, ['sh', '-c', `echo ${mark} > /workspace/secret; echo ${mark} > /tmp/secret`], t);
    const second = await runOn(d, ['sh', '-c', `cat /workspace/secret /tmp/secret 2>&1; grep -rs ${mark} /workspace /tmp || echo none`], t);
    assert.doesNotMatch(second.out, new RegExp(`^${mark}$`, 'm'), `${d.name}: ${second.out}`);
    assert.match(second.out, /none/);
  }
});

test.after(async () => {
  for (const p of drivers) {
    const d = await p;
    if (!d.driver) continue;
    await d.driver.sweep(() => false).catch(() => undefined);
    await d.driver.close?.();
  }
});
