/**
 * bench/slice-fairness: the operator's drill-in latency with a hostile child vs a quiet one.
 *
 *   quiet    the operator's `SELECT 1` (RefService.sql) and `jq .x`, one after another
 *   hostile  the same while one child floods: 16 loops, each calling refs.sql (a multi-second
 *            query) or refs.jq (a multi-second filter) through ChildRefs' broker handlers again
 *            as soon as the last call returned (after a rate_limited refusal: at the pace the
 *            broker's 100 calls/s per run allows the 16 together)
 *
 * Both through the daemon's own wiring (daemon/refs.ts openDrillIn: one SliceScheduler, the
 * operator's and the children's lanes, a DuckDB helper pool each). Prints p50/p99 of each and
 * the hostile/quiet ratio (target ≤ 2×), and what the child got done meanwhile.
 * Run: node --import tsx bench/slice-fairness.bench.ts
 */
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { loadConfig } from '../src/config/index.js';
import { openDrillIn } from '../src/daemon/refs.js';
import { MemoryLedger } from '../test/helpers/fakes/memory-ledger.js';
import type { RunRecord } from '../src/protocol/index.js';
import { FsResultStore } from '../src/results/index.js';

import { BenchReport } from './report.js';

const report = new BenchReport('slice-fairness');
const SAMPLES = Number(process.env.SAMPLES ?? 100);
const FLOOD = 16;
const SLOW_SQL = 'SELECT count(*) FROM ref, range(25000000) t(i) WHERE hash(i + x) % 7 = 0';
const SLOW_JQ = 'reduce range(0; 1000000) as $i (0; . + $i)';

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

async function main(): Promise<void> {
  const home = await fsp.mkdtemp(path.join(os.tmpdir(), 'brig-fair-bench-'));
  await fsp.chmod(home, 0o700);
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const runs = new Map<string, RunRecord>();
  for (const p of [['root'], ['root', 'p'], ['root', 'p', 'pc']]) runs.set(p.at(-1)!, { id: p.at(-1)!, rootRunId: 'root', path: p, parentRunId: p.at(-2) ?? null } as RunRecord);
  const ref = (await store.writeStream('pc', 'root', 'data.jsonl', Readable.from([Buffer.from('{"x":1}\n{"x":2}\n')]))).ref;
  const drill = openDrillIn(loadConfig({ BRIG_HOME: home }), { store, ledger: new MemoryLedger(), getRun: async (id) => runs.get(id) });
  try {
    const timed = async (f: () => Promise<{ ok: boolean }>) => {
      const t = performance.now();
      const r = await f();
      if (!r.ok) throw new Error(`the operator's call failed: ${JSON.stringify(r)}`);
      return performance.now() - t;
    };
    const measure = async () => {
      const sql: number[] = [];
      const jq: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        sql.push(await timed(() => drill.refs.sql(ref, 'SELECT 1')));
        jq.push(await timed(() => drill.refs.jq(ref, '.x')));
      }
      return { sql, jq };
    };
    // Warm both lanes' helpers.
    await drill.childRefs.handlers['refs.sql']({ runId: 'p', leaseId: 'l', method: 'refs.sql', params: { ref, sql: 'SELECT 1' } });
    await measure();
    const quiet = await measure();

    let stop = false;
    const got: Record<string, number> = {};
    const loop = async (i: number) => {
      while (!stop) {
        const call = i % 2 === 0
          ? drill.childRefs.handlers['refs.sql']({ runId: 'p', leaseId: 'l', method: 'refs.sql', params: { ref, sql: SLOW_SQL } })
          : drill.childRefs.handlers['refs.jq']({ runId: 'p', leaseId: 'l', method: 'refs.jq', params: { ref, filter: SLOW_JQ } });
        const code = await call.then(
          () => 'ok',
          (e: { code?: string }) => e.code ?? 'error',
        );
        got[code] = (got[code] ?? 0) + 1;
        // The broker lets a run make 100 calls/s (docs/broker.md): refused loops retry at that pace together.
        if (code !== 'ok') await new Promise((r) => setTimeout(r, FLOOD * 10));
      }
    };
    const loops = Array.from({ length: FLOOD }, (_, i) => loop(i));
    await new Promise((r) => setTimeout(r, 2000)); // the flood is in full swing
    const t0 = performance.now();
    const hostile = await measure();
    const hostileS = (performance.now() - t0) / 1000;
    stop = true;
    await Promise.all(loops);

    const row = (name: string, q: number[], h: number[]) => {
      const [q50, q99, h50, h99] = [pct(q, 50), pct(q, 99), pct(h, 50), pct(h, 99)];
      report.samples(`${name}, quiet`, q);
      report.samples(`${name}, hostile child`, h, { floor: `${name}, quiet` });
      report.value(`${name} p99, quiet`, q99);
      // issue 28: the operator's SELECT 1 p99 with a hostile child ≤ 2× quiet
      report.value(`${name} p99, hostile child`, h99, { floor: `${name} p99, quiet`, goal: { ratioMax: 2 } });
      console.log(
        `${name.padEnd(14)} quiet p50 ${q50.toFixed(0).padStart(5)} ms  p99 ${q99.toFixed(0).padStart(5)} ms   hostile p50 ${h50.toFixed(0).padStart(5)} ms  p99 ${h99.toFixed(0).padStart(5)} ms   ratio p50 ${(h50 / q50).toFixed(2)}×  p99 ${(h99 / q99).toFixed(2)}×`,
      );
    };
    console.log(`operator calls: ${SAMPLES} each; hostile child: ${FLOOD} loops of slow refs.sql / refs.jq; ${os.availableParallelism()} cores, load ${os.loadavg()[0]!.toFixed(1)}`);
    row('SELECT 1', quiet.sql, hostile.sql);
    row('jq .x', quiet.jq, hostile.jq);
    console.log(`the child meanwhile (${hostileS.toFixed(1)} s + 2 s): ${Object.entries(got).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  } finally {
    await drill.close();
    await fsp.rm(home, { recursive: true, force: true });
  }
}

await main();
