/**
 * The fleet view: a content-free roll-up over a window, across every root — runs by end reason
 * and killedBy, stuck kills, refusals by code, tokens and cost, the estimated tokens kept out
 * of context (what the envelopes saved: reference 003's efficiency finding), and the trees that
 * spent the most, the window in time buckets (runs by end reason, tokens) and the spawn latency
 * (request → child started, p50/p95). Ids, enums, counts and sums only (INV-7).
 *
 * Runs are those created within the window (their records); refusals are the ledger's lines
 * within it (`run.refused`, `lease.refused`, `broker.denied` with its aggregated `count`, and
 * the egress gate's `egress.deny` as `egress:<reason>`); egress is the gate's `egress.conn`
 * lines (connections and bytes by rule id).
 */
import { scanLedger } from '../ledger/index.js';
import type { FleetOptions, FleetReport, RefSurface, RunRecord } from '../protocol/index.js';

export type { FleetReport } from '../protocol/index.js';

export interface FleetDeps {
  list(f: { sinceMinutes: number }): Promise<RunRecord[]>;
  refs: Pick<RefSurface, 'peek'>;
  ledgerDir: string;
  now?: () => Date;
}

/** Envelopes read for the savings at most (the newest); the report says how many it read. */
const MAX_PEEKS = 2000;
const REFUSALS: Record<string, string> = { 'run.refused': 'spawn', 'lease.refused': 'lease', 'broker.denied': 'broker' };

const bump = (o: Record<string, number>, k: string, by = 1) => void (o[k] = (o[k] ?? 0) + by);

const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) && x > 0 ? x : 0);

/** One pass over the ledger's lines in the window: the refusals (the gate's among them, kind `egress`) and the gate's connections. */
function ledgerSince(dir: string, sinceMs: number): Pick<FleetReport, 'refusals' | 'egress'> {
  const refusals: FleetReport['refusals'] = { total: 0, byCode: {}, byKind: {} };
  const egress: FleetReport['egress'] = { connections: 0, bytesUp: 0, bytesDown: 0, byRule: {}, refusals: 0, refusalsByReason: {} };
  for (const ev of scanLedger(dir, (t) => t.includes('refused') || t.includes('denied') || t.includes('"egress.'))) {
    if (typeof ev.ts !== 'string' || Date.parse(ev.ts) < sinceMs) continue;
    if (ev.type === 'egress.conn') {
      const rule = typeof ev.ruleId === 'string' ? ev.ruleId : 'unknown';
      const r = (egress.byRule[rule] ??= { connections: 0, bytesUp: 0, bytesDown: 0 });
      r.connections++;
      r.bytesUp += num(ev.bytesUp);
      r.bytesDown += num(ev.bytesDown);
      egress.connections++;
      egress.bytesUp += num(ev.bytesUp);
      egress.bytesDown += num(ev.bytesDown);
      continue;
    }
    if (ev.type === 'egress.deny') {
      const reason = typeof ev.reason === 'string' ? ev.reason : 'unknown';
      egress.refusals++;
      bump(egress.refusalsByReason, reason);
      refusals.total++;
      bump(refusals.byCode, `egress:${reason}`);
      bump(refusals.byKind, 'egress');
      continue;
    }
    const kind = typeof ev.type === 'string' ? REFUSALS[ev.type] : undefined;
    if (!kind) continue;
    const n = typeof ev.count === 'number' && ev.count > 0 ? ev.count : 1;
    refusals.total += n;
    bump(refusals.byCode, typeof ev.code === 'string' ? ev.code : 'unknown', n);
    bump(refusals.byKind, kind, n);
  }
  return { refusals, egress };
}

export async function fleetReport(d: FleetDeps, o: FleetOptions): Promise<FleetReport> {
  const until = d.now?.() ?? new Date();
  const since = new Date(until.getTime() - o.sinceMinutes * 60_000);
  const runs = await d.list({ sinceMinutes: o.sinceMinutes });
  const r: FleetReport = {
    since: since.toISOString(),
    until: until.toISOString(),
    runs: runs.length,
    live: runs.filter((x) => x.status !== 'ended').length,
    byEndReason: {},
    byKilledBy: {},
    stuckKills: 0,
    ...ledgerSince(d.ledgerDir, since.getTime()),
    tokens: 0,
    costUsd: 0,
    costUnknownRuns: 0,
    keptOutOfContext: { runs: 0, materializedBytes: 0, charsReentered: 0, estSavedTokens: 0 },
    topTrees: [],
    bucketMinutes: o.sinceMinutes <= 48 * 60 ? 60 : 360,
    buckets: [],
    spawnLatencyMs: { n: 0, p50: null, p95: null },
  };
  // Buckets aligned to the bucket size (whole hours), the last one holding `until`.
  const size = r.bucketMinutes * 60_000;
  const first = Math.floor(since.getTime() / size) * size;
  for (let t = first; t <= until.getTime(); t += size) r.buckets.push({ start: new Date(t).toISOString(), runs: 0, byEndReason: {}, tokens: 0 });
  const latencies: number[] = [];
  const trees = new Map<string, { rootRunId: string; runs: number; tokens: number; costUsd: number }>();
  for (const x of runs) {
    if (x.endReason) bump(r.byEndReason, x.endReason);
    if (x.killedBy) bump(r.byKilledBy, x.killedBy);
    if (x.killedBy === 'health_monitor') r.stuckKills++;
    const tokens = x.tokens ?? 0;
    r.tokens += tokens;
    if (x.costUsd === null) r.costUnknownRuns++;
    else r.costUsd += x.costUsd ?? 0;
    const b = r.buckets[Math.floor((Date.parse(x.createdAt) - first) / size)];
    if (b) {
      b.runs++;
      b.tokens += tokens;
      if (x.endReason) bump(b.byEndReason, x.endReason);
    }
    if (x.startedAt) latencies.push(Math.max(0, Date.parse(x.startedAt) - Date.parse(x.createdAt)));
    const t = trees.get(x.rootRunId) ?? { rootRunId: x.rootRunId, runs: 0, tokens: 0, costUsd: 0 };
    t.runs++;
    t.tokens += tokens;
    t.costUsd += x.costUsd ?? 0;
    trees.set(x.rootRunId, t);
  }
  const ended = runs.filter((x) => x.status === 'ended').sort((a, b) => b.createdAt.localeCompare(a.createdAt)).slice(0, MAX_PEEKS);
  for (const x of ended) {
    const env = await d.refs.peek(x.id);
    if (!env.ok) continue;
    const s = env.value.savings;
    r.keptOutOfContext.runs++;
    r.keptOutOfContext.materializedBytes += s.materializedBytes;
    r.keptOutOfContext.charsReentered += s.charsReentered;
    r.keptOutOfContext.estSavedTokens += s.estSavedTokens;
  }
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)]!;
  r.spawnLatencyMs = latencies.length > 0 ? { n: latencies.length, p50: q(0.5), p95: q(0.95) } : { n: 0, p50: null, p95: null };
  r.costUsd = Math.round(r.costUsd * 1e6) / 1e6;
  r.topTrees = [...trees.values()]
    .sort((a, b) => b.costUsd - a.costUsd || b.tokens - a.tokens || b.runs - a.runs)
    .slice(0, o.top ?? 5)
    .map((t) => ({ ...t, costUsd: Math.round(t.costUsd * 1e6) / 1e6 }));
  return r;
}
