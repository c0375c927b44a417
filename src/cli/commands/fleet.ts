import type { FleetReport } from '../../light.js';
import { BrigError } from '../../util/errors.js';
import { windowMinutes } from '../../util/window.js';
import { JSON_FLAG, durationFlag, flag, numberFlag, parseArgs, writeJson, type Command } from '../command.js';
import { withBrig } from '../connect.js';

const n = (x: number) => x.toLocaleString('en-US');
const counts = (o: Record<string, number>) =>
  Object.entries(o)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k, v]) => `${k} ${n(v)}`)
    .join(', ') || 'none';

function render(f: FleetReport, window: string): string {
  const lines = [
    `fleet over the last ${window} (${f.since} → ${f.until})`,
    `runs         ${n(f.runs)} (${n(f.live)} live): ${counts(f.byEndReason)}`,
    `killed by    ${counts(f.byKilledBy)}; stuck kills ${n(f.stuckKills)}`,
    `refusals     ${n(f.refusals.total)}${f.refusals.total ? ` (${counts(f.refusals.byKind)}): ${counts(f.refusals.byCode)}` : ''}`,
    `model        ${n(f.tokens)} tokens, $${f.costUsd.toFixed(4)}${f.costUnknownRuns ? ` (+ ${n(f.costUnknownRuns)} run(s) of unknown cost)` : ''}`,
    `spawn latency ${f.spawnLatencyMs.n ? `p50 ${n(f.spawnLatencyMs.p50!)} ms, p95 ${n(f.spawnLatencyMs.p95!)} ms (request → child started, ${n(f.spawnLatencyMs.n)} run(s))` : 'none (no run started)'}`,
    `kept out of context  ~${n(f.keptOutOfContext.estSavedTokens)} tokens (estimate; ${n(f.keptOutOfContext.runs)} envelopes: ${n(f.keptOutOfContext.materializedBytes)} bytes materialized, ${n(f.keptOutOfContext.charsReentered)} chars re-entered)`,
  ];
  const e = f.egress;
  if (e && (e.connections > 0 || e.refusals > 0)) {
    const rules = Object.entries(e.byRule)
      .sort((a, b) => b[1].connections - a[1].connections || a[0].localeCompare(b[0]))
      .map(([id, r]) => `${id} ${n(r.connections)} (${n(r.bytesUp)} up, ${n(r.bytesDown)} down)`)
      .join(', ');
    lines.push(`egress       ${n(e.connections)} connection(s), ${n(e.bytesUp)} bytes up, ${n(e.bytesDown)} down${rules ? `: ${rules}` : ''}; ${n(e.refusals)} refused${e.refusals ? `: ${counts(e.refusalsByReason)}` : ''}`);
  } else lines.push('egress       none');
  if (f.topTrees.length > 0) {
    lines.push('top trees by spend');
    for (const t of f.topTrees) lines.push(`  ${t.rootRunId}  ${n(t.runs)} run(s)  ${n(t.tokens)} tokens  $${t.costUsd.toFixed(4)}`);
  }
  return `${lines.join('\n')}\n`;
}

const command: Command = {
  name: 'fleet',
  summary: 'Roll up a window across every run tree: ends, kills, refusals, egress, tokens and cost, what stayed out of context, top trees.',
  usage: 'brig fleet [--since WINDOW] [--top N] [--json]',
  flags: [
    { name: 'since', value: 'WINDOW', description: 'the window: minutes, or 30m, 24h, 7d (default 24h)' },
    { name: 'top', value: 'N', description: 'how many trees to list by spend (default 5)' },
    JSON_FLAG,
  ],
  examples: ['brig fleet', 'brig fleet --since 7d --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const window = flag(p, 'since') ?? '24h';
    const minutes = durationFlag(p, 'since', 'm') ?? windowMinutes(window)!;
    const top = numberFlag(p, 'top');
    if (top !== undefined && !(Number.isSafeInteger(top) && top >= 0)) throw new BrigError('invalid_input', '--top is a whole number');
    // The daemon's roll-up when one answers, else the records and the ledger on disk.
    const report = await withBrig(io, (brig) => brig.operator.fleet({ sinceMinutes: minutes, ...(top !== undefined ? { top } : {}) }));
    if (p.bools.has('json')) writeJson(io, { fleet: report });
    else io.stdout.write(render(report, window));
    return 0;
  },
};
export default command;
