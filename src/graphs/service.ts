/**
 * Running a graph: every node attempt is an ordinary spawn through the Supervisor (admission,
 * lease, jail, ledger, ResultRefs — nothing about a child is new), scheduled by plan.ts.
 *
 * Guarantees: the record is on disk before each action it announces (an attempt is
 * `starting` with its key before the spawn is asked; saves are serialized, so a later state
 * never loses to an earlier one); a spawn carries its idempotency key (graph, node, attempt)
 * as the caller id, so a repeated ask finds the run already made; running nodes ≤
 * min(max_parallel, the caller's children cap); a dependent gets only its declared inputs'
 * committed out/ (the run of the node's succeeded attempt) as read-only mounts at
 * /artifacts/<as>, never a folder another node can write; each attempt ends once, the graph
 * ends once (one envelope ≤ 4 KiB and one manifest ref). A graph run by a run holds one of
 * its child slots while it runs. Budgets (budget.ts): an attempt reserves before it starts (the
 * reservation is its run's token/cost limit), settles at its end; a reservation that cannot be
 * made, or the graph's wall time passing, stops it once (`budget_exhausted`).
 * Crash safety: at start a graph left `running` resumes (`on_restart: resume`: recover, resume)
 * or ends `failed` (`supervisor_restart`) exactly once, its attempts' runs killed.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  GRAPH_BOUNDS,
  SUMMARY_BOUNDS,
  graphInputOf,
  type GraphAttempt,
  type GraphAttemptLease,
  type GraphDefinition,
  type GraphExplanation,
  type GateDecision,
  type GraphEvent,
  type GraphNodeRecord,
  type GraphNodeSpec,
  type GraphOutcome,
  type GraphRecord,
  type GraphStarted,
  type NodeResult,
  type NodeState,
  type RunRecord,
  type SpawnContext,
  type SkipReason,
  type SpawnRequestInput,
  type StopWhen,
  type Supervisor,
} from '../protocol/index.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { defineGraph, defineGraphText, taskOf } from './define.js';
import { graphEnd, plan, type PlanInput } from './plan.js';
import type { GraphStore } from './store.js';
import { graphEnvelope, manifestRows } from './envelope.js';
import { readField, tally, tallyLine, type Ballot } from './tally.js';
import { explainGraph } from './explain.js';
import { budgetState, isRunNode, reserve, type Reservation } from './budget.js';

export interface GraphPorts {
  supervisor: Pick<Supervisor, 'spawn' | 'wait' | 'kill' | 'list'>;
  store: GraphStore;
  /** The operator's (the caller's) bounds: its children cap, maxSpawnDepth, the default run timeout. */
  limits: { maxChildren: number; maxDepth: number; defaultTimeoutMs: number };
  /**
   * A graph run by a run (graph_run) takes one child slot of it while it runs — the graph is
   * one child of its caller; its nodes count as the graph's group, not as the caller's children
   * one by one. Refused (`children_exceeded`) when the caller has none free; answers the release.
   */
  holdSlot?(callerRunId: string, graphId: string): Result<() => void, BrigError>;
  /** Writes the manifest (JSONL) as a ResultRef kept under the graph's id; answers the ref id. */
  putManifest(graphId: string, jsonl: string): Promise<string>;
  /** A run's main ResultRef (its result value, else its first out/ file), for the envelope line. */
  refOf?(runId: string): Promise<string | null>;
  /** A voter's ballot: its result value (`result`) or a JSON file of its out/ (`out/<path>`), parsed; undefined when not JSON; throws when it is not there. Bounded by the port. */
  readBallot?(runId: string, ballot: string): Promise<unknown>;
  /** The lease an attempt's run got (for explain); null when it is not readable. */
  leaseOf?(runId: string): Promise<GraphAttemptLease | null>;
  /** A committed file of a run's out/ (a map's items) as text; throws when it is not there or over maxBytes (never cut). */
  readText?(runId: string, file: string, maxBytes: number): Promise<string>;
  /** A graph input's ResultRef (a map's items) as text; throws when it is gone or over maxBytes (never cut). */
  readRefText?(ref: string, maxBytes: number): Promise<string>;
  /**
   * May the caller (a run; null: the operator) hand this ref to its nodes? The rule a spawner's
   * `artifact_refs` obey (a run: refs of its own descendants, under refs.read and
   * artifacts.read); checked before the graph starts, and again by each node's spawn.
   */
  checkRef?(ref: string, callerRunId: string | null): Promise<Result<void, BrigError>>;
  /** The head (≤ maxBytes) of a run's committed result value — else a line naming its out/ files — for `context.summaries_of`; null when it has none. */
  summaryOf?(runId: string, maxBytes: number): Promise<string | null>;
  now?: () => Date;
  onEvent?(e: GraphEvent): void;
}

export interface RunGraphOptions {
  source?: string;
  /** Who submits it (a gate's prevent_self compares the approver with it). */
  by?: string;
  /**
   * A running agent run calling `graph_run` through its broker: the graph counts as one child
   * of it — every node is spawned with it as parent (so its lease is this run's lease ∩ the
   * node's request, never the operator's), at its depth + 1 under maxDepth, and running
   * nodes ≤ min(max_parallel, its children cap).
   */
  caller?: { runId: string; depth: number; maxChildren: number; maxDepth: number; tokens?: number; costUsd?: number };
}

export interface GraphWaitOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * A run's end as a node result. A kill is `cancelled` only when the graph was cancelled. A run
 * that completed without a file its spawn's `expected_outputs` names did not do the node's work:
 * `failed` (error `expected_output_missing`), so dependents never see a partial output and
 * `retry.on: [failed]` may run it again.
 */
export function nodeResultOf(r: Pick<RunRecord, 'endReason'> & { missingOutputs?: readonly string[] }, cancelled: boolean): NodeResult {
  switch (r.endReason) {
    case 'completed':
      return (r.missingOutputs?.length ?? 0) > 0 ? 'failed' : 'succeeded';
    case 'watchdog_timeout':
      return 'timed_out';
    case 'killed':
      return cancelled ? 'cancelled' : 'failed';
    default:
      return 'failed';
  }
}

export function newGraphId(): string {
  return `g-${Date.now().toString(36)}${randomBytes(6).toString('hex')}`;
}

/** The spawn request of one node (its task's `{{inputs.<name>}}` filled). */
export function requestOf(def: GraphDefinition, n: GraphNodeSpec, graphId: string, item?: string, reserved?: Reservation | null): SpawnRequestInput {
  const s = n.spawn;
  // The attempt's reservation bounds its run's lease (limits only shrink: the smaller of the spawn's and the reservation).
  const min = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));
  // The lease ceiling (define refused a node asking over it): a node naming no caps asks for exactly the ceiling's, no limit for the ceiling's.
  const ceiling = def.spec.lease;
  const caps = s.caps ?? ceiling?.caps;
  const asked = { ...ceiling?.limits, ...s.limits };
  const limits = { ...asked, ...(reserved?.tokens !== undefined ? { tokens: min(asked.tokens, reserved.tokens)! } : {}), ...(reserved?.costUsd !== undefined ? { costUsd: min(asked.costUsd, reserved.costUsd)! } : {}) };
  const timeout = s.timeout_ms ?? n.budget?.wall_ms ?? ceiling?.timeout_ms;
  if (n.kind === 'tally' || n.kind === 'gate' || n.kind === 'split' || n.kind === 'join') throw new BrigError('internal', `node ${n.id} is a ${n.kind}: it makes no run`);
  return {
    task: taskOf(def.spec, n, item),
    kind: n.kind,
    ...(s.agent !== undefined ? { agent: s.agent } : {}),
    ...(s.model !== undefined ? { model: s.model } : {}),
    ...(s.script !== undefined ? { script: s.script } : {}),
    ...(s.argv !== undefined ? { argv: s.argv } : {}),
    ...(caps !== undefined ? { caps } : {}),
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
    ...(s.profile !== undefined ? { profile: s.profile } : {}),
    ...(s.objective !== undefined ? { objective: s.objective } : {}),
    ...(s.max_steps !== undefined ? { max_steps: s.max_steps } : {}),
    ...(timeout !== undefined ? { timeout } : {}),
    ...(s.expected_outputs !== undefined ? { expected_outputs: s.expected_outputs } : {}),
    label: `${graphId}/${n.id}`.slice(0, 128),
    async: true,
  };
}

/**
 * What a node is told of upstream nodes (`context.summaries_of`) and a gate shows its decider
 * (`show`): each named node's committed result head (≤ 1 KiB) from the result store — never a
 * file a child can still write — or a tally's count; a node with nothing to tell is said so,
 * never left out.
 */
async function resultHeads(p: Pick<GraphPorts, 'summaryOf'>, nodes: readonly GraphNodeRecord[], ids: readonly string[]): Promise<{ node: string; text: string }[]> {
  const out: { node: string; text: string }[] = [];
  for (const id of ids) {
    const n = nodes.find((x) => x.id === id)!;
    const text = n.tally ? tallyLine(n.tally) : n.committedRunId && p.summaryOf ? await p.summaryOf(n.committedRunId, SUMMARY_BOUNDS.bytes).catch(() => null) : null;
    out.push({ node: id, text: text ?? `(no result: ${id} ${n.state === 'succeeded' ? 'committed no result value' : `ended ${n.state}`})` });
  }
  return out;
}

class LiveGraph {
  cancelled = false;
  /** Who cancelled it: its kills are recorded as theirs (an operator, or `parent` for the run that started it). */
  cancelledBy: 'operator' | 'parent' = 'operator';
  /** Set once a reservation could not be made (kept on the record as the nodes skipped `budget_exhausted`). */
  stopped: SkipReason | null;
  #wake: () => void = () => {};
  #saving: Promise<void> = Promise.resolve();
  #queued: Promise<void> | null = null;
  /** An attempt ended since the last save. */
  #dirty = false;
  readonly done: Promise<void>;
  #resolveDone!: () => void;
  readonly #nodes: Map<string, GraphNodeSpec>;
  readonly #planDef: PlanInput['def'];

  constructor(
    readonly rec: GraphRecord,
    readonly def: GraphDefinition,
    readonly p: GraphPorts,
  ) {
    this.done = new Promise((r) => (this.#resolveDone = r));
    this.#nodes = new Map(def.expanded.map((n) => [n.id, n]));
    this.#planDef = { order: def.order, sinks: def.sinks, spec: { nodes: def.expanded, on_failure: def.spec.on_failure } };
    this.stopped = rec.nodes.some((n) => n.skipReason === 'budget_exhausted') ? 'budget_exhausted' : null;
  }

  /**
   * An attempt's reservation out of the graph's budget, before it starts; none possible stops
   * the graph (this node and every pending one skipped `budget_exhausted`, running ones finish).
   */
  #reserve(n: GraphNodeRecord): { ok: true; reserved: Reservation | null } | { ok: false } {
    if (!isRunNode(n)) return { ok: true, reserved: null };
    const waiting = this.rec.nodes.filter((x) => x.state === 'pending' && isRunNode(x)).length;
    const r = reserve(this.def.spec.budget, budgetState(this.rec.nodes), this.#nodes.get(n.id)!.budget, waiting);
    if (r.ok) return { ok: true, reserved: Object.keys(r.reserved).length > 0 ? r.reserved : null };
    this.stopped = 'budget_exhausted';
    this.rec.budgetStop = { node: n.id, why: r.why };
    return { ok: false };
  }

  #now = () => (this.p.now ?? (() => new Date()))().toISOString();
  #node = (id: string) => this.rec.nodes.find((n) => n.id === id)!;
  #states = () => new Map<string, NodeState>(this.rec.nodes.map((n) => [n.id, n.state]));

  /**
   * Serialized saves, each of the record as it is when its turn comes; a save asked while one
   * is still waiting for its turn joins it (that one will write the newer state anyway).
   */
  save(): Promise<void> {
    if (this.#queued) return this.#queued;
    const next = this.#saving.then(() => {
      this.#queued = null;
      return this.p.store.save(this.rec);
    });
    this.#queued = next;
    this.#saving = next.catch(() => {});
    return next;
  }

  #emit(e: GraphEvent): void {
    try {
      this.p.onEvent?.(e);
    } catch {
      /* an observer never breaks a graph */
    }
  }

  /**
   * The graph's wall budget at run time: past createdAt + budget.wall_ms (a restart re-arms it
   * from the record, never extends it) the graph stops — running attempts killed (by system,
   * whole subtrees), a waiting gate ended, pending nodes skipped `budget_exhausted`.
   */
  #armWall(): void {
    const wall = this.def.spec.budget.wall_ms;
    if (wall === undefined || this.rec.endedAt) return;
    const left = Math.max(0, Date.parse(this.rec.createdAt) + wall - Date.now());
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#wallPassed(wall);
    }, Math.min(left, 2 ** 31 - 1));
    timer.unref();
    this.#timers.add(timer);
  }

  #wallPassed(wall: number): void {
    if (this.rec.endedAt || this.cancelled || this.stopped) return;
    this.stopped = 'budget_exhausted';
    this.rec.budgetStop = { node: null, why: `budget.wall_ms ${wall} passed` };
    for (const n of this.rec.nodes) {
      const a = n.attempts.at(-1);
      if (n.state !== 'running' || !a) continue;
      if (n.kind === 'gate') {
        for (const t of this.#timers) clearTimeout(t);
        a.state = 'ended';
        a.result = 'failed';
        a.endReason = 'budget_exhausted';
        a.endedAt = this.#now();
        n.state = 'failed';
        if (n.gate) n.gate = { ...n.gate, decision: 'rejected', by: 'budget_exhausted', at: a.endedAt };
      } else if (a.runId) void this.p.supervisor.kill(a.runId, { confirm: true, by: 'system' }).catch(() => {});
    }
    this.#dirty = true;
    this.#wake();
  }

  async drive(): Promise<void> {
    this.#armWall();
    try {
      for (;;) {
        const woke = new Promise<void>((r) => (this.#wake = r));
        for (const go of this.#open.splice(0)) void go();
        const states = this.#states();
        const end = graphEnd({ def: this.#planDef, states, cancelled: this.cancelled, stopped: this.stopped });
        if (end) return await this.#finish(end.state, end.endReason);
        const steps = plan({ def: this.#planDef, states, parallel: this.rec.parallel, cancelled: this.cancelled, stopped: this.stopped });
        const starts: [GraphNodeRecord, GraphAttempt][] = [];
        for (const s of steps) {
          const n = this.#node(s.node);
          const held = s.kind === 'start' && !this.stopped ? this.#reserve(n) : null;
          if (s.kind === 'skip' || !held?.ok) {
            n.state = 'skipped';
            n.skipReason = s.kind === 'skip' ? s.reason : 'budget_exhausted';
          } else {
            const a: GraphAttempt = {
              n: n.attempts.length + 1,
              key: `graph:${this.rec.id}:${n.id}:${n.attempts.length + 1}`,
              state: 'starting',
              runId: null,
              result: null,
              endReason: null,
              errorCode: null,
              startedAt: this.#now(),
              endedAt: null,
              tokens: null,
              costUsd: null,
              ...(held.reserved ? { reserved: held.reserved } : {}),
            };
            n.state = 'running';
            n.attempts.push(a);
            const g = this.#nodes.get(n.id)!.gate;
            // A gate's deadline is on disk with its start: a restart keeps it, never extends it.
            if (g) n.gate = { deadline: new Date(Date.parse(a.startedAt) + g.timeout_ms).toISOString(), decision: null, by: null, at: null, noteHash: null };
            starts.push([n, a]);
          }
        }
        // Write-ahead: ended attempts, skips and `starting` attempts are on disk before any spawn is asked.
        if (steps.length > 0 || this.#dirty) {
          this.#dirty = false;
          await this.save();
        }
        for (const s of steps) this.#emit({ type: 'graph.node', graphId: this.rec.id, node: s.node, state: this.#node(s.node).state, attempt: this.#node(s.node).attempts.length, runId: null });
        for (const [n, a] of starts) void this.#start(n, a);
        if (steps.length > 0 && starts.length === 0) continue; // skips may free or end more at once
        await woke;
      }
    } catch (e) {
      // The record could not be written: the graph cannot be kept honest; end it as failed in memory.
      this.rec.state = 'failed';
      this.rec.endReason = 'internal';
      this.rec.endedAt = this.#now();
      this.#resolveDone();
      throw e;
    }
  }

  #start(n: GraphNodeRecord, a: GraphAttempt): Promise<void> {
    switch (n.kind) {
      case 'tally':
        return this.#tally(n, a);
      case 'gate':
        return this.#armGate(n, a);
      case 'split':
        return this.#split(n, a);
      case 'join':
        return this.#join(n, a);
      default:
        return this.#attempt(n, a);
    }
  }

  /** A map's items, once read (kept in the graph's own store, so a restart finds the same ones). */
  readonly #items = new Map<string, string[]>();
  async #itemsOf(split: string): Promise<string[]> {
    const got = this.#items.get(split) ?? (await this.p.store.getItems(this.rec.id, split));
    this.#items.set(split, got);
    return got;
  }

  /** Declared inputs → mounts: a node's committed run at /artifacts/<as>, a join's parts at /artifacts/<as>-<name>, a graph input's ref at /artifacts/<as>. */
  #mounts(spec: GraphNodeSpec): NonNullable<SpawnContext['inputs']> {
    return spec.inputs.flatMap((i): NonNullable<SpawnContext['inputs']> => {
      const input = graphInputOf(i.from);
      if (input !== null) {
        const v = this.def.spec.inputs[input];
        return v && 'ref' in v ? [{ as: i.as, ref: v.ref }] : [];
      }
      const from = this.#node(i.from);
      return from.parts ? from.parts.map((p) => ({ as: `${i.as}-${p.name}`, runId: p.runId })) : [{ as: i.as, runId: from.committedRunId ?? '' }];
    });
  }

  /**
   * One attempt of a run kind: spawned under its key, then waited for. `resumed`: the attempt
   * a dead supervisor left open — with a run id it is reattached (never spawned again); a run
   * the restart lost (`ghost_sweep`) ends the attempt `supervisor_restart`, retried only when
   * the node is `retry.idempotent` (and has attempts left).
   */
  async #attempt(n: GraphNodeRecord, a: GraphAttempt, resumed = false): Promise<void> {
    const spec = this.#nodes.get(n.id)!;
    const ctx: SpawnContext = { callerId: a.key, inputs: this.#mounts(spec), ...(this.rec.callerRunId ? { parentRunId: this.rec.callerRunId } : {}) };
    let ended: RunRecord | null = null;
    let errorCode: string | null = null;
    try {
      if (spec.context && !a.runId) ctx.summaries = await resultHeads(this.p, this.rec.nodes, spec.context.summaries_of);
      const item = spec.item && !a.runId ? (await this.#itemsOf(spec.item.split))[spec.item.index] : undefined;
      const r = a.runId ? ok({ id: a.runId }) : await this.p.supervisor.spawn(requestOf(this.def, spec, this.rec.id, item, a.reserved), ctx);
      if (!r.ok) errorCode = r.error.code;
      else {
        const fresh = a.runId === null || a.state !== 'running';
        a.runId = r.value.id;
        a.state = 'running';
        if (fresh) {
          await this.save();
          this.#emit({ type: 'graph.node', graphId: this.rec.id, node: n.id, state: 'running', attempt: a.n, runId: a.runId });
        }
        if (this.cancelled) await this.p.supervisor.kill(a.runId, { confirm: true, by: this.cancelledBy });
        for (;;) {
          const w = await this.p.supervisor.wait(a.runId);
          if (!w.ok) {
            errorCode = w.error.code;
            break;
          }
          if (w.value.status === 'ended') {
            ended = w.value;
            break;
          }
        }
      }
    } catch (e) {
      errorCode = e instanceof BrigError ? e.code : 'internal';
    }
    // The restart lost the attempt's run (its jail was gone, or its record): its side effects may have happened.
    const lost = resumed && (ended?.endReason === 'ghost_sweep' || (!ended && errorCode === 'run_not_found'));
    const result: NodeResult = ended && !lost ? nodeResultOf(ended, this.cancelled) : this.cancelled ? 'cancelled' : 'failed';
    a.state = 'ended';
    a.result = result;
    a.endReason = lost ? 'supervisor_restart' : (ended?.endReason ?? null);
    a.errorCode = ended?.error?.code ?? (ended?.endReason === 'completed' && (ended.missingOutputs?.length ?? 0) > 0 ? 'expected_output_missing' : errorCode);
    a.endedAt = this.#now();
    a.tokens = ended?.tokens ?? null;
    a.costUsd = ended?.costUsd ?? null;
    const retry = spec.retry;
    const left = n.attempts.length < retry.max + 1;
    const again = !this.cancelled && !this.stopped && left && (lost ? retry.idempotent : (retry.on as string[]).includes(result));
    // A refine round's stop_when, on its committed result (unreadable or not holding: the chain goes on).
    const stop = result === 'succeeded' && spec.stop && a.runId && this.p.readBallot ? await this.p.readBallot(a.runId, spec.stop.when.file).then((v) => stopHolds(spec.stop!.when, v), () => false) : false;
    n.state = again ? 'pending' : result;
    if (result === 'succeeded') n.committedRunId = a.runId;
    if (stop) this.#skip(spec.stop!.later, 'stopped_early');
    // The scheduler saves the end in its next write (ahead of whatever it does next: one fsync
    // per transition); a crash before that finds the attempt running and ends it (recover).
    this.#dirty = true;
    this.#emit({ type: 'graph.node', graphId: this.rec.id, node: n.id, state: n.state, attempt: a.n, runId: a.runId });
    this.#wake();
  }

  readonly #timers = new Set<NodeJS.Timeout>();

  /** A gate waits for an operator; its timer rejects it at the deadline. */
  async #armGate(n: GraphNodeRecord, a: GraphAttempt): Promise<void> {
    a.state = 'running';
    this.#emit({ type: 'graph.node', graphId: this.rec.id, node: n.id, state: 'running', attempt: a.n, runId: null });
    const left = Math.max(0, Date.parse(n.gate!.deadline) - Date.now());
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      void this.decideGate(n.id, 'rejected', 'timeout', null).catch(() => {});
    }, Math.min(left, 2 ** 31 - 1));
    // Not unref'd: a graph waiting on a gate keeps its process (an in-process `brig graph run`) alive until it ends.
    this.#timers.add(timer);
  }

  /** The one decision of a waiting gate: approved (succeeded) or rejected (failed); ledgered. */
  async decideGate(node: string, decision: 'approved' | 'rejected', by: string, noteHash: string | null): Promise<Result<GraphRecord, BrigError>> {
    const n = this.rec.nodes.find((x) => x.id === node);
    if (!n || n.kind !== 'gate') return err(new BrigError('invalid_input', `graph ${this.rec.id} has no gate ${node.slice(0, 60)}`, { hint: `Its gates: ${this.rec.nodes.filter((x) => x.kind === 'gate').map((x) => x.id).join(', ') || 'none'}` }));
    if (n.state !== 'running' || !n.gate || n.gate.decision !== null) {
      return err(new BrigError('not_running', `gate ${node} is not waiting (${n.state}${n.gate?.decision ? `, ${n.gate.decision} by ${n.gate.by}` : ''})`, { data: { status: n.state } }));
    }
    const spec = this.#nodes.get(node)!.gate!;
    const system = by === 'timeout' || by === 'budget_exhausted';
    if (!system && Array.isArray(spec.approvers) && !spec.approvers.includes(by)) {
      return err(new BrigError('capability_denied', `gate ${node} is decided only by its approvers (${spec.approvers.join(', ').slice(0, 300)}); ${by.slice(0, 128)} is not one of them`, { data: { what: 'approvers' }, hint: 'One of the approvers the spec lists decides it (the CLI names you by your user name; HTTP by its `by` field).' }));
    }
    if (decision === 'approved' && spec.prevent_self && this.rec.submittedBy && by === this.rec.submittedBy) {
      return err(new BrigError('capability_denied', `gate ${node} may not be approved by the graph's submitter (${by})`, { data: { what: 'prevent_self' }, hint: 'Another operator approves it.' }));
    }
    const a = n.attempts.at(-1)!;
    n.gate = { ...n.gate, decision, by, at: this.#now(), noteHash };
    a.state = 'ended';
    a.result = decision === 'approved' ? 'succeeded' : 'failed';
    a.endReason = by === 'timeout' ? 'gate_timeout' : decision;
    a.endedAt = n.gate.at;
    n.state = a.result;
    await this.save();
    this.#emit({ type: 'graph.gate_decided', graphId: this.rec.id, node, decision, by, noteHash });
    this.#emit({ type: 'graph.node', graphId: this.rec.id, node, state: n.state, attempt: a.n, runId: null });
    this.#wake();
    return ok(structuredClone(this.rec));
  }

  /** Pending nodes the service itself ends skipped (a slot without an item, rounds after a stop). */
  #skip(ids: readonly string[], reason: SkipReason): void {
    for (const id of ids) {
      const x = this.#node(id);
      if (x.state !== 'pending') continue;
      x.state = 'skipped';
      x.skipReason = reason;
      this.#emit({ type: 'graph.node', graphId: this.rec.id, node: id, state: 'skipped', attempt: 0, runId: null });
    }
    this.#dirty = true;
  }

  /** A jail-less node's one attempt ends (tally, split, join). */
  async #endHere(n: GraphNodeRecord, a: GraphAttempt, result: NodeResult, endReason: string, skipReason: SkipReason | null = null): Promise<void> {
    a.state = 'ended';
    a.result = this.cancelled ? 'cancelled' : result;
    a.endReason = endReason;
    a.endedAt = this.#now();
    n.state = a.result;
    if (n.state === 'skipped') n.skipReason = skipReason;
    await this.save().catch(() => {});
    this.#emit({ type: 'graph.node', graphId: this.rec.id, node: n.id, state: n.state, attempt: a.n, runId: null });
    this.#wake();
  }

  /**
   * A map's split: its items, read once and bounded — listed in the spec, or a JSONL / JSON-array
   * file the upstream committed (never a file a child can still write) — kept in the graph's
   * own store before any slot starts; slots past the count end skipped (`no_item`). More items
   * than max_items, or one over item_max_bytes, fail it: nothing is dropped or cut.
   */
  async #split(n: GraphNodeRecord, a: GraphAttempt): Promise<void> {
    const s = this.#nodes.get(n.id)!.split!;
    const why = await (async (): Promise<string | string[]> => {
      let values: unknown[];
      const input = 'items' in s.over ? null : graphInputOf(s.over.from);
      if ('items' in s.over) values = s.over.items;
      else if (input !== null) {
        const v = this.def.spec.inputs[input];
        if (!v || !('ref' in v) || !this.p.readRefText) return 'no_items_file';
        const text = await this.p.readRefText(v.ref, s.max_items * (s.item_max_bytes + 2) + 2).catch(() => null);
        if (text === null) return 'items_unreadable';
        const parsed = parseItems(text);
        if (!parsed) return 'items_not_json';
        values = parsed;
      } else if ('path' in s.over) {
        const runId = this.#node(s.over.from).committedRunId;
        if (!runId || !this.p.readText) return 'no_items_file';
        const text = await this.p.readText(runId, s.over.path, s.max_items * (s.item_max_bytes + 2) + 2).catch(() => null);
        if (text === null) return 'items_unreadable';
        const parsed = parseItems(text);
        if (!parsed) return 'items_not_json';
        values = parsed;
      } else return 'no_items_file';
      if (values.length > s.max_items) return 'too_many_items';
      const texts = values.map((v) => JSON.stringify(v));
      if (texts.some((t) => Buffer.byteLength(t) > s.item_max_bytes)) return 'item_too_large';
      return texts;
    })();
    if (typeof why === 'string') return this.#endHere(n, a, 'failed', why);
    await this.p.store.putItems(this.rec.id, n.id, why);
    this.#items.set(n.id, why);
    n.items = why.length;
    this.#skip(s.slots.slice(why.length), 'no_item');
    return this.#endHere(n, a, 'succeeded', 'split');
  }

  /** A macro's end: from its dependencies' results, and which committed runs an input from it sees. */
  async #join(n: GraphNodeRecord, a: GraphAttempt): Promise<void> {
    const j = this.#nodes.get(n.id)!.join!;
    const deps = this.#nodes.get(n.id)!.depends_on.map((d) => this.#node(d));
    const done = (x: GraphNodeRecord) => x.state === 'succeeded' || (x.state === 'skipped' && (x.skipReason === 'no_item' || x.skipReason === 'stopped_early'));
    const lead = j.mode === 'items' ? this.#node(j.split!) : deps[0]!;
    // The macro never began (its `when` did not hold, or fail_fast): the join is skipped as it was.
    if (lead.state === 'skipped' && lead.attempts.length === 0 && deps.every((x) => x.state === 'skipped')) return this.#endHere(n, a, 'skipped', lead.skipReason ?? 'unsatisfiable', lead.skipReason);
    const ok = deps.every(done) && deps.some((x) => x.state === 'succeeded');
    if (ok && j.mode === 'last') n.committedRunId = deps.filter((x) => x.state === 'succeeded').at(-1)!.committedRunId;
    if (ok && j.mode === 'items') n.parts = deps.filter((x) => x.id !== j.split && x.state === 'succeeded').map((x) => ({ name: x.id.slice(x.id.lastIndexOf('.') + 1), runId: x.committedRunId! }));
    if (ok && j.mode === 'all') n.parts = deps.map((x) => ({ name: j.names![x.id]!, runId: x.committedRunId! }));
    return this.#endHere(n, a, ok ? 'succeeded' : 'failed', ok ? 'joined' : 'part_not_succeeded');
  }

  /** A tally: no run; its voters' ballots counted (a voter that did not succeed is absent). */
  async #tally(n: GraphNodeRecord, a: GraphAttempt): Promise<void> {
    const spec = this.#nodes.get(n.id)!;
    const t = spec.tally!;
    const ballots: Ballot[] = [];
    for (const d of spec.depends_on) {
      const voter = this.#node(d);
      const runId = voter.committedRunId;
      if (!runId || voter.state !== 'succeeded') {
        ballots.push({ voter: d, value: undefined, state: 'absent' });
        continue;
      }
      try {
        if (!this.p.readBallot) throw new Error('no ballots here');
        ballots.push({ voter: d, value: await this.p.readBallot(runId, t.ballot), state: 'read' });
      } catch {
        ballots.push({ voter: d, value: undefined, state: 'unreadable' });
      }
    }
    const outcome = tally(t, ballots);
    n.tally = outcome;
    return this.#endHere(n, a, outcome.outcome === 'decided' ? 'succeeded' : 'failed', outcome.outcome);
  }

  async #finish(state: GraphRecord['state'], endReason: string): Promise<void> {
    for (const t of this.#timers) clearTimeout(t);
    if (this.rec.endedAt) return this.#resolveDone();
    const rows = manifestRows(this.rec);
    const refs = new Map<string, string | null>();
    for (const n of this.rec.nodes) {
      const last = n.attempts.at(-1);
      if (last?.runId && this.p.refOf) refs.set(n.id, await this.p.refOf(last.runId).catch(() => null));
    }
    for (const r of rows) r.ref = r.run_id && refs.get(r.node) !== undefined && r.attempt === this.#node(r.node).attempts.length ? refs.get(r.node)! : null;
    const manifestRef = await this.p.putManifest(this.rec.id, rows.map((r) => JSON.stringify(r)).join('\n') + '\n').catch(() => null);
    this.rec.state = state;
    this.rec.endReason = endReason;
    this.rec.endedAt = this.#now();
    this.rec.manifestRef = manifestRef;
    this.rec.envelope = graphEnvelope(this.rec, { refs, sinks: this.def.sinks, label: this.def.spec.label ?? null, rows: rows.length });
    await this.save();
    this.#emit({ type: 'graph.ended', graphId: this.rec.id, state, endReason });
    this.#resolveDone();
  }

  /**
   * After a restart (`on_restart: resume`): every attempt the record left open goes on, then
   * the scheduler. A run kind's attempt with a run (by id, or found by its key among the
   * runs) is reattached; one whose spawn never made a run is asked again under the same key;
   * a gate re-arms with the deadline on the record (one past it rejects at once); a tally,
   * split or join is redone (pure over committed runs and the graph's own store). Ended
   * attempts — completed nodes above all — are never touched.
   */
  resume(runOf: (a: GraphAttempt) => Pick<RunRecord, 'id' | 'status' | 'endReason'> | null): { reattached: number; lost: number; respawned: number; gates: number } {
    const counts = { reattached: 0, lost: 0, respawned: 0, gates: 0 };
    const open: (() => Promise<void>)[] = [];
    for (const n of this.rec.nodes) {
      const a = n.attempts.at(-1);
      if (!a || a.state === 'ended') continue;
      if (n.kind === 'gate') {
        counts.gates++;
        open.push(() => this.#armGate(n, a));
      } else if (n.kind === 'tally' || n.kind === 'split' || n.kind === 'join') open.push(() => this.#start(n, a));
      else {
        const run = runOf(a);
        a.runId ??= run?.id ?? null;
        if (!a.runId) counts.respawned++;
        else if (!run || (run.status === 'ended' && run.endReason === 'ghost_sweep')) counts.lost++;
        else counts.reattached++;
        open.push(() => this.#attempt(n, a, true));
      }
    }
    // drive() takes them up once its wake is armed (no end of one can be missed).
    this.#open = open;
    return counts;
  }

  /** The attempts resume() found open, for drive() to go on with. */
  #open: (() => Promise<void>)[] = [];

  cancel(by: 'operator' | 'parent' = 'operator'): void {
    this.cancelled = true;
    this.cancelledBy = by;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    for (const n of this.rec.nodes) {
      const a = n.attempts.at(-1);
      if (n.kind === 'gate' && n.state === 'running' && a) {
        a.state = 'ended';
        a.result = 'cancelled';
        a.endReason = 'cancelled';
        a.endedAt = this.#now();
        n.state = 'cancelled';
        this.#dirty = true;
        continue;
      }
      if (n.state === 'running' && a?.runId) void this.p.supervisor.kill(a.runId, { confirm: true, by });
    }
    this.#wake();
  }
}

/** The graphs of one supervisor: define, run, status, wait, cancel. */
export class GraphService {
  readonly #live = new Map<string, LiveGraph>();

  constructor(readonly p: GraphPorts) {}

  #defineOptions(source?: string, caller?: RunGraphOptions['caller']) {
    const maxDepth = caller ? Math.min(caller.maxDepth, this.p.limits.maxDepth) : this.p.limits.maxDepth;
    const callerBudget = caller ? { ...(caller.tokens !== undefined ? { tokens: caller.tokens } : {}), ...(caller.costUsd !== undefined ? { costUsd: caller.costUsd } : {}) } : undefined;
    return { callerDepth: caller?.depth ?? 0, maxDepth, defaultTimeoutMs: this.p.limits.defaultTimeoutMs, ...(source ? { source } : {}), ...(callerBudget ? { callerBudget } : {}) };
  }

  /** Define time alone: the topological order and the nodes, or every refusal with its line. Starts nothing. */
  async define(text: string, o: RunGraphOptions = {}): Promise<Result<GraphDefinition, BrigError>> {
    return defineGraphText(text, this.#defineOptions(o.source));
  }

  /** Checks and starts a graph; answers at once with its id, order and nodes. */
  async run(text: string, o: RunGraphOptions = {}): Promise<Result<GraphStarted, BrigError>> {
    const d = defineGraphText(text, this.#defineOptions(o.source, o.caller));
    if (!d.ok) return d;
    const def = d.value;
    // Every ref input is one the caller may hand over, before anything starts (each node's spawn checks it again).
    for (const [name, v] of Object.entries(def.spec.inputs)) {
      if (!('ref' in v)) continue;
      if (!this.p.checkRef) return err(new BrigError('ref_not_found', `input ${name}: this supervisor has no result store to hand refs from`));
      const c = await this.p.checkRef(v.ref, o.caller?.runId ?? null);
      if (!c.ok) return err(new BrigError(c.error.code, `input ${name}: ${c.error.message}`, { ...(c.error.hint ? { hint: c.error.hint } : {}), ...(c.error.data ? { data: c.error.data } : {}) }));
    }
    const parallel = Math.min(def.spec.concurrency.max_parallel, this.p.limits.maxChildren, o.caller?.maxChildren ?? Infinity);
    if (parallel < 1) return err(new BrigError('children_exceeded', 'the caller may have no children (maxChildren 0)', { data: { limit: 0, current: 0 } }));
    const now = (this.p.now ?? (() => new Date()))().toISOString();
    const graphId = newGraphId();
    const slot = o.caller && this.p.holdSlot ? this.p.holdSlot(o.caller.runId, graphId) : ok(() => {});
    if (!slot.ok) return slot;
    const rec: GraphRecord = {
      v: 1,
      id: graphId,
      label: def.spec.label ?? null,
      specHash: def.specHash,
      state: 'running',
      endReason: null,
      createdAt: now,
      endedAt: null,
      callerRunId: o.caller?.runId ?? null,
      submittedBy: o.by ?? null,
      parallel,
      order: def.order,
      nodes: def.order.map((id) => ({ id, kind: def.nodes.find((n) => n.id === id)!.kind, state: 'pending', skipReason: null, attempts: [], committedRunId: null })),
      manifestRef: null,
      envelope: null,
    };
    try {
      await this.p.store.create(rec, def.spec);
    } catch (e) {
      slot.value();
      throw e;
    }
    const live = new LiveGraph(rec, def, this.p);
    this.#live.set(rec.id, live);
    this.p.onEvent?.({ type: 'graph.started', graphId: rec.id, nodes: rec.nodes.length, parallel, ...(rec.callerRunId ? { runId: rec.callerRunId } : {}) });
    void live
      .drive()
      .catch(() => {})
      .finally(() => {
        this.#live.delete(rec.id);
        slot.value();
      });
    return ok({ graphId: rec.id, order: def.order, nodes: def.nodes, parallel });
  }

  async status(graphId: string): Promise<Result<GraphRecord, BrigError>> {
    const live = this.#live.get(graphId);
    if (live) return ok(structuredClone(live.rec));
    const rec = await this.p.store.load(graphId).catch((e: unknown) => (e instanceof BrigError ? e : new BrigError('internal', 'could not read the graph record', { cause: e })));
    if (rec instanceof BrigError) return err(rec);
    if (!rec) return err(new BrigError('graph_not_found', `no graph ${graphId}`, { data: { graphId } }));
    return ok(rec);
  }

  /** Until the graph ends (or the timeout): its record; once ended it carries the envelope and the manifest ref. */
  async wait(graphId: string, o: GraphWaitOptions = {}): Promise<Result<GraphRecord, BrigError>> {
    const live = this.#live.get(graphId);
    if (live) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        live.done,
        new Promise<void>((r) => {
          if (o.timeoutMs !== undefined) timer = setTimeout(r, o.timeoutMs);
          o.signal?.addEventListener('abort', () => r(), { once: true });
        }),
      ]);
      clearTimeout(timer);
    }
    return this.status(graphId);
  }

  /** The end as the coordinator gets it; `not_running` while the graph runs. */
  async outcome(graphId: string): Promise<Result<GraphOutcome, BrigError>> {
    const s = await this.status(graphId);
    if (!s.ok) return s;
    const r = s.value;
    if (r.state === 'running') return err(new BrigError('not_running', `graph ${graphId} is still running`, { data: { status: 'running' } }));
    return ok({ graphId, state: r.state, endReason: r.endReason, envelope: r.envelope ?? '', manifestRef: r.manifestRef });
  }

  /** An operator's decision on a waiting gate. The broker has no such method: no child can reach it. */
  async decide(graphId: string, node: string, d: GateDecision): Promise<Result<GraphRecord, BrigError>> {
    if (d.decision !== 'approve' && d.decision !== 'reject') return err(new BrigError('invalid_input', 'a decision is approve or reject'));
    if (!d.by || d.by.length > 128) return err(new BrigError('invalid_input', 'a decision names who decides (by, ≤ 128 characters)'));
    if (d.note !== undefined && d.note.length > 4096) return err(new BrigError('invalid_input', 'a note is at most 4096 characters'));
    const live = this.#live.get(graphId);
    if (!live) {
      const s = await this.status(graphId);
      if (!s.ok) return s;
      return err(new BrigError('not_running', `graph ${graphId} is not running here (${s.value.state})`, { data: { status: s.value.state } }));
    }
    const noteHash = d.note ? createHash('sha256').update(d.note).digest('hex') : null;
    return live.decideGate(node, d.decision === 'approve' ? 'approved' : 'rejected', d.by, noteHash);
  }

  /** `by`: whose kills they are — an operator's (default), or `parent` when the run that started the graph cancels it (graph.cancel). */
  async cancel(graphId: string, o: { confirm: boolean; by?: 'operator' | 'parent' }): Promise<Result<GraphRecord, BrigError>> {
    if (o.confirm !== true) return err(new BrigError('invalid_input', 'cancelling a graph needs confirm: true', { hint: 'Pass --confirm.' }));
    const live = this.#live.get(graphId);
    if (!live) {
      const s = await this.status(graphId);
      if (!s.ok) return s;
      return err(new BrigError('not_running', `graph ${graphId} is not running here (${s.value.state})`, { data: { status: s.value.state } }));
    }
    live.cancel(o.by);
    return ok(structuredClone(live.rec));
  }

  /** An operator's view: per node its attempts, end reasons, skips, waits, retries and each attempt's lease. */
  async explain(graphId: string): Promise<Result<GraphExplanation, BrigError>> {
    const s = await this.status(graphId);
    if (!s.ok) return s;
    const def = await definitionOf(this.p.store, graphId, this.#defineOptions());
    if (!def.ok) return def;
    const leases = new Map<string, GraphAttemptLease | null>();
    for (const n of s.value.nodes) for (const a of n.attempts) if (a.runId && this.p.leaseOf) leases.set(a.runId, await this.p.leaseOf(a.runId).catch(() => null));
    const x = explainGraph(s.value, def.value, leases, (this.p.now ?? (() => new Date()))().toISOString());
    // A gate that began shows the person deciding what it names: a tally's count, a run's committed result head.
    for (const n of x.nodes) {
      const show = def.value.expanded.find((e) => e.id === n.id)?.gate?.show;
      if (!show || n.attempts.length === 0) continue;
      n.shown = await resultHeads(this.p, s.value.nodes, show);
    }
    return ok(x);
  }

  async list(): Promise<GraphRecord[]> {
    const out: GraphRecord[] = [];
    for (const id of await this.p.store.ids()) {
      const s = await this.status(id);
      if (s.ok) out.push(s.value);
    }
    return out;
  }

  /**
   * At the supervisor's start, once its runs are reconciled (reattached, collected, requeued
   * or ghost-swept): every graph a dead supervisor left running is taken up once. With
   * `on_restart: resume` it goes on here (LiveGraph.resume); with `fail` — or when its spec no
   * longer defines the same graph under this supervisor's bounds — it ends `failed`
   * (`supervisor_restart`): its attempts' runs are killed, its pending nodes skipped.
   * Answers the graphs it took up, each with what it did.
   */
  async recover(): Promise<{ graphId: string; action: 'resumed' | 'failed' }[]> {
    const out: { graphId: string; action: 'resumed' | 'failed' }[] = [];
    let runs: { byId: Map<string, RunRecord>; byKey: Map<string, RunRecord> } | null = null;
    // An attempt written `starting` may have been spawned before the crash: its key is its caller id.
    const lookup = async () => {
      if (runs) return runs;
      const all = await this.p.supervisor.list({}).catch(() => [] as RunRecord[]);
      runs = { byId: new Map(all.map((r) => [r.id, r])), byKey: new Map(all.map((r) => [r.callerId, r])) };
      return runs;
    };
    for (const id of await this.p.store.ids()) {
      if (this.#live.has(id)) continue;
      const rec = await this.p.store.load(id).catch(() => undefined);
      if (!rec || rec.state !== 'running') continue;
      const { byId, byKey } = await lookup();
      const spec = await this.p.store.loadSpec(id).catch(() => undefined);
      const def = spec?.on_restart === 'resume' ? defineGraph(spec, [], this.#defineOptions()) : null;
      if (def?.ok && def.value.specHash === rec.specHash) {
        const live = new LiveGraph(rec, def.value, this.p);
        this.#live.set(id, live);
        const counts = live.resume((a) => (a.runId ? byId.get(a.runId) : byKey.get(a.key)) ?? null);
        this.p.onEvent?.({ type: 'graph.resumed', graphId: id, ...counts });
        // The graph was admitted before the crash: it takes its caller's slot again if one is free (never refused for it).
        const slot = rec.callerRunId && this.p.holdSlot ? this.p.holdSlot(rec.callerRunId, id) : null;
        void live
          .drive()
          .catch(() => {})
          .finally(() => {
            this.#live.delete(id);
            if (slot?.ok) slot.value();
          });
        out.push({ graphId: id, action: 'resumed' });
        continue;
      }
      await this.#failOnRestart(rec, (key) => byKey.get(key)?.id ?? null);
      out.push({ graphId: id, action: 'failed' });
    }
    return out;
  }

  /** `on_restart: fail`: the graph ends `failed` (`supervisor_restart`) once; its attempts' runs killed, pending nodes skipped. */
  async #failOnRestart(rec: GraphRecord, runOfKey: (key: string) => string | null): Promise<void> {
    const now = () => (this.p.now ?? (() => new Date()))().toISOString();
    for (const n of rec.nodes) {
      for (const a of n.attempts) {
        if (a.state === 'ended') continue;
        a.runId ??= runOfKey(a.key);
        if (a.runId) await this.p.supervisor.kill(a.runId, { confirm: true, by: 'system' }).catch(() => {});
        a.state = 'ended';
        a.result = 'failed';
        a.endReason = 'supervisor_restart';
        a.endedAt = now();
      }
      if (n.state === 'running') n.state = 'failed';
      if (n.gate && n.gate.decision === null && n.state === 'failed') n.gate = { ...n.gate, decision: 'rejected', by: 'supervisor_restart', at: rec.endedAt ?? now() };
      if (n.state === 'pending') {
        n.state = 'skipped';
        n.skipReason = 'supervisor_restart';
      }
    }
    rec.state = 'failed';
    rec.endReason = 'supervisor_restart';
    rec.endedAt = now();
    rec.envelope = graphEnvelope(rec, { refs: new Map(), sinks: [], label: rec.label, rows: manifestRows(rec).length });
    await this.p.store.save(rec);
    this.p.onEvent?.({ type: 'graph.ended', graphId: rec.id, state: rec.state, endReason: rec.endReason });
  }
}

/** A graph's definition again, from the spec kept with it (define is deterministic over it). */
export async function definitionOf(store: GraphStore, graphId: string, o: Parameters<typeof defineGraph>[2] = {}): Promise<Result<GraphDefinition, BrigError>> {
  const spec = await store.loadSpec(graphId).catch((e: unknown) => (e instanceof BrigError ? e : new BrigError('internal', 'could not read the graph spec', { cause: e })));
  if (spec instanceof BrigError) return err(spec);
  if (!spec) return err(new BrigError('state_corrupt', `graph ${graphId} has no spec.json`, { data: { graphId, file: 'spec.json' } }));
  return defineGraph(spec, [], o);
}

/** A JSON array, or JSON lines (blank lines ignored); null when any is not JSON. */
export function parseItems(text: string): unknown[] | null {
  try {
    if (text.trimStart().startsWith('[')) {
      const v = JSON.parse(text) as unknown;
      return Array.isArray(v) ? v : null;
    }
    return text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as unknown);
  } catch {
    return null;
  }
}

/** stop_when over a round's structured result: `field` equals the value, or is a number ≥ gte. */
export function stopHolds(w: StopWhen, value: unknown): boolean {
  const v = readField(value, w.field);
  return w.gte !== undefined ? typeof v === 'number' && v >= w.gte : v === w.equals;
}

export const GRAPH_ENVELOPE_BYTES = GRAPH_BOUNDS.envelopeBytes;
