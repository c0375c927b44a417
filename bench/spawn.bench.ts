/**
 * Spawn overhead: brig's jail lifecycle against the raw floor, measured in the same run, all
 * with the same child image (brig's own) running `true`, round-robin, N runs each (default 20).
 *
 * floor-cli  `docker run --rm --network none IMAGE true`
 * floor-api  engine API create + start + wait + remove of the same, no hardening, no volume
 * floor-nonet  floor-api with NetworkDisabled (no libnetwork sandbox: what brig's profile does)
 * brig-jail  DockerJailDriver: volume + create + inspect-verify + attach + start + wait + destroy (`true`)
 * brig-noquota  brig-jail under the opt-out (BRIG_WORKSPACE_QUOTA=none): a plain volume, no disk quota
 * disk-only  the quota's own steps alone: image + mkfs.ext4 + debugfs + losetup, then detach + delete
 * brig-collect  the same plus collecting /workspace/out (empty)
 * brig-node  the same with `node -e 0` (Node start-up inside the jail, for scale)
 * brig-foreign  brig-jail in a foreign image (busybox only, FROM scratch; built here): image inspect, contract, runtime bind
 * brig-foreign-node  brig-node there: brig's node from the read-only runtime bind, through its own loader
 * brig-cli   `node dist/cli/main.js spawn -- true` end to end (CLI start-up included; needs `make build`)
 *
 * Prints medians and ratios against floor-api. Never asserted anywhere.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { DockerJailDriver, runJailOnce, type JailSpec, type RunOnceTimings } from '../src/jail/index.js';
import { BenchReport, quantile } from './report.js';
import { busyboxImage } from '../test/helpers/foreign-images.js';

const report = new BenchReport('spawn');

const run = promisify(execFile);
const N = Math.max(20, Number(process.argv[2] ?? 20));
const ROOT = `bench-${crypto.randomBytes(3).toString('hex')}`;
const driver = new DockerJailDriver({ owner: `bench-${process.pid}` });
const noQuota = new DockerJailDriver({ owner: `bench-${process.pid}`, workspaceQuota: 'none' });
const docker = driver.docker;

/** The report's own quantile (nearest rank): what is printed is the figure the report keeps. */
const median = (xs: number[]) => quantile(xs, 0.5) ?? NaN;

/** Round-robin: each round runs every variant once, so load from elsewhere hits all alike. */
async function rounds(variants: [string, () => Promise<unknown>][]): Promise<[string, number[]][]> {
  for (const [, fn] of variants) await fn(); // warm-up
  const xs = variants.map(() => [] as number[]);
  for (let i = 0; i < N; i++) {
    for (const [j, [, fn]] of variants.entries()) {
      const t0 = performance.now();
      await fn();
      xs[j]!.push(performance.now() - t0);
    }
  }
  return variants.map(([k], j) => [k, xs[j]!]);
}

let n = 0;
const spec = (argv: string[]): JailSpec => ({
  runId: `${ROOT}-${n++}`,
  leaseId: 'bench',
  rootRunId: ROOT,
  argv,
  env: { HOME: '/workspace' },
  limits: { memoryMb: 256, cpu: 1, pids: 64, tmpfsMb: 16, diskMb: 64 },
  artifacts: [],
});

async function main(): Promise<void> {
  const childImage = await driver.ensureImage();
  const foreign = await busyboxImage();
  const floorImage = childImage; // the same image: the ratio is brig's lifecycle, not image size
  const tmp = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-bench-'));
  const phases: RunOnceTimings[] = [];
  try {
    const variants: [string, () => Promise<unknown>][] = [
      ['floor-cli', () => run('docker', ['run', '--rm', '--network', 'none', floorImage, 'true'])],
      [
        'floor-api',
        async () => {
          const c = await docker.createContainer({ Image: floorImage, Cmd: ['true'], HostConfig: { NetworkMode: 'none' } });
          await c.start();
          await c.wait();
          await c.remove({ force: true });
        },
      ],
      [
        'floor-nonet',
        async () => {
          const c = await docker.createContainer({ Image: floorImage, Cmd: ['true'], NetworkDisabled: true, HostConfig: { NetworkMode: 'none' } });
          await c.start();
          await c.wait();
          await c.remove({ force: true });
        },
      ],
      ['brig-jail', async () => phases.push((await runJailOnce(driver, spec(['true']), { timeoutMs: 60_000 })).timings)],
      ['brig-noquota', () => runJailOnce(noQuota, spec(['true']), { timeoutMs: 60_000 })],
      [
        'disk-only',
        async () => {
          const id = `${ROOT}-d${n++}`;
          await driver.disks.create(id, 64, { uid: 65534, gid: 65534 });
          await driver.disks.release(id);
        },
      ],
      ['brig-collect', () => runJailOnce(driver, spec(['true']), { timeoutMs: 60_000, collectTo: path.join(tmp, String(n)) })],
      ['brig-node', () => runJailOnce(driver, spec(['/opt/brig/bin/node', '-e', '0']), { timeoutMs: 60_000 })],
      ['brig-foreign', () => runJailOnce(driver, { ...spec(['true']), image: foreign }, { timeoutMs: 60_000 })],
      ['brig-foreign-node', () => runJailOnce(driver, { ...spec(['/opt/brig/bin/node', '-e', '0']), image: foreign }, { timeoutMs: 60_000 })],
    ];
    const main = path.resolve(import.meta.dirname, '../dist/cli/main.js');
    if (fs.existsSync(path.resolve(import.meta.dirname, '../dist/cli/commands/spawn.js'))) {
      variants.push(['brig-cli', () => run(process.execPath, [main, 'spawn', '--json', '--', 'true'], { env: { BRIG_HOME: tmp, PATH: process.env.PATH ?? '' } })]);
    } else process.stderr.write('brig-cli: skipped (run `make build` first)\n');
    const results = await rounds(variants);

    const floor = median(results.find(([k]) => k === 'floor-api')![1]);
    const nonet = median(results.find(([k]) => k === 'floor-nonet')![1]);
    console.log(`spawn overhead: \`true\` in ${childImage}, ${N} runs each, round-robin, median ms`);
    for (const [k, xs] of results) {
      const floorOf = k === 'brig-foreign' ? 'brig-jail' : k === 'brig-foreign-node' ? 'brig-node' : 'floor-api';
      report.samples(k, xs, k === 'floor-api' ? {} : { floor: floorOf, ...(k === 'brig-jail' ? { goal: { ratioMax: 1.15 } } : {}), ...(k.startsWith('brig-foreign') ? { goal: { ratioMax: 1.1 } } : {}) });
      const m = median(xs);
      console.log(`${k.padEnd(13)} ${m.toFixed(0).padStart(6)} ms   ×${(m / floor).toFixed(2)} of floor-api   ×${(m / nonet).toFixed(2)} of floor-nonet   (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)})`);
    }
    const jail = median(results.find(([k]) => k === 'brig-jail')![1]);
    const cli = median(results.find(([k]) => k === 'floor-cli')![1]);
    console.log(`brig-jail / floor-api = ×${(jail / floor).toFixed(2)} (target ≤ ×1.15); brig-jail / floor-cli = ×${(jail / cli).toFixed(2)}`);
    const med = (k: string) => median(results.find(([x]) => x === k)![1]);
    console.log(`foreign image: brig-foreign / brig-jail = ×${(med('brig-foreign') / jail).toFixed(2)}, brig-foreign-node / brig-node = ×${(med('brig-foreign-node') / med('brig-node')).toFixed(2)} (target ≤ ×1.10)`);
    const ph = (k: keyof RunOnceTimings) => median(phases.map((p) => p[k])).toFixed(0);
    console.log(`brig-jail phases (median ms): create+verify ${ph('createMs')}, start ${ph('startMs')}, run ${ph('runMs')}, destroy ${ph('destroyMs')}`);
  } finally {
    await fs.promises.rm(tmp, { recursive: true, force: true });
    await driver.sweep((id) => !id.startsWith(ROOT));
  }
}

await main();
