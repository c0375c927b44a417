/**
 * The warm pool against the cold path and the raw engine, in the same run, same child image
 * (brig's own), through real daemons (`startDaemon`, the HTTP API on its unix socket):
 *
 * first-instruction  from the spawn request to the child's first instruction: the child runs
 *                    `touch /tmp/t; stat -c %y /tmp/t` and the file's nanosecond mtime
 *                    (the kernel's CLOCK_REALTIME, the host's clock) is compared with the
 *                    moment the request was sent. Raw floors: `docker run` of the same, and
 *                    the engine API (create, attach, start; no hardening, no volume).
 * round-trip         a trivial synchronous child (`true`): POST /v1/runs, then GET its
 *                    envelope (/v1/runs/RUN/result). Raw floors: `docker run --rm … true`,
 *                    and the engine API's create, start, wait, remove.
 * batch              50 `true` children, 5 clients at once, against
 *                    `xargs -P5` of `docker run --rm --network none IMAGE true`; then
 *                    200 at 10 (issue 26: ≤ ×0.12), pooled only, against `xargs -P10`.
 *
 * pooled = `--warm 5` (each latency round waits until the pool refilled, so a measurement
 * never overlaps a refill); cold = the same daemon without a pool. Prints p50/p95 and ratios;
 * asserts nothing.
 *   node --import tsx bench/warm.bench.ts [ROUNDS]     (default 20)
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { ApiClient } from '../src/client/index.js';
import { loadConfig } from '../src/config/index.js';
import { startDaemon, type Daemon } from '../src/daemon/index.js';
import { DockerJailDriver, ownerForHome } from '../src/jail/index.js';
import { splitTiming } from '../src/index.js';

const docker = new DockerJailDriver({ owner: `bench-warm-${process.pid}` }).docker;

const run = promisify(execFile);
const N = Math.max(10, Number(process.argv[2] ?? 20));
import { BenchReport, quantile, type Goal } from './report.js';

const report = new BenchReport('warm');
const BATCH = 50;
const CONC = 5;
const BIG = 200;
const BIG_CONC = 10;
const WARM = 5;

/** The report's own quantile (nearest rank): what is printed is the figure the report keeps. */
const pct = (xs: number[], p: number) => quantile(xs, p) ?? NaN;
const fmt = (x: number) => x.toFixed(1).padStart(8);
const nowMs = () => performance.timeOrigin + performance.now();

/** `2026-12-01 14:37:10.683006811 +0000` → epoch ms with the fraction. */
function statTime(line: string): number {
  const m = /(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)\.(\d{1,9}) ([+-]\d{4})/.exec(line);
  if (!m) throw new Error(`no timestamp in ${JSON.stringify(line)}`);
  const base = Date.parse(`${m[1]}T${m[2]}${m[4]!.slice(0, 3)}:${m[4]!.slice(3)}`);
  return base + Number(`0.${m[3]}`) * 1000;
}

const FIRST = ['sh', '-c', 'touch /tmp/t; stat -c %y /tmp/t'];

async function daemon(tag: string, warm: number): Promise<{ d: Daemon; home: string; api: ApiClient }> {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), `brig-warm-${tag}-`));
  await fs.promises.chmod(home, 0o700);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { ...(warm > 0 ? { warm } : {}), settings: { maxRunsPerTree: 10_000, maxQueued: 500, maxConcurrent: BIG_CONC } });
  // The pool starts filling once the start-up sweep is done (the daemon serves before).
  await d.reconciled;
  await d.composed.warm?.filled(120_000);
  return { d, home, api: new ApiClient(d.socketPath) };
}

async function close(x: { d: Daemon; home: string; api: ApiClient }): Promise<void> {
  await x.api.close();
  await x.d.shutdown({ drainMs: 0 }).catch(() => {});
  await new DockerJailDriver({ owner: ownerForHome(x.home) }).sweep(() => false).catch(() => {});
  await fs.promises.rm(x.home, { recursive: true, force: true });
}

async function firstInstruction(api: ApiClient): Promise<number> {
  const t0 = nowMs();
  const r = await api.spawn({ task: 'first instruction', kind: 'command', argv: FIRST });
  if (!r.ok || r.value.endReason !== 'completed') throw new Error(`spawn failed: ${JSON.stringify(r)}`);
  return statTime(r.value.stdoutTail ?? '') - t0;
}

async function roundTrip(api: ApiClient): Promise<{ ms: number; pooled: boolean; id: string }> {
  const t0 = performance.now();
  const r = await api.spawn({ task: 'trivial', kind: 'command', argv: ['true'] });
  if (!r.ok || r.value.endReason !== 'completed') throw new Error(`spawn failed: ${JSON.stringify(r)}`);
  const env = await api.route('result', { params: { run: r.value.id } });
  if (!env.ok) throw new Error(`no envelope: ${JSON.stringify(env)}`);
  return { ms: performance.now() - t0, pooled: r.value.jail?.pooled !== undefined, id: r.value.id };
}

/** The raw engine API, no hardening, no volume, NetworkDisabled: create, start, wait, remove. */
async function apiRun(image: string, argv: string[]): Promise<{ ms: number; stdout: string; t0: number }> {
  const t0 = nowMs();
  const start = performance.now();
  const c = await docker.createContainer({ Image: image, Cmd: argv, User: '65534:65534', NetworkDisabled: true, HostConfig: { NetworkMode: 'none' } });
  const stream = (await c.attach({ stream: true, stdout: true, stderr: true })) as NodeJS.ReadableStream;
  let stdout = '';
  const out = new PassThrough().on('data', (b: Buffer) => (stdout += b.toString('utf8')));
  docker.modem.demuxStream(stream, out, new PassThrough().resume());
  await c.start();
  await c.wait();
  await c.remove({ force: true });
  return { ms: performance.now() - start, stdout, t0 };
}

async function rawFirst(image: string): Promise<number> {
  const t0 = nowMs();
  const { stdout } = await run('docker', ['run', '--rm', '--network', 'none', '-u', '65534:65534', image, ...FIRST]);
  return statTime(stdout) - t0;
}

async function rawTrue(image: string): Promise<number> {
  const t0 = performance.now();
  await run('docker', ['run', '--rm', '--network', 'none', '-u', '65534:65534', image, 'true']);
  return performance.now() - t0;
}

async function batch(api: ApiClient, n = BATCH, conc = CONC): Promise<{ ms: number; pooled: number }> {
  let next = 0;
  let pooled = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (next < n) {
        next++;
        const r = await api.spawn({ task: 'batch', kind: 'command', argv: ['true'] });
        if (!r.ok || r.value.endReason !== 'completed') throw new Error(`spawn failed: ${JSON.stringify(r)}`);
        if (r.value.jail?.pooled) pooled++;
      }
    }),
  );
  return { ms: performance.now() - t0, pooled };
}

async function rawBatch(image: string, n = BATCH, conc = CONC): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const p = spawn('sh', ['-c', `seq ${n} | xargs -P${conc} -I{} docker run --rm --network none -u 65534:65534 ${image} true`], { stdio: 'ignore' });
    p.on('exit', (c) => (c === 0 ? resolve() : reject(new Error(`xargs exited ${c}`))));
  });
  return performance.now() - t0;
}

/** Where a pooled round trip's time went: each phase of the runs' own timing (brig explain --timing), p50 and p95. */
async function phases(api: ApiClient, ids: string[]): Promise<void> {
  const by = new Map<string, number[]>();
  for (const id of ids) {
    const t = (await api.get(id))?.timing;
    if (!t) continue;
    const s = splitTiming(t);
    for (const p of [...s.phases, { phase: 'total (supervisor)', ms: s.totalMs }]) by.set(p.phase, [...(by.get(p.phase) ?? []), p.ms]);
  }
  console.log(`${'pooled round trip, by phase'.padEnd(28)}     p50     p95   (ms, ${ids.length} runs, the supervisor's monotonic marks)`);
  for (const [phase, v] of by) {
    report.samples(`round trip, pooled: ${phase}`, v);
    console.log(`${phase.padEnd(28)}${fmt(pct(v, 0.5))}${fmt(pct(v, 0.95))}`);
  }
}

async function main(): Promise<void> {
  const pooled = await daemon('pooled', WARM);
  const cold = await daemon('cold', 0);
  const image = await new DockerJailDriver({ owner: ownerForHome(pooled.home) }).ensureImage();
  const xs = { pf: [] as number[], cf: [] as number[], rf: [] as number[], af: [] as number[], pr: [] as number[], cr: [] as number[], rr: [] as number[], ar: [] as number[] };
  let missed = 0;
  const pooledIds: string[] = [];
  try {
    // Warm-up, then round-robin so load from elsewhere hits every variant alike.
    await firstInstruction(pooled.api);
    await firstInstruction(cold.api);
    await rawFirst(image);
    for (let i = 0; i < N; i++) {
      await pooled.d.composed.warm!.filled();
      xs.pf.push(await firstInstruction(pooled.api));
      xs.cf.push(await firstInstruction(cold.api));
      xs.rf.push(await rawFirst(image));
      const a = await apiRun(image, FIRST);
      xs.af.push(statTime(a.stdout) - a.t0);
      // The previous runs' releases (after their envelopes) done and the pool full: a round trip
      // measured alone, as each floor's is.
      await pooled.d.composed.supervisor.idle();
      await pooled.d.composed.warm!.filled();
      const p = await roundTrip(pooled.api);
      if (!p.pooled) missed++;
      xs.pr.push(p.ms);
      if (p.pooled) pooledIds.push(p.id);
      xs.cr.push((await roundTrip(cold.api)).ms);
      xs.rr.push(await rawTrue(image));
      xs.ar.push((await apiRun(image, ['true'])).ms);
    }
    // Floors first, then each figure against its floor (issue 26's goals on the pooled round trip).
    report.samples('first instruction, docker run', xs.rf);
    report.samples('round trip, docker run --rm', xs.rr);
    const fig = (name: string, v: number[], floor: string, goal?: Goal) => report.samples(name, v, { floor, headline: true, ...(goal ? { goal } : {}) });
    fig('first instruction, pooled', xs.pf, 'first instruction, docker run');
    fig('first instruction, cold', xs.cf, 'first instruction, docker run');
    fig('first instruction, engine API', xs.af, 'first instruction, docker run');
    fig('round trip, pooled', xs.pr, 'round trip, docker run --rm', { max: 30, ratioMax: 0.15 });
    fig('round trip, cold', xs.cr, 'round trip, docker run --rm');
    fig('round trip, engine API', xs.ar, 'round trip, docker run --rm');
    report.value('pooled round trips that went cold', missed, { unit: 'runs' });
    const row = (name: string, v: number[], floor: number[]) => console.log(`${name.padEnd(28)}${fmt(pct(v, 0.5))}${fmt(pct(v, 0.95))}   ×${(pct(v, 0.5) / pct(floor, 0.5)).toFixed(2)}`);
    console.log(`machine: ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.release()}; ${N} rounds; pool ${WARM} per shape`);
    console.log(`${'first instruction (ms)'.padEnd(28)}     p50     p95   vs docker run`);
    row('pooled', xs.pf, xs.rf);
    row('cold', xs.cf, xs.rf);
    row('docker run (raw)', xs.rf, xs.rf);
    row('engine API (raw)', xs.af, xs.rf);
    console.log(`${'trivial sync round trip'.padEnd(28)}     p50     p95   vs docker run --rm true`);
    row('pooled', xs.pr, xs.rr);
    row('cold', xs.cr, xs.rr);
    row('docker run --rm (raw)', xs.rr, xs.rr);
    row('engine API (raw)', xs.ar, xs.rr);
    if (missed > 0) console.log(`(${missed} pooled round trips found no ready slot and went cold)`);
    await phases(pooled.api, pooledIds);

    const raw = await rawBatch(image);
    await pooled.d.composed.warm!.filled();
    const pb = await batch(pooled.api);
    const cb = await batch(cold.api);
    report.value(`${BATCH} children at ${CONC}, xargs docker run`, raw);
    report.value(`${BATCH} children at ${CONC}, pooled`, pb.ms, { floor: `${BATCH} children at ${CONC}, xargs docker run`, headline: true });
    report.value(`${BATCH} children at ${CONC}, cold`, cb.ms, { floor: `${BATCH} children at ${CONC}, xargs docker run` });
    console.log(`${BATCH} children at concurrency ${CONC} (ms)       total   vs xargs -P${CONC} docker run`);
    console.log(`${'pooled'.padEnd(28)}${fmt(pb.ms)}   ×${(pb.ms / raw).toFixed(2)}   (${pb.pooled} of ${BATCH} served warm)`);
    console.log(`${'cold'.padEnd(28)}${fmt(cb.ms)}   ×${(cb.ms / raw).toFixed(2)}`);
    console.log(`${'xargs docker run (raw)'.padEnd(28)}${fmt(raw)}`);

    // Issue 26's fleet figure: 200 trivial children at concurrency 10, pooled, against xargs -P10.
    const raw200 = await rawBatch(image, BIG, BIG_CONC);
    await pooled.d.composed.warm!.filled();
    const pb200 = await batch(pooled.api, BIG, BIG_CONC);
    report.value(`${BIG} children at ${BIG_CONC}, xargs docker run`, raw200);
    report.value(`${BIG} children at ${BIG_CONC}, pooled`, pb200.ms, { floor: `${BIG} children at ${BIG_CONC}, xargs docker run`, headline: true, goal: { ratioMax: 0.12 } });
    console.log(`${BIG} children at concurrency ${BIG_CONC} (ms)      total   vs xargs -P${BIG_CONC} docker run`);
    console.log(`${'pooled'.padEnd(28)}${fmt(pb200.ms)}   ×${(pb200.ms / raw200).toFixed(2)}   (${pb200.pooled} of ${BIG} served warm)`);
    console.log(`${'xargs docker run (raw)'.padEnd(28)}${fmt(raw200)}`);
  } finally {
    await close(pooled);
    await close(cold);
  }
}

await main();
