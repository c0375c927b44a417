/**
 * An engine outage against real daemons (`node dist/cli/main.js serve`), each talking to the
 * real engine through a unix-socket proxy the bench controls (test/helpers/engine-proxy.ts):
 *
 * learned   a command child that exits (sleep 2) while the engine refuses every connection
 *           (cut + refused for OUTAGE s plus a random fraction of a second, so the engine's
 *           return does not line up with the watch's 1-s retries), or while it is frozen
 *           (thawed after as long): the
 *           time from the engine's return to the run's end being learned (the record leaves
 *           `running`), and to the end being through (`endedAt`). Floor in the same run: the
 *           same child with no outage, from its exit (its start + 2 s) to its end learned.
 * kill      a kill's answer time while the engine is frozen, against a kill with the engine up.
 * drain     `serve --drain 2` with one live child: SIGTERM to exit, engine frozen, against the
 *           same with the engine up (the floor: the drain, the kill, the collection).
 *
 * Prints figures and ratios; asserts nothing. dist/ must be built.
 *   node --import tsx bench/engine-outage.bench.ts [ROUNDS] [OUTAGE_S]   (default 3, 5)
 */
import { ApiClient } from '../src/client/index.js';
import type { RunRecord } from '../src/runs/index.js';
import { startEngineProxy, type EngineProxy } from '../test/helpers/engine-proxy.js';
import { daemonHome, exitWithin, type DaemonHome, type Serve } from '../test/integration/daemon/serve-proc.js';

import { BenchReport, quantile } from './report.js';

const report = new BenchReport('engine-outage');
const ROUNDS = Math.max(1, Number(process.argv[2] ?? 3));
const OUTAGE_MS = Math.max(3, Number(process.argv[3] ?? 5)) * 1000;
const EXIT_AFTER_S = 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cleanups: (() => Promise<void>)[] = [];
const t = { after: (fn: () => Promise<void>) => void cleanups.push(fn) };

async function until<T>(fn: () => Promise<T | undefined>, what: string, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`never happened: ${what}`);
    await sleep(25);
  }
}

async function running(api: ApiClient, argv: string[]): Promise<RunRecord> {
  const r = await api.spawn({ task: 'bench', kind: 'command', argv, timeout: 300_000, async: true });
  if (!r.ok) throw r.error;
  return until(async () => {
    const cur = await api.get(r.value.id);
    return cur?.status === 'running' ? cur : undefined;
  }, 'running');
}

/** When the record left `running` (polled every 25 ms), and when it says it ended. */
async function learned(api: ApiClient, id: string): Promise<{ learnedAt: number; endedAt: number; rec: RunRecord }> {
  const learnedAt = await until(async () => ((await api.get(id))?.status !== 'running' ? Date.now() : undefined), 'learned');
  const w = await api.wait(id, { timeoutMs: 120_000 });
  if (!w.ok || w.value.status !== 'ended') throw new Error(`run ${id} did not end`);
  return { learnedAt, endedAt: Date.parse(w.value.endedAt!), rec: w.value };
}

const fmt = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  // The report's own quantile (nearest rank): what is printed is the figure the report keeps.
  return `median ${(quantile(s, 0.5) ?? NaN).toFixed(0)} ms (min ${s[0]!.toFixed(0)}, max ${s.at(-1)!.toFixed(0)})`;
};
/** The report's own quantile (nearest rank): a printed median or ratio is the one the report keeps. */
const median = (xs: number[]) => quantile(xs, 0.5) ?? NaN;

async function served(h: DaemonHome, proxy: EngineProxy, args: string[] = []): Promise<{ serve: Serve; api: ApiClient }> {
  const serve = await h.serve(args, { DOCKER_HOST: proxy.dockerHost });
  return { serve, api: new ApiClient(serve.socket) };
}

async function learnedPhase(): Promise<void> {
  const h = await daemonHome(t);
  const proxy = await startEngineProxy(t);
  const { serve, api } = await served(h, proxy);
  const floor: number[] = [];
  const refused = { learned: [] as number[], ended: [] as number[] };
  const frozen = { learned: [] as number[], ended: [] as number[] };
  const argv = ['sh', '-c', `sleep ${EXIT_AFTER_S}; echo x > /workspace/out/x`];
  for (let i = 0; i < ROUNDS; i++) {
    const a = await running(api, argv);
    const l = await learned(api, a.id);
    floor.push(l.learnedAt - (Date.parse(a.startedAt!) + EXIT_AFTER_S * 1000));

    const b = await running(api, argv);
    proxy.refuse(OUTAGE_MS + Math.floor(Math.random() * 1000));
    await until(async () => proxy.backAt ?? undefined, 'back');
    const lb = await learned(api, b.id);
    if (lb.rec.endReason !== 'completed' || lb.rec.outputFiles !== 1) throw new Error(`refused: ${JSON.stringify(lb.rec)}`);
    refused.learned.push(lb.learnedAt - proxy.backAt!);
    refused.ended.push(lb.endedAt - proxy.backAt!);

    const c = await running(api, argv);
    proxy.freeze();
    await sleep(OUTAGE_MS + Math.floor(Math.random() * 1000));
    proxy.thaw();
    const lc = await learned(api, c.id);
    if (lc.rec.endReason !== 'completed') throw new Error(`frozen: ${JSON.stringify(lc.rec)}`);
    frozen.learned.push(lc.learnedAt - proxy.backAt!);
    frozen.ended.push(lc.endedAt - proxy.backAt!);
  }
  report.samples('end learned, no outage', floor);
  report.samples('end learned after the engine refused', refused.learned, { floor: 'end learned, no outage' });
  report.samples('end learned after the engine froze', frozen.learned, { floor: 'end learned, no outage' });
  console.log(`learned   no outage: from the child's exit to its end learned: ${fmt(floor)}`);
  console.log(`          refused ${OUTAGE_MS / 1000} s: engine back → end learned ${fmt(refused.learned)}; → ended ${fmt(refused.ended)} (${(median(refused.learned) / median(floor)).toFixed(1)}× the floor)`);
  console.log(`          frozen ${OUTAGE_MS / 1000} s:  engine back → end learned ${fmt(frozen.learned)}; → ended ${fmt(frozen.ended)}`);
  await serve.signal('SIGTERM');
}

async function killPhase(): Promise<void> {
  const h = await daemonHome(t);
  const proxy = await startEngineProxy(t);
  const { serve, api } = await served(h, proxy);
  const up: number[] = [];
  const frozen: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const a = await running(api, ['sleep', '120']);
    let at = Date.now();
    await api.kill(a.id, { confirm: true });
    up.push(Date.now() - at);
    const b = await running(api, ['sleep', '120']);
    proxy.freeze();
    at = Date.now();
    const k = await api.kill(b.id, { confirm: true });
    frozen.push(Date.now() - at);
    if (!k.ok || k.value.pendingEnd?.reason !== 'killed') throw new Error(`frozen kill: ${JSON.stringify(k)}`);
    proxy.thaw();
    await api.wait(b.id, { timeoutMs: 60_000 });
  }
  report.samples('kill answered, engine up', up);
  report.samples('kill answered, engine frozen', frozen, { floor: 'kill answered, engine up' });
  console.log(`kill      engine up: ${fmt(up)}; engine frozen: answered in ${fmt(frozen)}`);
  await serve.signal('SIGTERM');
}

async function drainPhase(): Promise<void> {
  const up: number[] = [];
  const frozen: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    for (const freeze of [false, true]) {
      const h = await daemonHome(t);
      const proxy = await startEngineProxy(t);
      const { serve, api } = await served(h, proxy, ['--drain', '2']);
      await running(api, ['sleep', '120']);
      if (freeze) proxy.freeze();
      const at = Date.now();
      serve.proc.kill('SIGTERM');
      const exit = await exitWithin(serve, 120_000);
      if (!exit) throw new Error('serve did not exit');
      (freeze ? frozen : up).push(exit.at - at);
      proxy.thaw();
    }
  }
  report.samples('drain 2 s, SIGTERM → exit, engine up', up);
  report.samples('drain 2 s, SIGTERM → exit, engine frozen', frozen, { floor: 'drain 2 s, SIGTERM → exit, engine up' });
  console.log(`drain     --drain 2, one live child: SIGTERM → exit, engine up ${fmt(up)}; engine frozen ${fmt(frozen)} (${(median(frozen) / median(up)).toFixed(2)}× the engine-up stop)`);
}

try {
  await report.phase('learned', learnedPhase);
  await report.phase('kill', killPhase);
  await report.phase('drain', drainPhase);
  if (report.failures.length > 0) process.exitCode = 1;
} finally {
  for (const fn of cleanups.reverse()) await fn().catch(() => {});
}
