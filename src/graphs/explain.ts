/**
 * `brig graph explain`, pure: a graph record and its definition → per node its attempts (why
 * each came, how it ended, the lease its run got), why it was skipped (which `when` failed on
 * which dependency, which node tripped fail_fast, a cancel, a restart, a map slot without an
 * item, a stop_when), why it waited (its dependencies until the last one ended, a slot under
 * the parallel cap, an operator's decision), and its retry rule; and the text an operator
 * reads. Everything is read from the record (times, states, end reasons) — nothing is guessed;
 * what the record cannot say (a lease not readable here) is said as unknown.
 */
import type {
  GraphAttemptLease,
  GraphDefinition,
  GraphExplanation,
  GraphNodeExplained,
  GraphNodeRecord,
  GraphNodeSpec,
  GraphRecord,
  NodeResult,
  NodeState,
  WhenPredicate,
} from '../protocol/index.js';
import { isEnded } from './plan.js';
import { budgetState } from './budget.js';

export function whenText(w: WhenPredicate): string {
  if (typeof w === 'string') return w;
  if ('quorum' in w) return `quorum ${w.quorum}`;
  return `results ${Object.entries(w.results).map(([d, r]) => `${d}=${Array.isArray(r) ? r.join('|') : r}`).join(' ')}`;
}

/** Which dependencies made a `when` fail, in words. */
function whenFailed(w: WhenPredicate, deps: readonly string[], state: (id: string) => NodeState): string {
  const said = (ids: readonly string[]) => ids.map((d) => `${d} ${state(d)}`).join(', ');
  if (w === 'all_succeeded') return `when all_succeeded cannot hold: ${said(deps.filter((d) => isEnded(state(d)) && state(d) !== 'succeeded'))}`;
  if (w === 'any_succeeded') return `when any_succeeded cannot hold: none succeeded (${said(deps)})`;
  if (w === 'all_done') return 'when all_done';
  if ('quorum' in w) {
    const ok = deps.filter((d) => state(d) === 'succeeded').length;
    return `when quorum ${w.quorum} cannot hold: ${ok} of ${deps.length} succeeded (${said(deps)})`;
  }
  const bad = Object.entries(w.results).filter(([d, want]) => isEnded(state(d)) && !(Array.isArray(want) ? want : [want]).includes(state(d) as NodeResult));
  return `when ${whenText(w)} cannot hold: ${bad.map(([d, want]) => `${d} ended ${state(d)}, not ${Array.isArray(want) ? want.join('|') : want}`).join('; ')}`;
}

const ms = (a: string, b: string) => Date.parse(b) - Date.parse(a);
function dur(x: number): string {
  if (x < 1000) return `${Math.max(0, x)}ms`;
  return x < 120_000 ? `${(x / 1000).toFixed(1)}s` : `${Math.round(x / 60_000)}m`;
}

/** The moment a node's dependencies had all ended (its last dependency's last attempt's end); the graph's start with none. */
function readyAt(rec: GraphRecord, deps: readonly string[]): { at: string; last: string | null } | null {
  let at = rec.createdAt;
  let last: string | null = null;
  for (const d of deps) {
    const n = rec.nodes.find((x) => x.id === d)!;
    if (!isEnded(n.state)) return null;
    // A node skipped without an attempt ended when whatever skipped it did: no later than the graph's start of its dependent.
    const end = n.attempts.at(-1)?.endedAt ?? null;
    if (end && Date.parse(end) >= Date.parse(at)) {
      at = end;
      last = d;
    }
  }
  return { at, last };
}

/** Scheduling a ready node takes a few ms: a longer gap between ready and started was a wait for a slot. */
const SLOT_GAP_MS = 50;

/** Other nodes whose attempts ran while this one was ready and not started (the slots it waited for). */
function heldSlots(rec: GraphRecord, from: string, to: string, except: string): string[] {
  const a0 = Date.parse(from);
  const b0 = Date.parse(to);
  return rec.nodes.filter((n) => n.id !== except && n.attempts.some((a) => Date.parse(a.startedAt) < b0 && (a.endedAt === null || Date.parse(a.endedAt) > a0))).map((n) => n.id);
}

function skippedWhy(rec: GraphRecord, def: GraphDefinition, n: GraphNodeRecord, spec: GraphNodeSpec, state: (id: string) => NodeState): string | null {
  if (n.state !== 'skipped') return null;
  switch (n.skipReason) {
    case 'unsatisfiable':
      return whenFailed(spec.when, spec.depends_on, state);
    case 'fail_fast': {
      const first = rec.nodes.filter((x) => x.state === 'failed' || x.state === 'timed_out').sort((a, b) => Date.parse(a.attempts.at(-1)?.endedAt ?? rec.createdAt) - Date.parse(b.attempts.at(-1)?.endedAt ?? rec.createdAt))[0];
      return `on_failure fail_fast: ${first ? `${first.id} ended ${first.state}${first.attempts.at(-1)?.endReason ? ` (${first.attempts.at(-1)!.endReason})` : ''}` : 'a node failed'} before it could start`;
    }
    case 'cancelled':
      return 'the graph was cancelled before it started';
    case 'supervisor_restart':
      return 'the supervisor restarted and the graph has on_restart: fail';
    case 'no_item': {
      const split = spec.item ? rec.nodes.find((x) => x.id === spec.item!.split) : undefined;
      return `a map slot without an item: item ${spec.item?.index ?? '?'}, and the split found ${split?.items ?? '?'}`;
    }
    case 'stopped_early': {
      const by = def.expanded.find((x) => x.stop?.later.includes(n.id));
      return `stop_when held at ${by?.id ?? 'an earlier round'} (${by?.stop ? `${by.stop.when.field} ${by.stop.when.gte !== undefined ? `≥ ${by.stop.when.gte}` : `= ${JSON.stringify(by.stop.when.equals)}`}` : ''})`;
    }
    case 'budget_exhausted':
      return rec.budgetStop
        ? rec.budgetStop.node === null
          ? `the graph stopped: ${rec.budgetStop.why}`
          : rec.budgetStop.node === n.id
          ? `its reservation could not be made (${rec.budgetStop.why}): the graph stopped`
          : `the graph stopped: ${rec.budgetStop.node}'s reservation could not be made (${rec.budgetStop.why})`
        : 'the graph\'s budget could not make a reservation: the graph stopped';
    default:
      return n.skipReason ?? 'skipped';
  }
}

function waitedWhy(rec: GraphRecord, n: GraphNodeRecord, spec: GraphNodeSpec, state: (id: string) => NodeState, now: string): string[] {
  const out: string[] = [];
  const first = n.attempts[0];
  const ready = readyAt(rec, spec.depends_on);
  if (!first) {
    if (n.state !== 'pending') return out;
    const open = spec.depends_on.filter((d) => !isEnded(state(d)));
    if (open.length > 0) out.push(`waits for ${open.map((d) => `${d} (${state(d)})`).join(', ')}`);
    else if (rec.state === 'running') out.push(`waits for a slot: ${rec.nodes.filter((x) => x.state === 'running').length} of max ${rec.parallel} running`);
    return out;
  }
  if (spec.depends_on.length > 0 && ready) out.push(`waited ${dur(ms(rec.createdAt, ready.at))} for ${spec.depends_on.join(', ')}${ready.last ? ` (the last to end: ${ready.last})` : ''}`);
  if (ready) {
    const gap = ms(ready.at, first.startedAt);
    const held = heldSlots(rec, ready.at, first.startedAt, n.id);
    if (gap > SLOT_GAP_MS && held.length >= rec.parallel) out.push(`waited ${dur(gap)} for a slot: max ${rec.parallel} running (${held.join(', ')})`);
  }
  if (n.kind === 'gate') {
    const g = n.gate;
    if (g?.decision) out.push(`waited ${dur(ms(first.startedAt, g.at ?? first.endedAt ?? now))} for an operator: ${g.decision} by ${g.by}`);
    else if (g) out.push(`waits for an operator's approve or reject until ${g.deadline}`);
  }
  return out;
}

function attemptWhy(n: GraphNodeRecord, i: number, spec: GraphNodeSpec): string {
  if (i === 0) return 'first';
  const prev = n.attempts[i - 1]!;
  if (prev.endReason === 'supervisor_restart') return `retry ${i} of ${spec.retry.max}: the restart lost attempt ${prev.n} (retry.idempotent)`;
  return `retry ${i} of ${spec.retry.max}: attempt ${prev.n} ended ${prev.result}${prev.endReason ? ` (${prev.endReason})` : ''}, listed in retry.on [${spec.retry.on.join(', ')}]`;
}

export function explainGraph(rec: GraphRecord, def: GraphDefinition, leases: ReadonlyMap<string, GraphAttemptLease | null> = new Map(), now = new Date().toISOString()): GraphExplanation {
  const specs = new Map(def.expanded.map((n) => [n.id, n]));
  const s0 = budgetState(rec.nodes);
  const spent = { tokens: s0.spent.tokens, costUsd: s0.spent.costUsd, runs: s0.runs };
  const states = new Map(rec.nodes.map((n) => [n.id, n.state]));
  const state = (id: string) => states.get(id) ?? 'pending';
  const nodes: GraphNodeExplained[] = rec.order.map((id) => {
    const n = rec.nodes.find((x) => x.id === id)!;
    const spec = specs.get(id)!;
    return {
      id,
      kind: n.kind,
      macroOf: spec.macro_of ?? null,
      dependsOn: [...spec.depends_on],
      when: whenText(spec.when),
      state: n.state,
      skipReason: n.skipReason,
      skipped: skippedWhy(rec, def, n, spec, state),
      waited: waitedWhy(rec, n, spec, state, now),
      retry: { max: spec.retry.max, on: [...spec.retry.on], idempotent: spec.retry.idempotent },
      attempts: n.attempts.map((a, i) => ({
        n: a.n,
        why: attemptWhy(n, i, spec),
        state: a.state,
        result: a.result,
        endReason: a.endReason,
        errorCode: a.errorCode,
        runId: a.runId,
        startedAt: a.startedAt,
        endedAt: a.endedAt,
        tokens: a.tokens,
        costUsd: a.costUsd,
        reserved: a.reserved ?? null,
        lease: a.runId ? (leases.get(a.runId) ?? null) : null,
      })),
      ...(n.gate ? { gate: n.gate } : {}),
      ...(spec.gate ? { prompt: spec.gate.prompt } : {}),
      ...(n.tally ? { tally: n.tally } : {}),
      ...(spec.budget ? { budget: { ...spec.budget } } : {}),
    };
  });
  const b = def.spec.budget;
  return {
    graphId: rec.id,
    label: rec.label,
    state: rec.state,
    endReason: rec.endReason,
    createdAt: rec.createdAt,
    endedAt: rec.endedAt,
    parallel: rec.parallel,
    onFailure: def.spec.on_failure.policy,
    onRestart: def.spec.on_restart,
    budget: { ...b, spent: { tokens: spent.tokens, costUsd: spent.costUsd }, runs: spent.runs, stop: rec.budgetStop ?? null },
    nodes,
  };
}

/** The operator's text: a head, then per node its facts, waits, skip, retry rule and attempts with their leases. */
export function renderGraphExplain(x: GraphExplanation): string {
  const out: string[] = [];
  out.push(`graph ${x.graphId}${x.label ? ` (${x.label})` : ''}: ${x.state}${x.endReason && x.endReason !== x.state ? ` (${x.endReason})` : ''}`);
  const bx = x.budget;
  const limits = [bx.tokens !== undefined ? `${bx.spent.tokens} of ${bx.tokens} tokens` : null, bx.cost_usd !== undefined ? `$${bx.spent.costUsd.toFixed(4)} of $${bx.cost_usd}` : null, bx.children !== undefined ? `${bx.runs} of ${bx.children} node runs` : null].filter((v) => v !== null);
  out.push(`started ${x.createdAt}${x.endedAt ? `, ended ${x.endedAt} (${dur(ms(x.createdAt, x.endedAt))})` : ''} · max ${x.parallel} running · on_failure ${x.onFailure} · on_restart ${x.onRestart}`);
  if (limits.length > 0 || bx.stop) out.push(`budget: ${limits.join(' · ') || 'none'}${bx.stop ? ` · stopped${bx.stop.node ? ` at ${bx.stop.node}` : ''}: ${bx.stop.why}` : ''}`);
  for (const n of x.nodes) {
    out.push('');
    out.push(`${n.id}  ${n.kind}${n.macroOf ? ` (of ${n.macroOf})` : ''}  ${n.state}${n.skipReason ? ` (${n.skipReason})` : ''}`);
    if (n.dependsOn.length > 0) out.push(`  depends on ${n.dependsOn.join(', ')} · when ${n.when}`);
    if (n.skipped) out.push(`  skipped: ${n.skipped}`);
    for (const w of n.waited) out.push(`  ${w}`);
    if (n.retry.max > 0 || n.retry.idempotent) out.push(`  retry: max ${n.retry.max} on [${n.retry.on.join(', ')}]${n.retry.idempotent ? ', idempotent' : ''}`);
    if (n.gate) out.push(`  gate: ${n.gate.decision ? `${n.gate.decision} by ${n.gate.by} at ${n.gate.at}` : `waiting until ${n.gate.deadline}`}`);
    if (n.prompt && n.state === 'running') out.push(`  prompt: ${n.prompt}`);
    for (const sh of n.shown ?? []) out.push(`  shows ${sh.node}: ${sh.text.replace(/\s*\n\s*/g, ' ⏎ ')}`);
    if (n.tally) out.push(`  tally: ${n.tally.outcome}${n.tally.winner ? ` → ${n.tally.winner}` : ''} (${n.tally.valid} valid, ${n.tally.invalid} invalid, ${n.tally.absent} absent)`);
    for (const a of n.attempts) {
      const took = a.endedAt ? dur(ms(a.startedAt, a.endedAt)) : 'running';
      out.push(`  a${a.n} ${a.why}: ${a.result ?? a.state}${a.endReason ? ` (${a.endReason})` : ''}${a.errorCode ? ` [${a.errorCode}]` : ''} · ${took}${a.tokens ? ` · ${a.tokens} tokens` : ''}${a.reserved ? ` (reserved ${[a.reserved.tokens !== undefined ? `${a.reserved.tokens} tokens` : '', a.reserved.costUsd !== undefined ? `$${a.reserved.costUsd.toFixed(4)}` : ''].filter(Boolean).join(', ')})` : ''}${a.runId ? ` · run ${a.runId}` : ''}`);
      if (a.lease) out.push(`     lease ${a.lease.id} (profile ${a.lease.profile}, depth ${a.lease.depth})${a.lease.revokedBy ? `, revoked by ${a.lease.revokedBy}` : ''}: granted ${a.lease.caps.join(', ') || 'nothing'}${a.lease.refused.length ? `; refused ${a.lease.refused.join('; ')}` : ''}`);
      else if (a.runId) out.push('     lease: not readable here');
    }
  }
  return out.join('\n') + '\n';
}
