/**
 * Level 2 over a result of any size: what the model is fed, what it costs to make, and what
 * the alternative would have cost. The stored file of an agent's answer (`{"answer": "…"}`,
 * N MB of note lines with E error lines spread evenly through it) is streamed into a bounded
 * view (results/result-view.ts viewFile: head, rolling tail, error lines) and cut to Level 2's
 * model input (condense.ts: L2_INPUT_BUDGETS × the budget, 60/40, the middle's error lines).
 *
 *   node --import tsx bench/condense.bench.ts [MB ...]     (default 1 16 128)
 *
 * Prints per size: the view's time and the RSS it added (sampled every 5 ms over the
 * process's baseline), the chars the model is fed, how many of the planted error lines that
 * input keeps; and, for the floor, reading the file whole (readFile + JSON.parse — what a
 * naive condenser does; sizes ≤ 16 MB only). The chunked alternative (every chunk of the
 * same input size summarized, then the summaries merged 8 at a time) is computed from the
 * size, not called: its model calls and input tokens. Never asserted; no model, no engine.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CONDENSE_DEFAULTS, L2_INPUT_BUDGETS, headTailView, viewFile } from '../src/results/index.js';

const SIZES_MB = process.argv.slice(2).map(Number).filter((n) => n > 0);
const sizes = SIZES_MB.length > 0 ? SIZES_MB : [1, 16, 128];
const ERRORS = 40;
const BUDGET_CHARS = CONDENSE_DEFAULTS.maxResultTokens * 4;
const L2_INPUT_CHARS = BUDGET_CHARS * L2_INPUT_BUDGETS;
/** The chunked alternative: one call a chunk of L2's input size, then merges of 8 summaries (each ≤ the budget). */
const MERGE_FAN_IN = 8;

function writeAnswer(file: string, mb: number): { chars: number; planted: string[] } {
  const target = mb * 1024 * 1024;
  const fd = fs.openSync(file, 'w');
  fs.writeSync(fd, '{"answer":"');
  const line = (i: number) => `- note ${i}: a supporting detail on coherence times, gate fidelities and fabrication yield\\n`;
  const perLine = line(0).length;
  const lines = Math.floor(target / perLine);
  const every = Math.floor(lines / (ERRORS + 1));
  const planted: string[] = [];
  let chars = 0;
  let buf = '';
  for (let i = 0; i < lines; i++) {
    if (i > 0 && i % every === 0 && planted.length < ERRORS) {
      const e = `ERROR: shard ${planted.length} failed to load (code E${500 + planted.length})`;
      planted.push(e);
      buf += `${e}\\n`;
      chars += e.length + 1;
    } else {
      buf += line(i);
      chars += perLine - 1; // `\\n` is one char decoded
    }
    if (buf.length > 1 << 20) {
      fs.writeSync(fd, buf);
      buf = '';
    }
  }
  fs.writeSync(fd, `${buf}","files":[]}`);
  fs.closeSync(fd);
  return { chars, planted };
}

async function measure<T>(f: () => Promise<T>): Promise<{ value: T; ms: number; rssMb: number }> {
  global.gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const t0 = performance.now();
  const value = await f();
  const ms = performance.now() - t0;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { value, ms, rssMb: (peak - base) / 1024 / 1024 };
}

function chunked(chars: number): { calls: number; inputTokens: number } {
  let calls = Math.ceil(chars / L2_INPUT_CHARS);
  let inputTokens = Math.round(chars / 4);
  let summaries = calls;
  while (summaries > 1) {
    const merges = Math.ceil(summaries / MERGE_FAN_IN);
    calls += merges;
    inputTokens += summaries * CONDENSE_DEFAULTS.maxResultTokens;
    summaries = merges;
  }
  return { calls, inputTokens };
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-condense-bench-'));
  try {
    console.log(`budget ${BUDGET_CHARS} chars; Level 2 input at most ${L2_INPUT_CHARS} chars (${L2_INPUT_BUDGETS} budgets); ${ERRORS} error lines planted evenly`);
    console.log('size MB | view ms | view +RSS MB | L2 input chars | errors kept | whole-read ms | whole-read +RSS MB | view: calls / input tok | chunked: calls / input tok');
    for (const mb of sizes) {
      const file = path.join(dir, `result-${mb}.json`);
      const { chars, planted } = writeAnswer(file, mb);
      // As resultInput asks it (run-envelope.ts): Level 2's input cut 60/40, plus a line's slack.
      const v = await measure(() => viewFile(file, { headChars: Math.ceil(L2_INPUT_CHARS * 0.6) + 1024, tailChars: Math.ceil(L2_INPUT_CHARS * 0.4) + 1024 }));
      const input = headTailView(v.value.view, L2_INPUT_CHARS, true);
      const kept = planted.filter((e) => input.includes(e)).length;
      const whole = mb <= 16 ? await measure(async () => (JSON.parse(await fs.promises.readFile(file, 'utf8')) as { answer: string }).answer.length) : undefined;
      const c = chunked(chars);
      console.log(
        [
          mb,
          v.ms.toFixed(0),
          v.rssMb.toFixed(1),
          input.length,
          `${kept}/${planted.length}`,
          whole ? whole.ms.toFixed(0) : '—',
          whole ? whole.rssMb.toFixed(1) : '—',
          `1 / ${Math.round(input.length / 4)}`,
          `${c.calls} / ${c.inputTokens}`,
        ].join(' | '),
      );
      fs.rmSync(file);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main();
