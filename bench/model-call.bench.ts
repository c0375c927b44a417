/**
 * The broker's overhead on a model call: one completion from inside a real jail (child →
 * broker socket → supervisor → provider client → the model server, and back), against the
 * same client calling the same scripted model server straight from the host, in the same run.
 *
 * The model server is a scripted stand-in on loopback (not a real model) that streams each
 * reply in 8 pieces, DELAY ms apart (a model "thinking"). From the host both the time to the
 * first token and to the full reply are measured; through the jail the child receives the
 * assembled reply, so its one figure is compared with both.
 *
 *   node --import tsx bench/model-call.bench.ts [N=30] [DELAY_MS=15]
 *
 * Prints medians and ratios. Never asserted anywhere.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config/index.js';
import { compose } from '../src/daemon/index.js';
import { DockerJailDriver, ownerForHome } from '../src/jail/index.js';
import { OpenAIChatClient } from '../src/models/index.js';
import { startModelServer, textTurn } from '../test/helpers/model-server.js';

import { BenchReport, quantile } from './report.js';
import { modelCallsChild } from './model-child.js';

const report = new BenchReport('model-call');
const N = Math.max(10, Number(process.argv[2] ?? 30));
const DELAY = Number(process.argv[3] ?? 15);
/** The report's own quantile (nearest rank): a printed median or ratio is the one the report keeps. */
const median = (xs: number[]) => quantile(xs, 0.5) ?? NaN;

/** A script child that times its own model calls through the broker (bench/model-child.ts). */
const CHILD = (n: number) => modelCallsChild({ calls: n, system: 'bench', before: 'say hi ' });

async function main(): Promise<void> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-bmc-'));
  const turn = () => textTurn('hello there, this is a streamed reply of a few pieces', { usage: { input: 20, output: 12 }, textPieces: 8, delayMs: DELAY });
  const m = await startModelServer({ script: () => turn() });
  try {
    // Straight from the host: the same streaming client the supervisor uses.
    const client = new OpenAIChatClient({ baseUrl: m.baseUrl, model: 'stand-in' });
    const ttft: number[] = [];
    const full: number[] = [];
    for (let i = 0; i <= N; i++) {
      const t0 = performance.now();
      const c = await client.complete({ system: 'bench', messages: [{ role: 'user', content: `say hi ${i}` }] });
      if (i === 0) continue;
      full.push(performance.now() - t0);
      if (c.firstTokenMs !== null) ttft.push(c.firstTokenMs);
    }
    await client.close();
    // Through a jail: a script child with `llm`, its calls through the broker.
    const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'stand-in' });
    const c = await compose(cfg, { reconcile: true });
    await c.supervisor.start();
    let jail: number[] = [];
    try {
      const r = await c.supervisor.spawn({ task: 'bench model calls', script: CHILD(N), timeout: 300_000 });
      if (!r.ok || r.value.endReason !== 'completed') throw new Error(`the bench child failed: ${r.ok ? `${r.value.error?.message} ${r.value.stderrTail}` : r.error.message}`);
      jail = r.value.result as number[];
    } finally {
      await c.close();
      await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    }
    report.samples('host → server, first token', ttft);
    report.samples('host → server, full reply', full);
    report.samples('jail → broker → server, full reply', jail, { floor: 'host → server, full reply' });
    const row = (k: string, v: number, floor: number) => console.log(`${k.padEnd(34)} ${v.toFixed(1).padStart(8)} ms   ×${(v / floor).toFixed(2)}`);
    console.log(`model call, ${N} calls each, reply streamed in 8 pieces ${DELAY} ms apart (scripted stand-in on loopback)`);
    row('host → server, first token', median(ttft), median(full));
    row('host → server, full reply (floor)', median(full), median(full));
    row('jail → broker → server, full reply', median(jail), median(full));
    console.log(`broker overhead per call: ${(median(jail) - median(full)).toFixed(1)} ms (median jail − median host)`);
  } finally {
    await m.close();
    fs.rmSync(home, { recursive: true, force: true });
  }
}

await main();
