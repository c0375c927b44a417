/**
 * Who may slice now: the one admission and queue for every slicing call that takes a scarce
 * resource — a DuckDB helper (sql, jsonpath) or a grep/jq process slot — in a supervisor.
 *
 * Guarantees:
 *   - two lanes with capacity of their own: the operator's (RefService: the daemon, the API,
 *     the CLI, a coordinator's drill-in) and the children's (ChildRefs, through their brokers).
 *     A child's call never takes the operator's helpers or slots, so an operator's call waits
 *     only behind the operator's own calls, never behind a child's, queued or running; and the
 *     operator lane's helpers (their own pool) never run a child's query, so a child's query
 *     cannot tie up, kill or — through a DuckDB bug — take over a helper that answers the
 *     operator;
 *   - in the children's lane: at most `perRun` calls of one run and `perTree` of one tree
 *     admitted (running or waiting) at once, at most `queue` waiting; past any of them the call
 *     is refused `rate_limited` at once, never queued without bound. A freed slot goes to the
 *     waiting call of the tree served longest ago (FIFO within a tree), so one tree cannot
 *     starve another by queueing first;
 *   - a call's deadline is set when it is asked, and the queue spends it: a call still waiting
 *     at its deadline fails `timeout` and never runs; one that gets a slot runs with what is
 *     left (`remainingMs`), never a fresh budget;
 *   - a slot is released however the call ends (finally);
 *   - the children's lane runs its grep/jq (and its pool its helpers) at niceness 19: what a
 *     child's calls take of the CPU they take from no one busy (SLICE_SCHEDULE says why 19).
 * Threat: a child (or a tree of them) flooding slow queries and filters to stall every other
 * caller, the operator first. Trusts: the caller identity its user gives (ChildRefs: the run
 * id the broker verified and that run's recorded tree). Fails closed: over a cap → refused;
 * no slot by the deadline → timeout.
 * Why reserved capacity and not priority alone: a DuckDB query cannot be pre-empted, so with
 * priority the operator would still wait for the child's query in flight (up to its timeout);
 * the reserve costs one warm helper and one grep/jq slot of the four.
 */
import { BrigError } from '../util/errors.js';
import type { DuckdbHelperPool } from './duckdb-pool.js';
import { ToolRunner } from './tool-runner.js';

/** Who is slicing: the operator, or a child run (verified by its broker) in its tree. */
export type SliceCaller = { readonly lane: 'operator' } | { readonly lane: 'child'; readonly runId: string; readonly treeId: string };
export type SliceLane = SliceCaller['lane'];
/** `helper`: a DuckDB helper (sql, jsonpath); `tool`: a grep or jq process. */
export type SliceResource = 'helper' | 'tool';

export const OPERATOR_CALLER: SliceCaller = Object.freeze({ lane: 'operator' });

/**
 * The default shares. grep/jq: 4 processes at once in all (each may take its 2 GiB
 * address-space cap for its timeout), one of them the operator's. DuckDB: one helper each.
 * A child's drill-in is a few calls in a row: 4 in flight per run, 6 per tree, 32 waiting.
 */
export const SLICE_SCHEDULE = Object.freeze({
  operator: Object.freeze({ helpers: 1, tools: 1, nice: 0 }),
  // Niceness 19: on a busy host the children's queries and filters yield the CPU to the
  // operator's (CFS weight 15 against a nice-0 task's 1024); alone they run at full speed. At
  // 10 (weight 110) a hostile child's 2 DuckDB threads and 3 jq still doubled the operator's
  // SELECT 1 on 2 cores (bench/slice-fairness.bench.ts: p50 2.0×, p99 3.1×; at 19: 1.7×, 1.7×).
  child: Object.freeze({ helpers: 1, tools: 3, nice: 19 }),
  perRun: 4,
  perTree: 6,
  queue: 32,
});

export interface SliceLaneOptions {
  /** The helpers this lane's sql/jsonpath run on; without one, each call starts its own helper. */
  pool?: DuckdbHelperPool;
  /** Helper calls at once (default: the pool's size, else SLICE_SCHEDULE's). */
  helpers?: number;
  /** grep/jq processes at once. */
  tools?: number;
  /** Niceness of this lane's grep/jq (its helpers' is their pool's). */
  nice?: number;
}

export interface SliceSchedulerOptions {
  operator?: SliceLaneOptions;
  child?: SliceLaneOptions;
  /** Where both lanes' grep/jq run (default: a ToolRunner isolating when the host allows it). */
  tools?: ToolRunner;
  perRun?: number;
  perTree?: number;
  /** Calls waiting in one lane. */
  queue?: number;
}

/** What a granted call runs with. */
export interface SliceSlot {
  /** The lane's helper pool (undefined: start a helper for this call). */
  pool: DuckdbHelperPool | undefined;
  /** Milliseconds left of the call's deadline; pass it on as the timeout. */
  remainingMs: number;
  /** Niceness to start this lane's grep/jq at. */
  nice: number;
  /** Runs grep/jq (isolated when it can). */
  tools: ToolRunner;
}

interface Waiter {
  caller: SliceCaller;
  resource: SliceResource;
  order: number;
  grant: () => void;
  timer: NodeJS.Timeout;
}

interface Lane {
  pool: DuckdbHelperPool | undefined;
  nice: number;
  capacity: Record<SliceResource, number>;
  running: Record<SliceResource, number>;
  waiting: Waiter[];
}

const NAMES: Record<SliceResource, string> = { helper: 'DuckDB helper', tool: 'grep/jq slot' };

export class SliceScheduler {
  readonly perRun: number;
  readonly perTree: number;
  readonly queue: number;
  readonly tools: ToolRunner;
  private readonly lanes: Record<SliceLane, Lane>;
  private readonly inRun = new Map<string, number>();
  private readonly inTree = new Map<string, number>();
  /** Tree → when it was last granted a slot (a grant counter), for the children's order. */
  private readonly served = new Map<string, number>();
  private grants = 0;
  private order = 0;

  constructor(o: SliceSchedulerOptions = {}) {
    this.perRun = positive(o.perRun ?? SLICE_SCHEDULE.perRun, 'perRun');
    this.perTree = positive(o.perTree ?? SLICE_SCHEDULE.perTree, 'perTree');
    this.queue = positive(o.queue ?? SLICE_SCHEDULE.queue, 'queue');
    this.tools = o.tools ?? new ToolRunner();
    this.lanes = { operator: lane(o.operator, SLICE_SCHEDULE.operator), child: lane(o.child, SLICE_SCHEDULE.child) };
  }

  /** A lane's capacity: helper calls and grep/jq processes at once. */
  capacity(l: SliceLane): { helpers: number; tools: number } {
    const c = this.lanes[l].capacity;
    return { helpers: c.helper, tools: c.tool };
  }

  /** Calls running and waiting, per lane (for metrics and tests). */
  stats(): Record<SliceLane, { running: Record<SliceResource, number>; waiting: number }> {
    const s = (l: Lane) => ({ running: { ...l.running }, waiting: l.waiting.length });
    return { operator: s(this.lanes.operator), child: s(this.lanes.child) };
  }

  /**
   * Runs `fn` once `caller` has a slot of `resource` in its lane, by `deadline` (epoch ms).
   * Rejects `rate_limited` (over a cap, at once) or `timeout` (no slot by the deadline; fn never runs).
   */
  async run<T>(caller: SliceCaller, resource: SliceResource, deadline: number, fn: (slot: SliceSlot) => Promise<T>): Promise<T> {
    const l = this.lanes[caller.lane];
    this.admit(caller);
    try {
      if (l.running[resource] < l.capacity[resource]) l.running[resource]++;
      else await this.wait(caller, resource, deadline, l);
      if (caller.lane === 'child') this.served.set(caller.treeId, ++this.grants);
    } catch (e) {
      this.leave(caller);
      throw e;
    }
    try {
      const remainingMs = Math.floor(deadline - Date.now());
      if (remainingMs <= 0) throw expired(resource);
      return await fn({ pool: l.pool, remainingMs, nice: l.nice, tools: this.tools });
    } finally {
      l.running[resource]--;
      this.leave(caller);
      this.dispatch(l, resource);
    }
  }

  /** Counts a child's call against its run and its tree, or refuses it. */
  private admit(caller: SliceCaller): void {
    if (caller.lane !== 'child') return;
    if ((this.inRun.get(caller.runId) ?? 0) >= this.perRun) throw limited('run', this.perRun, `this run has ${this.perRun} slicing calls in flight`);
    if ((this.inTree.get(caller.treeId) ?? 0) >= this.perTree) throw limited('tree', this.perTree, `this run's tree has ${this.perTree} slicing calls in flight`);
    bump(this.inRun, caller.runId, 1);
    bump(this.inTree, caller.treeId, 1);
  }

  private leave(caller: SliceCaller): void {
    if (caller.lane !== 'child') return;
    bump(this.inRun, caller.runId, -1);
    // A tree with nothing in flight is forgotten (its place in the order too).
    if (bump(this.inTree, caller.treeId, -1) === 0) this.served.delete(caller.treeId);
  }

  private wait(caller: SliceCaller, resource: SliceResource, deadline: number, l: Lane): Promise<void> {
    if (l.waiting.length >= this.queue) return Promise.reject(limited('queue', this.queue, `${this.queue} slicing calls are waiting for a ${NAMES[resource]}`));
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = {
        caller,
        resource,
        order: this.order++,
        grant: resolve,
        timer: setTimeout(() => {
          l.waiting.splice(l.waiting.indexOf(w), 1);
          reject(expired(resource));
        }, Math.max(0, deadline - Date.now())),
      };
      l.waiting.push(w);
    });
  }

  /** Hands free slots of `resource` to waiting calls: the operator's FIFO; children by tree served longest ago. */
  private dispatch(l: Lane, resource: SliceResource): void {
    while (l.running[resource] < l.capacity[resource]) {
      const w = this.next(l, resource);
      if (!w) return;
      l.waiting.splice(l.waiting.indexOf(w), 1);
      clearTimeout(w.timer);
      l.running[resource]++;
      w.grant();
    }
  }

  private next(l: Lane, resource: SliceResource): Waiter | undefined {
    let best: Waiter | undefined;
    let bestKey = Infinity;
    for (const w of l.waiting) {
      if (w.resource !== resource) continue;
      const key = w.caller.lane === 'child' ? (this.served.get(w.caller.treeId) ?? -1) : -1;
      if (key < bestKey || (key === bestKey && best !== undefined && w.order < best.order)) {
        best = w;
        bestKey = key;
      }
    }
    return best;
  }
}

function lane(o: SliceLaneOptions | undefined, d: { helpers: number; tools: number; nice: number }): Lane {
  return {
    pool: o?.pool,
    nice: o?.nice ?? d.nice,
    capacity: { helper: positive(o?.helpers ?? o?.pool?.size ?? d.helpers, 'helpers'), tool: positive(o?.tools ?? d.tools, 'tools') },
    running: { helper: 0, tool: 0 },
    waiting: [],
  };
}

function positive(n: number, what: string): number {
  if (!Number.isSafeInteger(n) || n < 1) throw new BrigError('invalid_input', `the slice scheduler's ${what} must be a positive integer`);
  return n;
}

function bump(m: Map<string, number>, key: string, by: number): number {
  const n = (m.get(key) ?? 0) + by;
  if (n <= 0) m.delete(key);
  else m.set(key, n);
  return Math.max(0, n);
}

function limited(scope: 'run' | 'tree' | 'queue', limit: number, message: string): BrigError {
  return new BrigError('rate_limited', message, { data: { scope, limit }, hint: 'Wait for a slicing call of this run to return, then retry.' });
}

function expired(resource: SliceResource): BrigError {
  return new BrigError('timeout', `no ${NAMES[resource]} was free within this call's time limit; it did not run`, {
    data: { queued: true },
    hint: 'Slicing is busy: retry once your earlier calls have returned.',
  });
}
