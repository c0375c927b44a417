/**
 * An agent child's start (issue 26): from the spawn request to its first model call, pooled
 * (a warm slot whose agent runtime is pre-started: node and the runtime's modules loaded before
 * the run asks, jail/docker/pool-waiter.ts) against cold (a jail made for the run, node started
 * in it), through real supervisors (`compose`) and the scripted model server on loopback.
 *
 * The clock stops when the scripted server receives the run's first completion request: the
 * broker's `llm.complete` reached the supervisor, which preflighted it and sent it on over
 * loopback (an upper bound of "at the supervisor" by that hop). The agent finishes in that turn.
 * Floor: `docker run --rm --network none IMAGE node -e …` — node's first instruction in a fresh
 * container of the same image (what any cold agent pays before its runtime loads).
 *
 *   node --import tsx bench/agent-first-call.bench.ts [ROUNDS]     (default 20)
 *
 * Prints p50/p95 and ratios; asserts nothing. Needs dist/child built (the image's runtime).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../src/config/index.js';
import { compose, type Composed } from '../src/daemon/index.js';
import { DockerJailDriver, ownerForHome } from '../src/jail/index.js';
import { splitTiming } from '../src/index.js';
import { startModelServer, toolCallTurn, type ModelServer } from '../test/helpers/model-server.js';
import { BenchReport, quantile } from './report.js';

const run = promisify(execFile);
const N = Math.max(5, Number(process.argv[2] ?? 20));
const WARM = 2;
const report = new BenchReport('agent-first-call');

/** The report's own quantile (nearest rank): what is printed is the figure the report keeps. */
const pct = (xs: number[], p: number) => quantile(xs, p) ?? NaN;
const fmt = (x: number) => x.toFixed(1).padStart(8);

/** The scripted server, with the moment (performance.now) each request arrived. */
async function modelServer(): Promise<{ m: ModelServer; arrivals: number[] }> {
  const arrivals: number[] = [];
  const m = await startModelServer({
    script: () => {
      arrivals.push(performance.now());
      return toolCallTurn('finish', { answer: 'ok' }, { usage: { input: 10, output: 5 } });
    },
  });
  return { m, arrivals };
}

async function supervisor(tag: string, m: ModelServer, warm: number): Promise<{ c: Composed; home: string }> {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), `brig-bafc-${tag}-`));
  await fs.promises.chmod(home, 0o700);
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'stand-in', BRIG_MODEL_CONTEXT_WINDOW: '32000' });
  const c = await compose(cfg, { reconcile: true, ...(warm > 0 ? { warm } : {}), settings: { maxRunsPerTree: 10_000 } });
  await c.supervisor.start();
  await c.warm?.start();
  return { c, home };
}

async function close(x: { c: Composed; home: string }): Promise<void> {
  await x.c.close().catch(() => {});
  await new DockerJailDriver({ owner: ownerForHome(x.home) }).sweep(() => false).catch(() => {});
  await fs.promises.rm(x.home, { recursive: true, force: true });
}

/** One agent run: ms from the request to its first model call, and whether a pre-started runtime served it. */
async function firstCall(c: Composed, arrivals: number[]): Promise<{ ms: number; pooled: boolean; prestarted: boolean; id: string }> {
  const before = arrivals.length;
  const t0 = performance.now();
  const r = await c.supervisor.spawn({ task: 'say ok', kind: 'agent', agent: 'general' });
  if (!r.ok || r.value.endReason !== 'completed') throw new Error(`the agent failed: ${r.ok ? `${r.value.error?.message} ${r.value.stderrTail}` : r.error.message}`);
  const at = arrivals[before];
  if (at === undefined) throw new Error('the agent made no model call');
  const pooled = r.value.jail?.pooled;
  return { ms: at - t0, pooled: pooled !== undefined, prestarted: pooled?.prestarted === true, id: r.value.id };
}

async function rawNode(image: string): Promise<number> {
  const t0 = performance.timeOrigin + performance.now();
  const { stdout } = await run('docker', ['run', '--rm', '--network', 'none', '-u', '65534:65534', image, '/opt/brig/bin/node', '-e', 'console.log(performance.timeOrigin + performance.now())']);
  return Number(stdout.trim()) - t0;
}

async function main(): Promise<void> {
  const { m, arrivals } = await modelServer();
  const pooled = await supervisor('pooled', m, WARM);
  const cold = await supervisor('cold', m, 0);
  const image = await new DockerJailDriver({ owner: ownerForHome(pooled.home) }).ensureImage();
  const xs = { p: [] as number[], c: [] as number[], r: [] as number[] };
  let notPrestarted = 0;
  const phases = new Map<string, number[]>();
  try {
    // Warm-up: the first operator agent spawn teaches the pool its shape (an agent-ready one).
    await firstCall(pooled.c, arrivals);
    await firstCall(cold.c, arrivals);
    await rawNode(image);
    for (let i = 0; i < N; i++) {
      // Each pooled round measured alone: the previous run released and the pool full again.
      await pooled.c.supervisor.idle();
      await pooled.c.warm!.filled(120_000);
      const p = await firstCall(pooled.c, arrivals);
      if (!p.prestarted) notPrestarted++;
      xs.p.push(p.ms);
      // Where it went: the supervisor's marks up to the child's start, the rest until the model call.
      await pooled.c.supervisor.idle();
      const t = (await pooled.c.supervisor.get(p.id))?.timing;
      if (t) {
        const split = splitTiming(t).phases;
        const upto = split.findIndex((x) => x.phase === 'first instruction');
        let before = 0;
        for (const x of split.slice(0, upto + 1)) {
          before += x.ms;
          phases.set(x.phase, [...(phases.get(x.phase) ?? []), x.ms]);
        }
        phases.set('started → first llm.complete at the server', [...(phases.get('started → first llm.complete at the server') ?? []), p.ms - before]);
      }
      await cold.c.supervisor.idle();
      xs.c.push((await firstCall(cold.c, arrivals)).ms);
      xs.r.push(await rawNode(image));
    }
    report.samples('docker run: node first instruction', xs.r);
    report.samples('agent child: request → first llm.complete, pooled', xs.p, { floor: 'docker run: node first instruction', headline: true, goal: { max: 20 } });
    report.samples('agent child: request → first llm.complete, cold', xs.c, { floor: 'docker run: node first instruction' });
    report.value('pooled agent runs not served by a pre-started runtime', notPrestarted, { unit: 'runs' });
    const row = (name: string, v: number[]) => console.log(`${name.padEnd(34)}${fmt(pct(v, 0.5))}${fmt(pct(v, 0.95))}   ×${(pct(v, 0.5) / pct(xs.r, 0.5)).toFixed(2)}`);
    console.log(`machine: ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.release()}; ${N} rounds; pool ${WARM} per shape`);
    console.log(`${'request → first llm.complete (ms)'.padEnd(34)}     p50     p95   vs docker run node`);
    row('agent, pooled', xs.p);
    row('agent, cold', xs.c);
    row('docker run node (raw floor)', xs.r);
    console.log(`${'pooled, by phase'.padEnd(34)}     p50     p95`);
    for (const [name, v] of phases) {
      report.samples(`agent child, pooled: ${name}`, v);
      console.log(`${name.padEnd(34)}${fmt(pct(v, 0.5))}${fmt(pct(v, 0.95))}`);
    }
    if (notPrestarted > 0) console.log(`(${notPrestarted} pooled rounds were not served by a pre-started runtime)`);
  } finally {
    await close(pooled);
    await close(cold);
    await m.close();
  }
}

await main();
