/**
 * Graph scheduling overhead per node: from the event that lets a node start (its last
 * dependency's run ended, or a slot freed) to its spawn being asked — the scheduler's own
 * time (plan, the write-ahead record fsynced to disk, the event), with the supervisor a twin
 * whose runs end at once, so no engine time is in it. Against it: the same spawns asked
 * directly one after another (the twin's own cost, the floor).
 *
 * Shapes at N nodes (default 100): a chain (each node ready when the one before ends) and a
 * fan-out of N independent nodes at max_parallel 4. Goal (issue 25): ≤ 5 ms p50 at 100 nodes.
 * Printed, never asserted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GraphService, GraphStore } from '../src/graphs/index.js';
import type { RunRecord, SpawnRequestInput } from '../src/protocol/index.js';
import { ok } from '../src/util/errors.js';
import { BenchReport } from './report.js';

const report = new BenchReport('graphs');
const N = Number(process.argv[2] ?? 100);

class Twin {
  lastEnd = performance.now();
  gaps: number[] = [];
  #n = 0;
  async spawn(_req: SpawnRequestInput) {
    this.gaps.push(performance.now() - this.lastEnd);
    return ok({ id: `r-twin${String(++this.#n).padStart(8, '0')}`, status: 'running' } as unknown as RunRecord);
  }
  async wait(id: string) {
    await new Promise((r) => setImmediate(r));
    this.lastEnd = performance.now();
    return ok({ id, status: 'ended', endReason: 'completed', tokens: null, costUsd: null } as unknown as RunRecord);
  }
  kill = async () => ok({} as RunRecord);
  list = async () => [];
}

async function shape(name: string, nodes: unknown[], parallel: number): Promise<number[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-graphs-bench-'));
  try {
    const twin = new Twin();
    const g = new GraphService({ supervisor: twin, store: new GraphStore(dir), limits: { maxChildren: 32, maxDepth: 3, defaultTimeoutMs: 60_000 }, putManifest: async () => 'ref_x' });
    const t0 = performance.now();
    twin.lastEnd = t0;
    const s = await g.run(JSON.stringify({ graph: 'brig/v1', concurrency: { max_parallel: parallel }, nodes }));
    if (!s.ok) throw s.error;
    const w = await g.wait(s.value.graphId);
    if (!w.ok || w.value.state !== 'completed') throw new Error(`${name}: the graph did not complete`);
    report.value(`${name}: whole graph (${N} nodes)`, performance.now() - t0, { unit: 'ms' });
    return twin.gaps;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The floor: a caller that asks the next spawn as soon as the last run ended. */
async function direct(): Promise<number[]> {
  const twin = new Twin();
  for (let i = 0; i < N; i++) {
    const r = await twin.spawn({ task: 't', kind: 'command', argv: ['true'] });
    if (r.ok) await twin.wait(r.value.id);
  }
  return twin.gaps.slice(1);
}

async function main(): Promise<void> {
  const cmd = (id: string, deps: string[] = []) => ({ id, kind: 'command', depends_on: deps, spawn: { task: id, argv: ['true'] } });
  const floor = await report.phase('direct', async () => report.samples('direct spawn (twin), per node', await direct(), { unit: 'ms' }));
  await report.phase('chain', async () => {
    const gaps = await shape('chain', Array.from({ length: N }, (_, i) => cmd(`n${i}`, i === 0 ? [] : [`n${i - 1}`])), 4);
    report.samples(`chain of ${N}: ready → spawn asked, per node`, gaps, { unit: 'ms', headline: true, goal: { max: 5 }, ...(floor ? { floor: 'direct spawn (twin), per node' } : {}) });
  });
  await report.phase('fanout', async () => {
    const gaps = await shape('fanout', Array.from({ length: N }, (_, i) => cmd(`n${i}`)), 4);
    report.samples(`fan-out of ${N} at 4: slot freed → spawn asked, per node`, gaps.slice(4), { unit: 'ms', goal: { max: 5 } });
  });
  for (const f of report.figures) process.stdout.write(`${f.name}: median ${f.median?.toFixed(2)} ${f.unit}, p95 ${f.p95?.toFixed(2)}, n ${f.n}\n`);
}

void main();
