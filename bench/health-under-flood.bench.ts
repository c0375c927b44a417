/**
 * The daemon's API while it works: GET /v1/health answered by a real `brig serve` (dist/) with
 * 5 real children running, one of which floods its broker socket from inside its jail with
 * bad lines as fast as it can (reconnecting whenever it is cut off, as a hostile child would).
 *
 *   quiet     no child at all: the floor, measured in the same run
 *   busy      4 children each spinning half a CPU, with a progress call every 500 ms
 *   flooding  the same 4 plus the flooder
 *
 * Each phase samples health back to back (one request at a time, a fresh connection each, as
 * a CLI command would) for PHASE_MS and prints p50/p99/max and the ratio to quiet. The broker
 * ends a flooding run within about a second, so the flooding phase keeps the samples sent
 * between the flooder's start and its end. Needs the
 * engine and `make build`. Printed, never asserted.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { exchange } from '../src/client/wire.js';
import { BenchReport } from './report.js';

const run = promisify(execFile);
const MAIN = path.resolve(import.meta.dirname, '../dist/cli/main.js');
const PHASE_MS = Number(process.argv[2] ?? 5000);

// Busy: half a CPU of spinning each, a progress call every second (a step each: 50 steps is the default budget).
const BUSY = `export default async function (brig) {
  for (let i = 0; i < 48; i++) {
    const until = Date.now() + 1000;
    while (Date.now() < until) { const t = Date.now() + 5; while (Date.now() < t); await new Promise((r) => setTimeout(r, 5)); }
    await brig.progress('tick ' + i);
  }
}`;
const FLOOD = `import net from 'node:net';
export default async function () {
  const line = Buffer.from('not json\\n'.repeat(4096));
  const until = Date.now() + 600000;
  let sent = 0, cut = 0;
  while (Date.now() < until) {
    await new Promise((resolve) => {
      const s = net.connect('/run/brig/broker.sock');
      const pump = () => { while (s.writable && s.write(line)) sent += line.length; };
      s.on('connect', pump);
      s.on('drain', pump);
      s.on('error', () => {});
      s.on('close', () => { cut++; resolve(); });
    });
  }
  return { sent, cut };
}`;

const report = new BenchReport('health-under-flood');

/** Latencies back to back for ms, each with the wall-clock time it was sent at. */
async function timed(socketPath: string, ms: number): Promise<{ at: number; ms: number }[]> {
  const out: { at: number; ms: number }[] = [];
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const at = Date.now();
    const t0 = performance.now();
    const r = await exchange({ socketPath, method: 'GET', path: '/v1/health', timeoutMs: 10_000 });
    if (r.status !== 200) throw new Error(`health answered ${r.status}`);
    out.push({ at, ms: performance.now() - t0 });
  }
  return out;
}

async function sample(socketPath: string): Promise<number[]> {
  const out = (await timed(socketPath, PHASE_MS)).map((x) => x.ms);
  return out.slice(Math.min(20, Math.floor(out.length / 10))); // the first answers warm the loop up
}

async function main(): Promise<void> {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-hf-'));
  await fs.promises.chmod(home, 0o700);
  const env = { ...process.env, BRIG_HOME: home };
  const sock = path.join(home, 'brig.sock');
  const d: ChildProcess = spawn(process.execPath, [MAIN, 'serve'], { env, stdio: 'ignore' });
  const brig = (...a: string[]) => run(process.execPath, [MAIN, ...a], { env });
  try {
    for (let i = 0; i < 200 && !(await exchange({ socketPath: sock, method: 'GET', path: '/v1/health', timeoutMs: 500 }).then(() => true, () => false)); i++) await new Promise((r) => setTimeout(r, 100));
    const scripts = path.join(home, 'busy.mjs');
    await fs.promises.writeFile(scripts, BUSY);
    await fs.promises.writeFile(path.join(home, 'flood.mjs'), FLOOD);
    const phases: [string, number[]][] = [['quiet', await sample(sock)]];
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((JSON.parse((await brig('spawn', '--async', '--json', '--task', `busy ${i}`, '--timeout', '600', '--max-steps', '50', '--script', scripts)).stdout) as { runId: string }).runId);
    await new Promise((r) => setTimeout(r, 2000));
    phases.push(['busy (4 children)', await sample(sock)]);
    // The broker ends a flooding run within about a second: sample from its spawn on, then keep
    // the samples sent while it was running (its startedAt to its endedAt).
    const spawning = brig('spawn', '--async', '--json', '--task', 'flood', '--timeout', '600', '--script', path.join(home, 'flood.mjs'));
    // Sampled until the flooder has ended, however long its start takes on a loaded machine
    // (a fixed 3-s window once ended before the flooder started: no samples).
    const during: { at: number; ms: number }[] = [];
    let flooderEnded = false;
    const sampling = (async () => {
      const bound = Date.now() + 120_000;
      while (!flooderEnded && Date.now() < bound) during.push(...(await timed(sock, 250)));
    })();
    const flooder = (JSON.parse((await spawning).stdout) as { runId: string }).runId;
    ids.push(flooder);
    await brig('wait', flooder, '--timeout', '60').catch(() => {});
    flooderEnded = true;
    await sampling;
    const listed = JSON.parse((await brig('list', '--json')).stdout) as { runs: { id: string; status: string; endReason: string | null; killedBy: string | null; startedAt: string | null; endedAt: string | null; error: { code: string } | null }[] };
    const running = listed.runs.filter((r) => r.status === 'running').length;
    const f = listed.runs.find((r) => r.id === flooder)!;
    const from = Date.parse(f.startedAt ?? '');
    const to = f.endedAt ? Date.parse(f.endedAt) : Infinity;
    phases.push(['flooding (4 + 1 flooder)', during.filter((x) => x.at >= from && x.at <= to).map((x) => x.ms)]);
    const floodInfo = f.status === 'ended' ? `the flooder ran ${((to - from) / 1000).toFixed(2)} s and ended ${f.endReason}${f.killedBy ? ` by ${f.killedBy}` : ''}${f.error ? ` (${f.error.code})` : ''}` : 'the flooder was still flooding';
    console.log(`GET /v1/health on a real daemon, back to back for ${PHASE_MS} ms per phase (${running} children running at the end; ${floodInfo})`);
    for (const [i, [name, xs]] of phases.entries()) {
      const f = report.samples(name, xs, i === 0 ? {} : { floor: 'quiet', goal: { ratioMax: 2 }, ...(xs.length === 0 ? { note: `no samples: ${floodInfo}` } : {}) });
      const ratio = f.median !== null && report.median('quiet') ? ` p50 ×${(f.median / report.median('quiet')!).toFixed(2)} of quiet` : '';
      const ms = (v: number | null) => (v === null ? '—' : v.toFixed(2)).padStart(6);
      console.log(`  ${name.padEnd(26)} n ${String(f.n).padStart(5)}  p50 ${ms(f.median)} ms  p99 ${ms(f.p99)} ms  max ${ms(f.max)} ms ${ratio}${f.n === 0 ? ` (${f.note})` : ''}`);
    }
    for (const id of ids) await brig('kill', id, '--yes').catch(() => brig('kill', id).catch(() => {}));
    const led = await brig('audit', 'query', "SELECT count(*) AS n FROM ledger WHERE type LIKE 'broker.%'", '--json').then((r) => r.stdout.trim(), () => 'n/a');
    console.log(`  broker ledger lines after the flood: ${led}`);
  } finally {
    const exited = new Promise((r) => d.once('exit', r));
    d.kill('SIGTERM');
    await exited;
    await fs.promises.rm(home, { recursive: true, force: true });
  }
}

await main();
