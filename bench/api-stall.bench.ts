/**
 * The daemon's API while jails come and go (issue 29 item 7): GET /v1/health answered by a real
 * `brig serve --max-concurrent 20` (dist/), sampled back to back (one request at a time, a fresh
 * connection each, as a CLI command would):
 *
 *   quiet      no child at all: the floor, measured in the same run
 *   20 jails   20 command children spawned at once (each a fresh jail with its workspace disk,
 *              running ~1 s and writing an output), sampled from the spawns until all 20 have
 *              ended and been collected; ROUNDS times
 *
 * Prints p50/p99/max and the ratio to quiet; the goal is p99 ≤ 50 ms under load. With
 * `--profile DIR` the daemon runs under `node --cpu-prof` and the bench prints where its main
 * thread spent its time (self time by function, and the time under process spawning, fsync and
 * the other synchronous file calls). Needs the engine and `make build`. Printed, never asserted.
 *
 *   node --import tsx bench/api-stall.bench.ts [ROUNDS] [--profile DIR] [--main dist/cli/main.js]   (default 3)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApiClient } from '../src/client/index.js';
import { exchange } from '../src/client/wire.js';
import { BenchReport } from './report.js';

const args = process.argv.slice(2);
// --main FILE: another build's cli/main.js (a before/after comparison in one sitting).
const mainIdx = args.indexOf('--main');
const MAIN = mainIdx >= 0 ? path.resolve(args.splice(mainIdx, 2)[1]!) : path.resolve(import.meta.dirname, '../dist/cli/main.js');
const profIdx = args.indexOf('--profile');
const PROFILE = profIdx >= 0 ? path.resolve(args[profIdx + 1]!) : undefined;
if (profIdx >= 0) args.splice(profIdx, 2);
const ROUNDS = Math.max(1, Number(args[0] ?? 3));
const JAILS = 20;
const QUIET_MS = 5000;

const report = new BenchReport('api-stall');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function health(socketPath: string): Promise<number> {
  const t0 = performance.now();
  const r = await exchange({ socketPath, method: 'GET', path: '/v1/health', timeoutMs: 30_000 });
  if (r.status !== 200) throw new Error(`health answered ${r.status}`);
  return performance.now() - t0;
}

/** Latencies back to back until `done()` says stop. */
async function sampleWhile(socketPath: string, more: () => boolean): Promise<number[]> {
  const out: number[] = [];
  while (more()) out.push(await health(socketPath));
  return out;
}

interface ProfNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time by function, and time under the synchronous calls that block the loop. */
function summarizeProfile(file: string): void {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000);
  const label = (n: ProfNode) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(dist|node_modules)\//, '$1/').replace(/^node:/, '')}:${n.callFrame.lineNumber + 1}`;
  const bySelf = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, ms] of self) {
    const n = byId.get(id)!;
    total += ms;
    if (n.callFrame.functionName === '(idle)') idle += ms;
    bySelf.set(label(n), (bySelf.get(label(n)) ?? 0) + ms);
  }
  // Inclusive time under a few calls that run on the main thread and wait on the kernel.
  const watch: [string, (n: ProfNode) => boolean][] = [
    ['process spawning (ChildProcess.spawn)', (n) => n.callFrame.functionName === 'spawn' && n.callFrame.url.includes('child_process')],
    ['fsyncSync', (n) => n.callFrame.functionName === 'fsyncSync'],
    ['writeFileAtomicSync', (n) => n.callFrame.functionName === 'writeFileAtomicSync'],
    ['recordInAnchor', (n) => n.callFrame.functionName === 'recordInAnchor'],
    ['FileLedger.append', (n) => n.callFrame.functionName === 'append' && n.callFrame.url.includes('file-ledger')],
    ['LeaseFiles.write', (n) => n.callFrame.functionName === 'write' && n.callFrame.url.includes('lease-files')],
    ['other *Sync fs calls', (n) => /Sync$/.test(n.callFrame.functionName) && n.callFrame.functionName !== 'fsyncSync' && (n.callFrame.url === 'node:fs' || n.callFrame.url.endsWith('/fs.js'))],
  ];
  const under = new Map<string, number>();
  for (const [id, ms] of self) {
    const hit = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      for (const [name, is] of watch) if (is(n)) hit.add(name);
    }
    for (const h of hit) under.set(h, (under.get(h) ?? 0) + ms);
  }
  console.log(`daemon CPU profile ${path.basename(file)}: ${(total / 1000).toFixed(2)} s sampled, ${((total - idle) / 1000).toFixed(2)} s busy`);
  for (const [name] of watch) console.log(`  under ${name.padEnd(40)} ${((under.get(name) ?? 0) / 1000).toFixed(3)} s`);
  console.log('  top self time:');
  for (const [name, ms] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`    ${(ms / 1000).toFixed(3).padStart(7)} s  ${name}`);
  for (const [name] of watch) report.value(`profile: s under ${name}`, (under.get(name) ?? 0) / 1000, { unit: 's' });
}

async function main(): Promise<void> {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-as-'));
  await fs.promises.chmod(home, 0o700);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('BRIG_')) env[k] = v;
  env.BRIG_HOME = home;
  if (PROFILE) await fs.promises.mkdir(PROFILE, { recursive: true });
  const nodeArgs = PROFILE ? ['--cpu-prof', '--cpu-prof-dir', PROFILE] : [];
  const d: ChildProcess = spawn(process.execPath, [...nodeArgs, MAIN, 'serve', '--max-concurrent', String(JAILS)], { env, stdio: 'ignore' });
  const sock = path.join(home, 'brig.sock');
  const api = new ApiClient(sock);
  const load = os.loadavg()[0]!;
  const before = PROFILE ? new Set(fs.readdirSync(PROFILE)) : new Set<string>();
  try {
    let gone = false;
    d.once('exit', () => (gone = true));
    for (let i = 0; !(await ApiClient.probe(sock)); i++) {
      if (gone || i > 300) throw new Error(`brig serve (${MAIN}) did not serve`);
      await sleep(100);
    }
    // Warm the loop and the engine connection up with one child first.
    const warm = await api.spawn({ task: 'warm-up', kind: 'command', argv: ['true'], timeout: 60_000 });
    if (!warm.ok) throw warm.error;
    const quietUntil = Date.now() + QUIET_MS;
    const quiet = (await sampleWhile(sock, () => Date.now() < quietUntil)).slice(20);
    const loaded: number[] = [];
    const rounds: number[] = [];
    let ended = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = Date.now();
      let done = false;
      const sampling = sampleWhile(sock, () => !done);
      const runs = await Promise.all(
        Array.from({ length: JAILS }, async (_, i) => {
          const s = await api.spawn({ task: `stall ${r}.${i}`, kind: 'command', argv: ['sh', '-c', 'echo x > /workspace/out/x; sleep 1'], timeout: 300_000, async: true });
          if (!s.ok) throw s.error;
          const w = await api.wait(s.value.id, { timeoutMs: 300_000 });
          if (!w.ok || w.value.status !== 'ended') throw new Error(`run ${s.value.id} did not end`);
          if (w.value.endReason === 'completed') ended++;
          return w.value;
        }),
      );
      done = true;
      loaded.push(...(await sampling));
      rounds.push(Date.now() - t0);
      void runs;
    }
    const q = report.samples('quiet', quiet);
    const l = report.samples(`${JAILS} jails`, loaded, { floor: 'quiet', goal: { max: 50 }, note: 'goal on p99 (≤ 50 ms); the median is the ratio' });
    report.value('p99 under 20 jails', l.p99, { goal: { max: 50 } });
    report.value('load average at start', load, { unit: 'load' });
    const ms = (v: number | null) => (v === null ? '—' : v.toFixed(1)).padStart(7);
    console.log(`GET /v1/health on a real daemon; ${ROUNDS} round(s) of ${JAILS} jails at once (${ended}/${ROUNDS * JAILS} completed; a round took ${rounds.map((x) => (x / 1000).toFixed(1)).join(', ')} s); load average ${load.toFixed(2)} on ${os.cpus().length} cores`);
    for (const [name, f] of [['quiet', q], [`${JAILS} jails`, l]] as const) {
      console.log(`  ${name.padEnd(10)} n ${String(f.n).padStart(5)}  p50 ${ms(f.median)} ms  p99 ${ms(f.p99)} ms  max ${ms(f.max)} ms${f === l && q.median ? `  p50 ×${(l.median! / q.median).toFixed(2)}, p99 ×${(l.p99! / q.p99!).toFixed(2)} of quiet` : ''}`);
    }
    console.log(`  goal: p99 ≤ 50 ms under ${JAILS} jails — ${l.p99 !== null && l.p99 <= 50 ? 'met' : 'NOT met'}`);
  } finally {
    if (d.exitCode === null && d.signalCode === null) {
      const exited = new Promise((r) => d.once('exit', r));
      d.kill('SIGTERM');
      await exited;
    }
    await fs.promises.rm(home, { recursive: true, force: true });
  }
  if (PROFILE) {
    const made = fs.readdirSync(PROFILE).filter((f) => f.endsWith('.cpuprofile') && !before.has(f));
    for (const f of made) summarizeProfile(path.join(PROFILE, f));
  }
}

await main();
