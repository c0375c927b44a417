/**
 * What the coordinator gets at a graph's end, pure: one envelope ≤ 4 KiB (a line per node —
 * kind, state, attempts, time, tokens, a ref — the sinks first, then the order; lines that do
 * not fit are counted, never cut mid-line) and the manifest's rows (one per node attempt).
 * Content-free: ids, enums, counts, durations, ref ids; never a child's output.
 */
import { GRAPH_BOUNDS, type GraphManifestRow, type GraphRecord } from '../protocol/index.js';
import { tallyLine } from './tally.js';

export function manifestRows(rec: GraphRecord): GraphManifestRow[] {
  const rows: GraphManifestRow[] = [];
  for (const id of rec.order) {
    const n = rec.nodes.find((x) => x.id === id)!;
    if (n.attempts.length === 0) {
      rows.push({ graph_id: rec.id, node: n.id, kind: n.kind, attempt: 0, state: n.state, end_reason: n.skipReason, run_id: null, started_at: null, ended_at: null, tokens: null, cost_usd: null, ref: null });
      continue;
    }
    for (const a of n.attempts) {
      rows.push({
        graph_id: rec.id,
        node: n.id,
        kind: n.kind,
        attempt: a.n,
        state: a.result ?? (a.state === 'ended' ? 'failed' : 'running'),
        end_reason: a.endReason ?? a.errorCode,
        run_id: a.runId,
        started_at: a.startedAt,
        ended_at: a.endedAt,
        tokens: a.tokens,
        cost_usd: a.costUsd,
        reserved_tokens: a.reserved?.tokens ?? null,
        reserved_cost_usd: a.reserved?.costUsd ?? null,
        ref: null,
        ...(n.tally ? { tally: n.tally } : {}),
      });
    }
  }
  return rows;
}

export function duration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  return `${m}m${String(Math.round(s % 60)).padStart(2, '0')}s`;
}

const spanOf = (from: string | null, to: string | null) => (from && to ? Math.max(0, Date.parse(to) - Date.parse(from)) : null);

export interface EnvelopeFacts {
  /** Each node's main ref (its last attempt's). */
  refs: ReadonlyMap<string, string | null>;
  sinks: readonly string[];
  label: string | null;
  /** Rows in the manifest. */
  rows: number;
}

export function graphEnvelope(rec: GraphRecord, f: EnvelopeFacts): string {
  const counts = new Map<string, number>();
  for (const n of rec.nodes) counts.set(n.state, (counts.get(n.state) ?? 0) + 1);
  const tokens = rec.nodes.flatMap((n) => n.attempts).reduce((t, a) => t + (a.tokens ?? 0), 0);
  const total = spanOf(rec.createdAt, rec.endedAt);
  const head = `[Graph Result: ${f.label ?? rec.id}] ${rec.state}${rec.endReason && rec.endReason !== rec.state ? ` (${rec.endReason})` : ''} · ${rec.nodes.length} nodes (${[...counts].map(([s, c]) => `${c} ${s}`).join(', ')})${total !== null ? ` · ${duration(total)}` : ''}${tokens > 0 ? ` · ${tokens} tok` : ''}`;
  const width = Math.max(4, ...rec.nodes.map((n) => n.id.length));
  const line = (id: string) => {
    const n = rec.nodes.find((x) => x.id === id)!;
    const a = n.attempts.at(-1);
    const t = a ? spanOf(a.startedAt, a.endedAt) : null;
    const what = n.state === 'skipped'
      ? `(${n.skipReason ?? 'skipped'})`
      : n.tally
        ? tallyLine(n.tally)
        : n.gate
          ? n.gate.decision ? `${n.gate.decision} by ${n.gate.by}` : `waiting until ${n.gate.deadline}`
          : n.items !== undefined
            ? `${n.items} items`
            : n.parts
              ? `${n.parts.length} parts`
              : n.kind === 'join'
                ? (n.committedRunId ? `commits ${n.committedRunId}` : (a?.endReason ?? ''))
                : (f.refs.get(id) ?? a?.runId ?? a?.endReason ?? a?.errorCode ?? '');
    return [id.padEnd(width), n.kind.padEnd(7), n.state.padEnd(9), `a${n.attempts.length}`, t !== null ? duration(t).padStart(7) : '      -', a?.tokens ? `${a.tokens} tok` : '', what].filter((x) => x !== '').join('  ');
  };
  const foot = `Full results: manifest ${rec.manifestRef ?? '(not written)'} (${f.rows} rows, one per node attempt; drill in with \`brig ref jq\` / \`brig ref sql\`)`;
  const sinkSet = new Set(f.sinks);
  const ordered = [...f.sinks.filter((s) => rec.nodes.some((n) => n.id === s)), ...rec.order.filter((id) => !sinkSet.has(id))];
  const budget = GRAPH_BOUNDS.envelopeBytes;
  const out = [head];
  let used = Buffer.byteLength(head) + 1 + Buffer.byteLength(foot);
  let left = 0;
  for (let i = 0; i < ordered.length; i++) {
    const l = line(ordered[i]!);
    const more = `… ${ordered.length - i} more nodes: see the manifest`;
    // Keep room for the "more" line unless this is the last node.
    const need = Buffer.byteLength(l) + 1 + (i < ordered.length - 1 ? Buffer.byteLength(more) + 1 : 0);
    if (used + need > budget) {
      left = ordered.length - i;
      break;
    }
    out.push(l);
    used += Buffer.byteLength(l) + 1;
  }
  if (left > 0) out.push(`… ${left} more nodes: see the manifest`);
  out.push(foot);
  return out.join('\n');
}
