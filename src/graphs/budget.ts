/**
 * A graph's budget at run time, pure: what its node runs spent and hold reserved, and the
 * reservation of the next attempt — made before it starts, out of what the graph's budget has
 * left, and settled at its end (its run's actual spend replaces the reservation).
 *
 * Guarantees: the reservations held plus what ended attempts spent never exceed the graph's
 * budget when a reservation is made (a run's lease limits are its reservation, so the broker
 * bounds what it may spend); an attempt that cannot get one does not start — the graph stops
 * (`budget_exhausted`), never starts a node on credit. Without a graph budget a node's own
 * budget is its reservation; without either there is none.
 */
import type { GraphBudget, GraphNodeRecord, NodeBudget } from '../protocol/index.js';

export interface BudgetState {
  /** Run attempts started so far (retries counted). */
  runs: number;
  spent: { tokens: number; costUsd: number };
  reserved: { tokens: number; costUsd: number };
}

export type Reservation = { tokens?: number; costUsd?: number };

const RUN_KINDS: readonly string[] = ['agent', 'script', 'command'];
export const isRunNode = (n: Pick<GraphNodeRecord, 'kind'>): boolean => RUN_KINDS.includes(n.kind);

/** Read from the record: ended attempts count what their runs spent, open ones what they reserved. */
export function budgetState(nodes: readonly GraphNodeRecord[]): BudgetState {
  const s: BudgetState = { runs: 0, spent: { tokens: 0, costUsd: 0 }, reserved: { tokens: 0, costUsd: 0 } };
  for (const n of nodes) {
    if (!isRunNode(n)) continue;
    for (const a of n.attempts) {
      s.runs++;
      if (a.state === 'ended') {
        s.spent.tokens += a.tokens ?? 0;
        s.spent.costUsd += a.costUsd ?? 0;
      } else {
        s.reserved.tokens += a.reserved?.tokens ?? 0;
        s.reserved.costUsd += a.reserved?.costUsd ?? 0;
      }
    }
  }
  return s;
}

/**
 * The next attempt's reservation: its node's budget, else an equal share of what is left over
 * the run nodes not yet started (`waiting`, this one included). Refused (with why) when the
 * graph may start no more runs, or when what it wants is more than is left (or nothing is).
 */
export function reserve(limit: GraphBudget, s: BudgetState, node: NodeBudget | undefined, waiting: number): { ok: true; reserved: Reservation } | { ok: false; why: string } {
  if (limit.children !== undefined && s.runs + 1 > limit.children) return { ok: false, why: `budget.children ${limit.children}: ${s.runs} node runs started` };
  const reserved: Reservation = {};
  const share = Math.max(1, waiting);
  if (limit.tokens !== undefined) {
    const left = limit.tokens - s.spent.tokens - s.reserved.tokens;
    const want = node?.tokens ?? Math.floor(left / share);
    if (want < 1 || want > left) return { ok: false, why: `tokens: ${node?.tokens !== undefined ? `the node's ${want}` : 'a share'} does not fit in the ${Math.max(0, left)} left of budget.tokens ${limit.tokens}` };
    reserved.tokens = want;
  } else if (node?.tokens !== undefined) reserved.tokens = node.tokens;
  if (limit.cost_usd !== undefined) {
    const left = limit.cost_usd - s.spent.costUsd - s.reserved.costUsd;
    const want = node?.cost_usd ?? left / share;
    if (!(want > 0) || want > left + 1e-12) return { ok: false, why: `cost: ${node?.cost_usd !== undefined ? `the node's $${want}` : 'a share'} does not fit in the $${Math.max(0, left).toFixed(4)} left of budget.cost_usd ${limit.cost_usd}` };
    reserved.costUsd = want;
  } else if (node?.cost_usd !== undefined) reserved.costUsd = node.cost_usd;
  return { ok: true, reserved };
}
