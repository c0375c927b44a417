/**
 * Scaling curves, printed as tables (each with its floor measured in the same run):
 *
 *   spawn     latency of a synchronous `true` child (request → envelope) as concurrency grows
 *             1, 2, 5, 10, queue included (maxConcurrent 5), beside `docker run --rm` at the
 *             same concurrency (p50, p95)
 *   collect   materializing one file of 1, 10, 100 MB from a jail's /workspace/out
 *             (collect + hash + line index + index as refs, the supervisor's one pass) beside
 *             `docker cp` of the same directory: time and MB/s (one pass should be linear; 1 GB
 *             is slice.bench.ts's materialization, beside the same floor — not measured twice)
 *   rss       the supervisor's RSS as live runs grow 0 → 50 (`sleep` children), and as run
 *             records on disk grow 0 → 10,000 (a fresh process each, after its start-up
 *             reconcile read them all)
 *
 *   node --import tsx bench/scaling.bench.ts [spawn|collect|rss ...]   (default: all three)
 *
 * Needs the engine and the child image. Printed, never asserted.
 */
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../src/config/index.js';
import { compose } from '../src/daemon/index.js';
import { DockerJailDriver, ownerForHome } from '../src/jail/index.js';
import { FsResultStore } from '../src/results/index.js';
import { BenchReport } from './report.js';

/** Made in the measuring process only: the --rss-records probe reports through its stdout. */
let report: BenchReport;

const run = promisify(execFile);
const mb = (b: number) => `${Math.round(b / 2 ** 20)} MiB`;
const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!;
};
const pct = (xs: number[]) => `p50 ${q(xs, 0.5).toFixed(0).padStart(5)} ms  p95 ${q(xs, 0.95).toFixed(0).padStart(5)} ms`;

async function tempHome(tag: string): Promise<string> {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), `brig-scale-${tag}-`));
  await fs.promises.chmod(home, 0o700);
  return home;
}

async function cleanup(home: string): Promise<void> {
  await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
  await fs.promises.rm(home, { recursive: true, force: true });
}

async function spawnCurve(): Promise<void> {
  const home = await tempHome('spawn');
  const c = await compose(loadConfig({ BRIG_HOME: home }), { settings: { maxChildrenPerAgent: 10, maxConcurrent: 5, maxQueued: 50, maxRunsPerTree: 500 }, tickMs: 1000, reconcile: false });
  try {
    await c.supervisor.start();
    const image = await new DockerJailDriver({ owner: ownerForHome(home) }).ensureImage();
    await c.supervisor.spawn({ task: 'warm-up', kind: 'command', argv: ['true'] });
    await run('docker', ['run', '--rm', '--network', 'none', image, 'true']);
    console.log('spawn latency of a synchronous `true` child, request → envelope (maxConcurrent 5: above it, the queue)');
    const WAVES = 4;
    for (const conc of [1, 2, 5, 10]) {
      const brig: number[] = [];
      const raw: number[] = [];
      for (let w = 0; w < WAVES; w++) {
        await Promise.all(
          Array.from({ length: conc }, async (_, i) => {
            const t0 = performance.now();
            const r = await c.supervisor.spawn({ task: `c${conc} w${w} #${i}`, kind: 'command', argv: ['true'] });
            if (!r.ok || r.value.endReason !== 'completed') throw new Error(`a child did not complete: ${r.ok ? r.value.endReason : r.error.code}`);
            brig.push(performance.now() - t0);
          }),
        );
        await Promise.all(
          Array.from({ length: conc }, async () => {
            const t0 = performance.now();
            await run('docker', ['run', '--rm', '--network', 'none', image, 'true']);
            raw.push(performance.now() - t0);
          }),
        );
      }
      report.samples(`docker run, concurrency ${conc}`, raw);
      report.samples(`spawn → envelope, concurrency ${conc}`, brig, { floor: `docker run, concurrency ${conc}` });
      console.log(`  concurrency ${String(conc).padStart(2)}: brig ${pct(brig)}   docker run ${pct(raw)}   p50 ×${(q(brig, 0.5) / q(raw, 0.5)).toFixed(2)}   (${brig.length} each)`);
    }
  } finally {
    await c.close();
    await cleanup(home);
  }
}

async function collectCurve(): Promise<void> {
  const home = await tempHome('collect');
  const owner = ownerForHome(home);
  const driver = new DockerJailDriver({ owner });
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  console.log('materializing one file from /workspace/out: collect + hash + line index + refs (one pass), beside docker cp (median of 3)');
  try {
    for (const sizeMb of [1, 10, 100]) {
      const runId = `scale-${sizeMb}-${process.pid}`;
      const jail = await driver.create({
        runId,
        leaseId: 'bench',
        rootRunId: 'bench',
        // Text with lines, so the line index has work: 64-byte lines of base64.
        argv: ['sh', '-c', `mkdir -p out && head -c ${Math.round((sizeMb * 2 ** 20 * 3) / 4)} /dev/urandom | base64 -w 63 > out/data.txt`],
        env: { HOME: '/workspace' },
        limits: { memoryMb: 256, cpu: 1, pids: 64, tmpfsMb: 16, diskMb: Math.max(64, sizeMb * 2) },
        artifacts: [],
      });
      try {
        await jail.start();
        if ((await jail.wait()).exitCode !== 0) throw new Error(jail.tails().stderrTail);
        const ours: number[] = [];
        const dcp: number[] = [];
        for (let i = 0; i < 3; i++) {
          const dest = store.outDir('bench', `${runId}-${i}`);
          await fs.promises.mkdir(path.dirname(dest), { recursive: true });
          spawnSync('sync');
          const t0 = performance.now();
          const rep = await jail.collect(dest, { perFileBytes: 4 * 2 ** 30, perRunBytes: 4 * 2 ** 30, maxEntries: 10 }, 'out', { observe: store.observe });
          await store.indexCollected(`${runId}-${i}`, 'bench', dest, rep.files);
          ours.push(performance.now() - t0);
          await store.remove('bench', `${runId}-${i}`);
          const to = path.join(home, `dcp-${i}`);
          spawnSync('sync');
          const t1 = performance.now();
          await run('docker', ['cp', `${jail.id}:/workspace/out`, to]);
          dcp.push(performance.now() - t1);
          await fs.promises.rm(to, { recursive: true, force: true });
        }
        const m = q(ours, 0.5);
        const d = q(dcp, 0.5);
        report.samples(`docker cp ${sizeMb} MB`, dcp);
        report.samples(`collect + index ${sizeMb} MB`, ours, { floor: `docker cp ${sizeMb} MB` });
        console.log(`  ${String(sizeMb).padStart(5)} MB: brig ${m.toFixed(0).padStart(6)} ms (${((sizeMb / m) * 1000).toFixed(0).padStart(4)} MB/s)   docker cp ${d.toFixed(0).padStart(6)} ms (${((sizeMb / d) * 1000).toFixed(0).padStart(4)} MB/s)   speed ×${(d / m).toFixed(2)} of docker cp`);
      } finally {
        await jail.destroy();
      }
    }
  } finally {
    await cleanup(home);
  }
}

/** `--rss-records HOME`: a supervisor that reconciled HOME's records; prints its RSS. */
async function rssProbe(home: string): Promise<void> {
  const c = await compose(loadConfig({ BRIG_HOME: home }), { tickMs: 60_000, reconcile: true });
  await c.supervisor.start();
  global.gc?.();
  const n = (await c.supervisor.list()).length;
  console.log(JSON.stringify({ rss: process.memoryUsage().rss, runs: n }));
  await c.close();
}

async function rssCurve(): Promise<void> {
  const home = await tempHome('rss');
  const c = await compose(loadConfig({ BRIG_HOME: home }), { settings: { maxChildrenPerAgent: 60, maxConcurrent: 60, maxQueued: 60, maxRunsPerTree: 200 }, tickMs: 1000, reconcile: false });
  const ids: string[] = [];
  try {
    await c.supervisor.start();
    await c.supervisor.spawn({ task: 'warm-up', kind: 'command', argv: ['true'] });
    console.log('supervisor RSS as live runs grow (children `sleep 300`, 64 MiB each)');
    let live = 0;
    for (const target of [0, 10, 25, 50]) {
      while (live < target) {
        const r = await c.supervisor.spawn({ task: `live ${live}`, kind: 'command', argv: ['sleep', '300'], async: true, limits: { memoryMb: 64 } });
        if (!r.ok) throw new Error(r.error.message);
        ids.push(r.value.id);
        live++;
      }
      for (let i = 0; i < 600 && (await c.supervisor.list({ status: ['running'] })).length < target; i++) await new Promise((r) => setTimeout(r, 100));
      global.gc?.();
      report.value(`supervisor RSS, ${target} live runs`, process.memoryUsage().rss / 2 ** 20, { unit: 'MiB' });
      console.log(`  ${String(target).padStart(3)} live runs: RSS ${mb(process.memoryUsage().rss)}`);
    }
    for (const id of ids) await c.supervisor.kill(id, { confirm: true });
    for (const id of ids) await c.supervisor.wait(id, { timeoutMs: 60_000 });
  } finally {
    await c.close();
    await cleanup(home);
  }

  // Records on disk: copies of one real ended record under fresh ids.
  const rhome = await tempHome('records');
  try {
    const c2 = await compose(loadConfig({ BRIG_HOME: rhome }), { reconcile: false, tickMs: 60_000 });
    await c2.supervisor.start();
    const one = await c2.supervisor.spawn({ task: 'template', kind: 'command', argv: ['sh', '-c', 'echo hello; echo world > out/a.txt'] });
    await c2.close();
    if (!one.ok) throw new Error(one.error.message);
    const runsDir = path.join(rhome, 'runs');
    const rec = JSON.parse(await fs.promises.readFile(path.join(runsDir, one.value.id, 'run.json'), 'utf8')) as Record<string, unknown>;
    console.log('supervisor RSS after its start-up reconcile read the records on disk (a fresh process each)');
    let made = 1;
    for (const target of [1, 1000, 5000, 10000]) {
      for (; made < target; made++) {
        const id = `r-${(0x2000000000000000n + BigInt(made)).toString(16)}`;
        await fs.promises.mkdir(path.join(runsDir, id), { mode: 0o700 });
        await fs.promises.writeFile(path.join(runsDir, id, 'run.json'), JSON.stringify({ ...rec, id, rootRunId: id, path: [id] }), { mode: 0o600 });
      }
      const r = spawnSync(process.execPath, [...process.execArgv, '--expose-gc', import.meta.filename, '--rss-records', rhome], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(r.stderr);
      const got = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { rss: number; runs: number };
      report.value(`supervisor RSS after reconciling ${target} records`, got.rss / 2 ** 20, { unit: 'MiB' });
      console.log(`  ${String(target).padStart(6)} records: RSS ${mb(got.rss)} (${got.runs} listed)`);
    }
  } finally {
    await cleanup(rhome);
  }
}

const [, , first, ...rest] = process.argv;
if (first === '--rss-records') await rssProbe(rest[0]!);
else {
  report = new BenchReport('scaling');
  const which = first ? [first, ...rest] : ['spawn', 'collect', 'rss'];
  if (which.includes('spawn')) await spawnCurve();
  if (which.includes('collect')) await collectCurve();
  if (which.includes('rss')) await rssCurve();
}
