/**
 * The scheduler's decisions, pure: given the definition and every node's state, which nodes
 * start now, which are skipped and why, and whether the graph has ended and how.
 *
 * Guarantees: a node starts only when every dependency has ended and its `when` holds; it is
 * skipped exactly when its `when` can no longer hold (whatever the running dependencies end
 * with), or, under fail_fast, once a node ended failed/timed_out after its retries, or on a
 * cancel; running nodes ≤ `parallel`; skips propagate only through `when`, never implicitly.
 */
import type { GraphDefinition, GraphState, NodeResult, NodeState, SkipReason, WhenPredicate } from '../protocol/index.js';

export type WhenVerdict = 'ready' | 'wait' | 'never';

const ENDED: readonly NodeState[] = ['succeeded', 'failed', 'timed_out', 'cancelled', 'skipped'];
export const isEnded = (s: NodeState): s is NodeResult => ENDED.includes(s);

/** A `when` over the dependencies' states: exact, not a guess (each closed predicate has a closed form). */
export function evaluateWhen(when: WhenPredicate, deps: readonly string[], state: (id: string) => NodeState): WhenVerdict {
  const states = deps.map(state);
  const ended = states.filter(isEnded);
  const open = states.length - ended.length;
  const ok = ended.filter((s) => s === 'succeeded').length;
  let never: boolean;
  let holds: boolean;
  if (when === 'all_succeeded') {
    never = ended.some((s) => s !== 'succeeded');
    holds = ok === states.length;
  } else if (when === 'all_done') {
    never = false;
    holds = true;
  } else if (when === 'any_succeeded') {
    never = ok === 0 && open === 0;
    holds = ok > 0;
  } else if ('quorum' in when) {
    never = ok + open < when.quorum;
    holds = ok >= when.quorum;
  } else {
    const bad = Object.entries(when.results).some(([d, want]) => {
      const s = state(d);
      return isEnded(s) && !(Array.isArray(want) ? want : [want]).includes(s);
    });
    never = bad;
    holds = !bad;
  }
  if (never) return 'never';
  // The barrier: every dependency has ended before a node starts.
  return open === 0 && holds ? 'ready' : 'wait';
}

export type PlanStep = { kind: 'start'; node: string } | { kind: 'skip'; node: string; reason: SkipReason };

export interface PlanInput {
  def: Pick<GraphDefinition, 'order' | 'sinks'> & { spec: { nodes: readonly { id: string; depends_on: string[]; when: WhenPredicate }[]; on_failure: { policy: 'fail_fast' | 'continue' } } };
  states: ReadonlyMap<string, NodeState>;
  parallel: number;
  cancelled?: boolean;
  /** The graph was stopped (its budget could not make a reservation): nothing new starts, every pending node is skipped with this reason. */
  stopped?: SkipReason | null;
}

/** fail_fast has tripped: some node ended failed or timed out for good. */
export function tripped(input: Pick<PlanInput, 'def' | 'states'>): boolean {
  if (input.def.spec.on_failure.policy !== 'fail_fast') return false;
  return [...input.states.values()].some((s) => s === 'failed' || s === 'timed_out');
}

/** What to do now. Skips come first (in topological order, each seen by the next), then starts up to the free slots. */
export function plan(input: PlanInput): PlanStep[] {
  const states = new Map(input.states);
  const steps: PlanStep[] = [];
  const nodes = new Map(input.def.spec.nodes.map((n) => [n.id, n]));
  const stopAll: SkipReason | null = input.cancelled ? 'cancelled' : (input.stopped ?? (tripped(input) ? 'fail_fast' : null));
  let running = [...states.values()].filter((s) => s === 'running').length;
  for (const id of input.def.order) {
    if (states.get(id) !== 'pending') continue;
    if (stopAll) {
      steps.push({ kind: 'skip', node: id, reason: stopAll });
      states.set(id, 'skipped');
      continue;
    }
    const n = nodes.get(id)!;
    const v = evaluateWhen(n.when, n.depends_on, (d) => states.get(d) ?? 'pending');
    if (v === 'never') {
      steps.push({ kind: 'skip', node: id, reason: 'unsatisfiable' });
      states.set(id, 'skipped');
    } else if (v === 'ready' && running < input.parallel) {
      steps.push({ kind: 'start', node: id });
      states.set(id, 'running');
      running++;
    }
  }
  return steps;
}

/** The graph's end once no node is pending or running; null while any is. */
export function graphEnd(input: Pick<PlanInput, 'def' | 'states' | 'cancelled' | 'stopped'>): { state: GraphState; endReason: string } | null {
  const all = [...input.states.values()];
  if (all.some((s) => s === 'pending' || s === 'running')) return null;
  if (input.cancelled) return { state: 'cancelled', endReason: 'cancelled' };
  const sinksOk = input.def.sinks.every((s) => input.states.get(s) === 'succeeded');
  if (sinksOk) return { state: 'completed', endReason: 'completed' };
  return { state: 'failed', endReason: input.stopped ?? (tripped(input) ? 'fail_fast' : 'sink_not_succeeded') };
}
