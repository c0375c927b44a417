/**
 * The main job (`make demo`): a coordinator fans out script children over a data set each
 * child generates deterministically (MB-scale per child), receives only their envelopes and
 * ResultRef handles, answers a concrete question by drilling in with sql and grep, and prints
 * the answer and the context economy. No model is needed (Level 1/3 condensation).
 *
 * Question: across all shards, which region lost the most revenue to refunds, and how many
 * upstream E503 errors did the service log record?
 */
import fs from 'node:fs';
import path from 'node:path';
import { openBrig, rollUpSavings } from '../../src/index.js';

const SHARDS = Number(process.env.DEMO_SHARDS ?? 4);
const ORDERS = Number(process.env.DEMO_ORDERS ?? 30_000); // ≈ 5 MB of JSONL per child
const LOG_LINES = Number(process.env.DEMO_LOG_LINES ?? 40_000); // ≈ 2.5 MB of log per child

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const say = (s = '') => process.stdout.write(`${s}\n`);

/** Everything that enters the coordinator's context is counted here. */
let charsReentered = 0;
function enter(text: string): string {
  charsReentered += text.length;
  return text;
}

function unwrap<T>(r: { ok: true; value: T } | { ok: false; error: { code: string; message: string; hint: string } }): T {
  if (!r.ok) throw new Error(`${r.error.message} [${r.error.code}] → ${r.error.hint}`);
  return r.value;
}

async function main(): Promise<void> {
  const script = fs.readFileSync(path.join(import.meta.dirname, 'shard-worker.mjs'), 'utf8');
  const brig = await openBrig({ mode: 'local' });
  try {
    say(bold(`== fan out: ${SHARDS} script children, each in its own jail, ${ORDERS.toLocaleString('en-US')} orders + ${LOG_LINES.toLocaleString('en-US')} log lines`));
    const started = Date.now();
    const spawned = await Promise.all(
      Array.from({ length: SHARDS }, (_, shard) =>
        brig.spawn({
          kind: 'script',
          script,
          task: JSON.stringify({ shard, seed: 1000 + shard, orders: ORDERS, logLines: LOG_LINES }),
          label: `shard-${shard}`,
          objective: 'Generate one shard of orders and service logs into /workspace/out.',
          expected_outputs: ['orders.jsonl', 'service.log'],
          timeout: 120_000,
          async: true,
        }),
      ),
    );
    const ids = spawned.map((r) => unwrap(r).id);
    for (const id of ids) say(`  spawned ${id}`);
    const ended = await Promise.all(ids.map(async (id) => unwrap(await brig.wait(id))));
    say(`  all ${ended.length} ended in ${((Date.now() - started) / 1000).toFixed(1)} s: ${ended.map((r) => r.endReason).join(', ')}`);
    const failed = ended.filter((r) => r.endReason !== 'completed');
    if (failed.length > 0) throw new Error(`${failed.length} children did not complete: ${failed.map((r) => `${r.id} ${r.endReason}`).join(', ')}`);

    say();
    say(bold('== what the coordinator receives: one bounded envelope per child'));
    const results = [];
    for (const id of ids) {
      const res = unwrap(await brig.refs.result(id));
      results.push(res);
      say(enter(res.envelope));
      say();
    }

    say(bold('== drilling in: only the slices enter the coordinator'));
    const ordersRefs = results.map((r) => r.refs.find((x) => x.path.endsWith('orders.jsonl'))!);
    const logRefs = results.map((r) => r.refs.find((x) => x.path.endsWith('service.log'))!);

    const byRegion = new Map<string, number>();
    for (const ref of ordersRefs) {
      const q = "SELECT region, round(sum(amount), 2) AS refunded FROM ref WHERE status = 'refunded' GROUP BY region ORDER BY refunded DESC";
      const out = unwrap(await brig.refs.sql(ref.ref, q));
      enter(JSON.stringify(out.rows));
      say(`  sql ${ref.ref}: ${out.rows!.map(([r, v]) => `${String(r)}=${String(v)}`).join(' ')}`);
      for (const [region, v] of out.rows!) byRegion.set(String(region), (byRegion.get(String(region)) ?? 0) + Number(v));
    }
    let e503 = 0;
    let sample = '';
    for (const ref of logRefs) {
      const out = unwrap(await brig.refs.grep(ref.ref, 'ERROR E503 ', { maxMatches: 1, fixed: true }));
      enter(out.text ?? '');
      e503 += out.returned + out.more;
      sample ||= (out.text ?? '').trim().replace(/^\d+:/, '');
      say(`  grep ${ref.ref}: ${out.returned + out.more} matches (${out.returned} shown${out.note ? `, ${out.note}` : ''})`);
    }

    const [topRegion, topAmount] = [...byRegion.entries()].sort((a, b) => b[1] - a[1])[0]!;
    say();
    say(bold('== the answer'));
    say(`  The region that lost the most revenue to refunds is ${topRegion}: ${topAmount.toFixed(2)} across ${SHARDS} shards.`);
    say(`  The service logs record ${e503.toLocaleString('en-US')} upstream E503 errors, e.g.: ${sample}`);

    const materializedBytes = results.reduce((s, r) => s + r.refs.reduce((t, x) => t + x.bytes, 0), 0);
    const roll = rollUpSavings(results.map((r) => r.savings));
    const estSavedTokens = Math.max(0, Math.round(materializedBytes / 4) - Math.round(charsReentered / 4));
    say();
    say(bold('== the context economy'));
    say(`  bytes materialized on disk as ResultRefs:  ${materializedBytes.toLocaleString('en-US')}`);
    say(`  tokens that entered the coordinator:       ${Math.round(charsReentered / 4).toLocaleString('en-US')} (envelopes + slices)`);
    say(`  estSavedTokens:                            ${estSavedTokens.toLocaleString('en-US')} (per-run roll-up of envelopes alone: ${roll.estSavedTokens.toLocaleString('en-US')}, savedRatio ${roll.savedRatio ?? 'n/a'})`);
    say(`  ratio kept out of context:                 ${(1 - charsReentered / materializedBytes).toFixed(4)}`);
  } finally {
    await brig.close();
  }
}

main().catch((e) => {
  process.stderr.write(`demo: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
