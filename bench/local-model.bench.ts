/**
 * The real local model (SmolLM2-135M-Instruct, Q4_1 GGUF, served by brig's local provider) in
 * one run: the helper's load time, the time to the first token, prompt evaluation and
 * generation in tokens/s, and the broker's overhead — the same completions from inside a real
 * jail (child → broker socket → supervisor → local client → helper) against the same client
 * calling the helper straight from the host, as ratios. The host path runs before and after
 * the jail path (its median over both), so drift on a shared machine shows in neither alone.
 *
 *   node --import tsx bench/local-model.bench.ts [N=5] [THREADS=1]
 *
 * Needs `make model`. Prints medians and ratios; never asserted anywhere.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config/index.js';
import { compose } from '../src/daemon/index.js';
import { DockerJailDriver, ownerForHome } from '../src/jail/index.js';
import { DEFAULT_RUNTIME_DIR, LocalModelClient, LocalModelHost } from '../src/models/index.js';
import { LOCAL_GGUF } from '../test/helpers/local-model.js';

import { BenchReport, quantile } from './report.js';
import { modelCallsChild } from './model-child.js';

const report = new BenchReport('local-model');
const N = Math.max(3, Number(process.argv[2] ?? 5));
const THREADS = Math.max(1, Number(process.argv[3] ?? 1));
const MAX_TOKENS = 32;
/** The report's own quantile (nearest rank): a printed median or ratio is the one the report keeps. */
const median = (xs: number[]) => quantile(xs, 0.5) ?? NaN;
const SYSTEM = 'You are a helpful assistant. Answer in one short sentence.';
const ask = (i: number) => `Name one colour of the rainbow (${i}).`;

/** A script child that times its own model calls through the broker (bench/model-child.ts). */
const CHILD = (n: number) => modelCallsChild({ calls: n, system: SYSTEM, before: 'Name one colour of the rainbow (', after: ').', maxTokens: MAX_TOKENS });

interface HostRun {
  loadWall: number;
  loadMs: number;
  coldPrompt: { tokens: number; ms: number };
  full: number[];
  ttft: number[];
  genRate: number[];
}

/** N calls straight from the host: the helper and the client the catalog would make. */
async function hostPath(): Promise<HostRun> {
  const host = new LocalModelHost({ gguf: LOCAL_GGUF, runtimeDir: DEFAULT_RUNTIME_DIR, threads: THREADS, contextSize: 2048 });
  const client = new LocalModelClient(host, { model: 'local', maxOutputTokens: MAX_TOKENS });
  const full: number[] = [];
  const ttft: number[] = [];
  const genRate: number[] = [];
  let loadWall = 0;
  let loadMs = 0;
  let coldPrompt = { tokens: 0, ms: 0 };
  try {
    const t0 = performance.now();
    loadMs = (await host.start()).loadMs;
    loadWall = performance.now() - t0;
    // A prompt no call has evaluated yet: prompt evaluation from scratch.
    const cold = await client.complete({ system: `${SYSTEM} ${'Be precise. '.repeat(40)}`, messages: [{ role: 'user', content: ask(-1) }], maxTokens: 1 });
    coldPrompt = { tokens: cold.usage.input - cold.usage.cacheRead, ms: cold.firstTokenMs ?? 0 };
    for (let i = 0; i <= N; i++) {
      const s = performance.now();
      const c = await client.complete({ system: SYSTEM, messages: [{ role: 'user', content: ask(i) }], maxTokens: MAX_TOKENS });
      const ms = performance.now() - s;
      if (i === 0) continue;
      full.push(ms);
      if (c.firstTokenMs !== null) {
        ttft.push(c.firstTokenMs);
        if (c.usage.output > 1) genRate.push(((c.usage.output - 1) * 1000) / Math.max(1, ms - c.firstTokenMs));
      }
    }
  } finally {
    await host.close();
  }
  return { loadWall, loadMs, coldPrompt, full, ttft, genRate };
}

async function main(): Promise<void> {
  if (!fs.existsSync(LOCAL_GGUF)) throw new Error(`no ${LOCAL_GGUF}: run \`make model\``);
  console.log(`local model ${path.basename(LOCAL_GGUF)}, threads ${THREADS}, ${N} calls per path, replies capped at ${MAX_TOKENS} tokens, greedy; load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores`);
  const before = await hostPath();
  // Through a jail: a script child with `llm`, its calls through the broker to the same model.
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-blm-'));
  let jail: number[] = [];
  try {
    const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_GGUF: LOCAL_GGUF, BRIG_MODEL_THREADS: String(THREADS), BRIG_MODEL_CONTEXT_WINDOW: '2048', BRIG_MODEL_MAX_OUTPUT: String(MAX_TOKENS) });
    const c = await compose(cfg, { reconcile: true });
    await c.supervisor.start();
    try {
      const r = await c.supervisor.spawn({ task: 'bench local model calls', script: CHILD(N), timeout: 600_000 });
      if (!r.ok || r.value.endReason !== 'completed') throw new Error(`the bench child failed: ${r.ok ? `${r.value.error?.message} ${r.value.stderrTail}` : r.error.message}`);
      jail = r.value.result as number[];
    } finally {
      await c.close();
      await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    }
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
  const after = await hostPath();
  const { loadWall, loadMs, coldPrompt } = before;
  const full = [...before.full, ...after.full];
  const ttft = [...before.ttft, ...after.ttft];
  const genRate = [...before.genRate, ...after.genRate];
  report.value('load (helper start → ready)', loadWall);
  report.value('prompt evaluation from scratch', (coldPrompt.tokens * 1000) / Math.max(1, coldPrompt.ms), { unit: 'tokens/s' });
  report.samples('first token (host → helper)', ttft);
  report.samples('generation', genRate, { unit: 'tokens/s' });
  report.samples('host → helper, full reply', full);
  report.samples('jail → broker → helper, full reply', jail, { floor: 'host → helper, full reply' });
  const row = (k: string, v: string) => console.log(`${k.padEnd(44)} ${v}`);
  row('load (helper start → ready, wall)', `${loadWall.toFixed(0)} ms (model + context: ${loadMs} ms)`);
  row('prompt evaluation, from scratch', `${coldPrompt.tokens} tokens in ${coldPrompt.ms} ms = ${((coldPrompt.tokens * 1000) / Math.max(1, coldPrompt.ms)).toFixed(0)} tokens/s`);
  row('first token (host → helper, median)', `${median(ttft).toFixed(0)} ms`);
  row('generation (median)', `${median(genRate).toFixed(1)} tokens/s`);
  row('host → helper, full reply (floor, median)', `${median(full).toFixed(0)} ms`);
  row('jail → broker → helper, full reply (median)', `${median(jail).toFixed(0)} ms   ×${(median(jail) / median(full)).toFixed(2)} of the floor`);
  console.log(`broker overhead per call: ${(median(jail) - median(full)).toFixed(1)} ms (median jail − median host); load average now ${os.loadavg()[0]!.toFixed(1)}`);
}

await main();
