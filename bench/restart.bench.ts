/**
 * A daemon restart against real daemons (`node dist/cli/main.js serve`) on the real engine:
 * LIVE command children running and a warm pool of 2 (its slots are leftovers to sweep), the
 * daemon SIGKILLed, then started again:
 *
 * served      from the new process's start to its API answering `/v1/health` (what a child's
 *             broker and a caller wait for: its live children's brokers are open by then);
 * reconciled  from the same start to `serve --json` printing what it reconciled (the dead
 *             supervisor's pool swept, ghosts ended, requeues done) — the work that no longer
 *             holds the serving;
 * floor       a fresh daemon's start on an empty home to its API answering.
 *
 * Prints figures; asserts nothing. dist/ must be built.
 *   node --import tsx bench/restart.bench.ts [ROUNDS] [LIVE]   (default 2, 8)
 */
import { ApiClient } from '../src/client/index.js';
import { daemonHome, type DaemonHome } from '../test/integration/daemon/serve-proc.js';
import { quantile } from './report.js';

const ROUNDS = Math.max(1, Number(process.argv[2] ?? 2));
const LIVE = Math.max(1, Number(process.argv[3] ?? 8));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cleanups: (() => Promise<void>)[] = [];
const t = { after: (fn: () => Promise<void>) => void cleanups.push(fn) };

async function until(fn: () => Promise<boolean> | boolean, what: string, ms = 300_000): Promise<number> {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return Date.now();
    if (Date.now() > end) throw new Error(`never happened: ${what}`);
    await sleep(20);
  }
}

/** Starts `brig serve --json …` and times it: to serving, and to its reconcile report. */
async function timedStart(h: DaemonHome, args: string[]): Promise<{ servedMs: number; reconciledMs: number; stop: (sig: NodeJS.Signals) => Promise<void> }> {
  const t0 = Date.now();
  const p = h.start(['serve', '--json', ...args]);
  const served = await until(() => ApiClient.probe(h.paths.socket), 'serving');
  const reconciled = await until(() => p.stdout().includes('\n'), 'reconciled');
  return { servedMs: served - t0, reconciledMs: reconciled - t0, stop: (sig) => p.signal(sig) };
}

const fmt = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  // The report's own quantile (nearest rank): what is printed is the figure the report keeps.
  return `median ${(quantile(s, 0.5) ?? NaN).toFixed(0)} ms (min ${s[0]!.toFixed(0)}, max ${s.at(-1)!.toFixed(0)})`;
};

async function main(): Promise<void> {
  const floor: number[] = [];
  const served: number[] = [];
  const reconciled: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const h = await daemonHome(t);
    const first = await timedStart(h, ['--warm', '2', '--max-concurrent', String(LIVE)]);
    floor.push(first.servedMs);
    const api = new ApiClient(h.paths.socket);
    const ids: string[] = [];
    for (let k = 0; k < LIVE; k++) {
      const r = await api.spawn({ task: `live ${k}`, kind: 'command', argv: ['sleep', '600'], async: true });
      if (!r.ok) throw r.error;
      ids.push(r.value.id);
    }
    await until(async () => (await Promise.all(ids.map((id) => api.get(id)))).every((r) => r?.status === 'running'), 'all running');
    await api.close();
    await first.stop('SIGKILL');
    const second = await timedStart(h, ['--max-concurrent', String(LIVE)]);
    served.push(second.servedMs);
    reconciled.push(second.reconciledMs);
    console.log(`round ${i + 1}: fresh start served in ${first.servedMs} ms; restart with ${LIVE} live children and a pool of 2 served in ${second.servedMs} ms, reconciled in ${second.reconciledMs} ms`);
    await second.stop('SIGTERM');
  }
  console.log(`floor (fresh start, empty home) to serving: ${fmt(floor)}`);
  console.log(`restart to serving:                      ${fmt(served)}`);
  console.log(`restart to reconciled:                   ${fmt(reconciled)}`);
}

try {
  await main();
} finally {
  for (const c of cleanups.reverse()) await c().catch(() => {});
}
