/**
 * Execution graphs' vocabulary (issue 25): the `graph: brig/v1` spec as a caller writes it,
 * what `define` answers, the graph record, and what the coordinator gets at the end. A graph
 * is a set of nodes, each node attempt an ordinary brig run; docs/graphs.md says what exists.
 */
import type { BrigError, Result } from './errors.js';
import type { RunKind, SpawnLimits } from './runs.js';
import type { Capability } from './leases.js';

export const GRAPH_VERSION = 'brig/v1';

/** Hard bounds: over one is refused at define, never clamped. */
export const GRAPH_BOUNDS = {
  /** Nodes after expansion. */
  nodes: 200,
  /** Items of one map (its slots are expanded at define: max_items of them). */
  mapItems: 100,
  /** Bytes of one map item (JSON-encoded) as it enters a task. */
  itemBytes: 4096,
  /** Rounds of a refine/collaborate/debate. */
  rounds: 5,
  /** Sides of a debate. */
  sides: 4,
  /** The graph's own max_parallel ceiling (the caller's children cap bounds it further). */
  maxParallel: 32,
  inputs: 16,
  textInputBytes: 4096,
  retries: 3,
  labelChars: 128,
  /** The end envelope's bytes. */
  envelopeBytes: 4096,
} as const;

/** Node ids: lowercase, ≤ 48 characters; `.` is reserved for macro expansion. */
export const GRAPH_NODE_ID = /^[a-z][a-z0-9_-]{0,47}$/;
/** Names under /artifacts. */
export const GRAPH_INPUT_NAME = /^[a-z][a-z0-9_-]{0,47}$/;
/** Graph ids: `g-` and lowercase letters and digits. */
export const GRAPH_ID = /^g-[a-z0-9]{8,40}$/;
export function isGraphId(id: string): boolean {
  return GRAPH_ID.test(id);
}

/**
 * A node attempt's spawn key (`graph:<graph id>:<node>:<attempt>`), the caller id its run
 * carries. Only the graph service spawns under it with a parent run (a child's broker spawn
 * has its parent as caller id), so a run with a parent and such a key is a graph node: its
 * lease needs the parent to hold `graph`, not `spawn`.
 */
export function isGraphAttemptKey(key: string): boolean {
  return key.startsWith('graph:') && isGraphId(key.split(':')[1] ?? '');
}

/** Kinds whose attempt is a run. */
export const GRAPH_RUN_KINDS = ['agent', 'script', 'command'] as const satisfies readonly RunKind[];
/** Macros: each expands at define into plain nodes (run kinds, tally, split, join) anyone can see. */
export const GRAPH_MACROS = ['vote', 'map', 'map_reduce', 'refine', 'collaborate', 'debate'] as const;
/** The kinds a node may be written with: run kinds, `tally` (no jail: a pure count over ballots), `gate`, and the macros. */
export const GRAPH_NODE_KINDS = [...GRAPH_RUN_KINDS, 'tally', 'gate', ...GRAPH_MACROS] as const;
/**
 * A node's kind once macros are expanded. `split` (no jail) reads a map's items once and
 * keeps them in the graph's own store; `join` (no jail) ends a macro: it decides from its
 * dependencies' results and names the committed runs dependents see.
 */
export type GraphNodeKind = (typeof GRAPH_RUN_KINDS)[number] | 'tally' | 'gate' | 'split' | 'join';
export type GraphSpecKind = (typeof GRAPH_NODE_KINDS)[number];
type RunKindOf = (typeof GRAPH_RUN_KINDS)[number];

/**
 * Where a map's items come from: listed in the spec, a JSONL / JSON-array file an upstream
 * node committed, or a graph input that is an existing ResultRef (`from: $inputs.<name>`).
 */
export type MapOver = { items: unknown[] } | { from: string; path: string } | { from: string };

/** A node input naming a graph input (`$inputs.<name>`) rather than a node. */
export const GRAPH_INPUT_REF = /^\$inputs\.([a-z][a-z0-9_-]{0,47})$/;
/** The graph input a `from` names (`$inputs.<name>` → name), else null (it names a node). */
export function graphInputOf(from: string): string | null {
  return GRAPH_INPUT_REF.exec(from)?.[1] ?? null;
}

/**
 * A graph input: text for `{{inputs.<name>}}` in a task (≤ 4 KiB), or an existing ResultRef
 * the caller may read, handed to the nodes that declare it (`inputs: [{from: $inputs.<name>,
 * as}]`) read-only at /artifacts/<as>, or read as a map's items (`over: {from: $inputs.<name>}`).
 */
export type GraphInputValue = { text: string } | { ref: string };

/**
 * The graph's lease ceiling: no node's lease exceeds it. A node's `spawn.caps` must be a
 * subset of `caps` (a node naming none asks for exactly these), its limits and timeout at most
 * these (a node naming none gets these) — refused at define otherwise, never clamped. A graph
 * an agent runs is further bounded by its caller's lease (caller ∩ ceiling ∩ the node's ask).
 */
export interface GraphLease {
  caps?: Capability[];
  limits?: SpawnLimits;
  timeout_ms?: number;
}

/** Bytes of one upstream summary in a node's packet (`context.summaries_of`), and how many. */
export const SUMMARY_BOUNDS = { bytes: 1024, count: 8 } as const;

/** What a node is told of its upstream nodes beyond its mounted inputs: bounded summaries, as data. */
export interface NodeContext {
  /** Dependencies (of the node as written) whose committed result's head (≤ 1 KiB each) the packet carries. */
  summaries_of: string[];
}

/** A map: one slot node per possible item (max_items of them, expanded at define), each run with `{{item}}`. */
export interface MapSpec {
  over: MapOver;
  /** Slots expanded at define; more items than this fail the split (never dropped). */
  max_items: number;
  /** One item's JSON text over this fails the split (never cut). */
  item_max_bytes: number;
  item_kind: RunKindOf;
}

/** A round's structured result decides whether later rounds run: `field` of its result value (or out/ JSON file). */
export interface StopWhen {
  file: string;
  field: string;
  equals?: string | number | boolean | null;
  gte?: number;
}

/** refine / collaborate: a chain of rounds, round k seeing round k−1's out/ (collaborate: every earlier round's). */
export interface RoundsSpec {
  count: number;
  round_kind: RunKindOf;
  stop_when?: StopWhen;
}

/** debate: sides × rounds; each turn sees every earlier round's committed out/; an optional synthesizer ends it. */
export interface DebateSpec {
  sides: string[];
  rounds: number;
  side_kind: RunKindOf;
  synthesizer?: { kind: RunKindOf; spawn: GraphSpawn };
}

/** How a join decides: `items` (a map: every item that exists succeeded), `last` (a chain: its last succeeded round commits), `all` (every dependency succeeded). */
export interface JoinSpec {
  mode: 'items' | 'last' | 'all';
  /** `items`: the map's split node. */
  split?: string;
  /** `all`: the name each dependency's out/ takes under an input from this join (`<as>-<name>`). */
  names?: Record<string, string>;
}

/** Gates wait at most this long (30 days). */
export const GATE_MAX_MS = 30 * 24 * 3600_000;

/** An approval gate: only an operator decides it (CLI, HTTP) — never a child, never the broker. */
export interface GateSpec {
  /** Shown to the person deciding (≤ 2 KiB). */
  prompt: string;
  timeout_ms: number;
  /** Past the timeout the gate is rejected. */
  on_timeout: 'reject';
  /** The graph's submitter may not approve it. */
  prevent_self: boolean;
  /**
   * Who may decide it: `operators` (anyone a face names as the deciding operator), or a list
   * of names — the decision's `by` must be one of them (the CLI's is the OS user name, HTTP's
   * its `by` field, the console's `console`, MCP's `mcp`). A timeout rejects it whoever is listed.
   */
  approvers: 'operators' | string[];
  /**
   * Dependencies whose results the person deciding is shown beside the prompt (explain, the
   * console): a run node's committed result head (≤ 1 KiB), a tally's count.
   */
  show?: string[];
}

/** A gate's state on the record: its deadline (kept across saves) and the one decision. */
export interface GateState {
  deadline: string;
  decision: 'approved' | 'rejected' | null;
  by: string | null;
  at: string | null;
  /** sha256 of the note (the note itself is not kept in the record or the ledger). */
  noteHash: string | null;
}

/** How a tally decides over the valid ballots. */
export type TallyRule = 'plurality' | 'majority' | 'unanimous' | { quorum: number };

/** A tally over structured ballots: each dependency's ballot, `field` read from it, checked against `choices`. */
export interface TallySpec {
  /** A path into the ballot: `$.verdict`, `$.a.b` (dotted keys only). */
  field: string;
  choices: string[];
  rule: TallyRule;
  /** Fewer valid ballots than this fails the tally. */
  min_valid: number;
  /** A tie for first: fail, or the tied choice listed first in `choices`. */
  tie: 'fail' | 'first_choice';
  /** Where each voter's ballot is: its result value, or a JSON file of its out/. */
  ballot: string;
}

/** What a tally found: counts per choice, invalid and absent ballots counted (never guessed). */
export interface TallyOutcome {
  winner: string | null;
  /** decided, or why not: tie, too_few_valid, no_majority, not_unanimous, no_quorum. */
  outcome: 'decided' | 'tie' | 'too_few_valid' | 'no_majority' | 'not_unanimous' | 'no_quorum';
  counts: Record<string, number>;
  valid: number;
  /** Ballots that were there but did not parse, lacked the field, or named no choice. */
  invalid: number;
  /** Voters that did not succeed, so cast no ballot. */
  absent: number;
  /** Per voter: the choice it cast, or why its ballot did not count. */
  ballots: { voter: string; choice: string | null; why: 'ok' | 'absent' | 'unreadable' | 'not_json' | 'no_field' | 'not_a_choice' }[];
}

/** How one node ended. */
export const NODE_RESULTS = ['succeeded', 'failed', 'timed_out', 'cancelled', 'skipped'] as const;
export type NodeResult = (typeof NODE_RESULTS)[number];
/** What a retry may be asked on (never cancelled or skipped). */
export const RETRY_ON = ['failed', 'timed_out'] as const;
export type RetryOn = (typeof RETRY_ON)[number];

/** A node's state: `pending` (not started), `running`, or ended with a result. */
export type NodeState = 'pending' | 'running' | NodeResult;
export const GRAPH_STATES = ['running', 'completed', 'failed', 'cancelled'] as const;
export type GraphState = (typeof GRAPH_STATES)[number];
/** Why a node was skipped. */
export const SKIP_REASONS = ['unsatisfiable', 'fail_fast', 'cancelled', 'supervisor_restart', 'no_item', 'stopped_early', 'budget_exhausted'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** The closed set of `when` predicates over the upstream results (nothing else is evaluated). */
export type WhenPredicate =
  | 'all_succeeded'
  | 'all_done'
  | 'any_succeeded'
  | { quorum: number }
  /** Per dependency: the result (or results) it must have ended with. */
  | { results: Record<string, NodeResult | NodeResult[]> };

/** The spawn fields a node may carry (a subset of the spawn request: no artifact_refs, no image). */
export interface GraphSpawn {
  task: string;
  agent?: string;
  model?: string;
  script?: string;
  argv?: string[];
  caps?: Capability[];
  limits?: SpawnLimits;
  profile?: string;
  objective?: string;
  max_steps?: number;
  timeout_ms?: number;
  expected_outputs?: string[];
}

/**
 * A node's budget: each attempt's reservation out of the graph's budget (tokens, cost) — its
 * run's lease limits are at most that — and its wall time (the attempt's timeout). On a macro
 * it is each run node's it makes. Without tokens/cost_usd an attempt reserves an equal share
 * of what the graph's budget has left over its run nodes not yet started.
 */
export interface NodeBudget {
  tokens?: number;
  cost_usd?: number;
  wall_ms?: number;
}

/**
 * The graph's budget: its wall time (the critical path must fit, refused at define), the
 * tokens and cost all its node runs may spend together (reserved per attempt before it
 * starts, settled at its end), and `children`, the node runs it may start in all (retries
 * counted). A reservation that cannot be made stops the graph: `budget_exhausted`.
 */
export interface GraphBudget {
  wall_ms?: number;
  tokens?: number;
  cost_usd?: number;
  children?: number;
}

/** A node as written: macros (`vote`) expand into plain nodes at define. */
export interface GraphNodeInput {
  id: string;
  kind: GraphSpecKind;
  depends_on: string[];
  when: WhenPredicate;
  /** Run kinds; for `vote`, each voter's template (`{{voter}}` is the voter's name). */
  spawn?: GraphSpawn;
  inputs: { from: string; as: string }[];
  retry: { max: number; on: RetryOn[]; idempotent: boolean };
  budget?: NodeBudget;
  /** Summaries of upstream nodes, in the packet as data (on a macro: every run node it makes). */
  context?: NodeContext;
  tally?: TallySpec;
  gate?: GateSpec;
  /** `vote`: the voters (names, each one node `<id>.<name>`), their kind, and the tally `<id>`. */
  vote?: Omit<TallySpec, never> & { voters: string[]; voter_kind: (typeof GRAPH_RUN_KINDS)[number] };
  /** `map` / `map_reduce`: the items and the slots. */
  map?: MapSpec;
  /** `map_reduce`: the reducer, seeing every item's out/ at /artifacts/<as>-<i>. */
  reduce?: { kind: RunKindOf; as: string; spawn: GraphSpawn };
  /** `refine` / `collaborate`. */
  rounds?: RoundsSpec;
  debate?: DebateSpec;
}

/** A node as it runs (after expansion). */
export interface GraphNodeSpec {
  id: string;
  kind: GraphNodeKind;
  /** The macro node it was expanded from. */
  macro_of?: string;
  depends_on: string[];
  when: WhenPredicate;
  spawn: GraphSpawn;
  tally?: TallySpec;
  gate?: GateSpec;
  /** Kind `split`: the map's items. */
  split?: { over: MapOver; max_items: number; item_max_bytes: number; slots: string[] };
  /** A map slot: its task's `{{item}}` is item `index` of the split's items. */
  item?: { split: string; index: number };
  /** Kind `join`. */
  join?: JoinSpec;
  /** A refine round: once it succeeded and this holds, `later` rounds are skipped (`stopped_early`). */
  stop?: { when: StopWhen; later: string[] };
  /**
   * Upstream committed out/ directories, mounted read-only at /artifacts/<as> (from a join with
   * parts: /artifacts/<as>-<name> each); `from: $inputs.<name>` a graph input's ResultRef (one file).
   */
  inputs: { from: string; as: string }[];
  retry: { max: number; on: RetryOn[]; idempotent: boolean };
  /** Run kinds: the node's budget (a macro's, on each run node it made). */
  budget?: NodeBudget;
  /** Run kinds: upstream summaries in its packet (a macro's, on each run node it made). */
  context?: NodeContext;
}

export interface GraphSpec {
  graph: typeof GRAPH_VERSION;
  label?: string;
  /** Text inputs for `{{inputs.<name>}}` in a node's task (data only), and existing ResultRefs nodes may declare as inputs. */
  inputs: Record<string, GraphInputValue>;
  /** The ceiling every node's lease stays under. */
  lease?: GraphLease;
  concurrency: { max_parallel: number };
  on_failure: { policy: 'fail_fast' | 'continue' };
  /**
   * What a restart of the supervisor does to a graph it left running: `resume` continues it
   * (no completed node re-runs; a running attempt is reattached, or ended `supervisor_restart`
   * and retried only if its node is `retry.idempotent`); `fail` ends it `supervisor_restart`.
   */
  on_restart: 'resume' | 'fail';
  budget: GraphBudget;
  /** Nodes whose line leads the envelope (default: the nodes nothing depends on). */
  sinks: string[];
  nodes: GraphNodeInput[];
}

/** What define answers: the checked spec, its topological order and the nodes as they will run. */
export interface GraphDefinition {
  spec: GraphSpec;
  /** sha256 of the canonical spec. */
  specHash: string;
  order: string[];
  nodes: { id: string; kind: GraphNodeKind; macro_of?: string; depends_on: string[]; depth: number }[];
  /** The nodes as they run, macros expanded, in the spec's order. */
  expanded: GraphNodeSpec[];
  sinks: string[];
  /** The longest chain of node timeouts (ms): refused when over budget.wall_ms. */
  criticalPathMs: number;
}

/** One attempt of a node: an ordinary run. Written before the spawn (state `starting`). */
export interface GraphAttempt {
  n: number;
  /** The spawn's idempotency key: graph, node, attempt. */
  key: string;
  state: 'starting' | 'running' | 'ended';
  runId: string | null;
  result: NodeResult | null;
  endReason: string | null;
  errorCode: string | null;
  startedAt: string;
  endedAt: string | null;
  tokens: number | null;
  costUsd: number | null;
  /** What the attempt reserved out of the graph's budget before it started (its run's token and cost limits); settled at its end. */
  reserved?: { tokens?: number; costUsd?: number } | null;
}

export interface GraphNodeRecord {
  id: string;
  kind: GraphNodeKind;
  state: NodeState;
  skipReason: SkipReason | null;
  attempts: GraphAttempt[];
  /** The run whose committed out/ dependents see (the last succeeded attempt's). */
  committedRunId: string | null;
  /** Kind `tally`: what it counted. */
  tally?: TallyOutcome;
  /** Kind `gate`: its deadline and decision. */
  gate?: GateState;
  /** Kind `split`: how many items it found (the items are in the graph's own store). */
  items?: number;
  /** Kind `join` with parts (a map, a debate): the committed runs an input from it mounts, `<as>-<name>` each. */
  parts?: { name: string; runId: string }[];
}

/** The graph record ($BRIG_HOME/graphs/<id>/graph.json), written ahead of every action. */
export interface GraphRecord {
  v: 1;
  id: string;
  label: string | null;
  specHash: string;
  state: GraphState;
  endReason: string | null;
  createdAt: string;
  endedAt: string | null;
  /** The caller: a run id, or null for the operator. */
  callerRunId: string | null;
  /** Who submitted it (the operator's name as the face said it), for a gate's prevent_self. */
  submittedBy?: string | null;
  /** min(max_parallel, the caller's children cap), decided at start. */
  parallel: number;
  order: string[];
  nodes: GraphNodeRecord[];
  /** What stopped the graph (`budget_exhausted`): the node whose reservation could not be made (null: the graph's wall_ms passed), and why. */
  budgetStop?: { node: string | null; why: string } | null;
  /** Set once the graph ended: the manifest ref and the envelope text. */
  manifestRef: string | null;
  envelope: string | null;
}

/** What run answers at once. */
export interface GraphStarted {
  graphId: string;
  order: string[];
  nodes: GraphDefinition['nodes'];
  parallel: number;
}

/** The end: one bounded envelope and the manifest ref (one JSONL row per node attempt). */
export interface GraphOutcome {
  graphId: string;
  state: GraphState;
  endReason: string | null;
  envelope: string;
  manifestRef: string | null;
}

/** One row of the manifest (JSONL), one per node attempt. */
export interface GraphManifestRow {
  graph_id: string;
  node: string;
  kind: GraphNodeKind;
  attempt: number;
  state: NodeState;
  end_reason: string | null;
  run_id: string | null;
  started_at: string | null;
  ended_at: string | null;
  tokens: number | null;
  cost_usd: number | null;
  /** What the attempt reserved out of the graph's budget (null: no reservation). */
  reserved_tokens?: number | null;
  reserved_cost_usd?: number | null;
  ref: string | null;
  /** Kind `tally`: the count. */
  tally?: TallyOutcome;
}

/** Content-free graph events: ids, states, counts. */
export type GraphEvent =
  /** `runId`: the calling run, when an agent started it with `graph_run` (its ledger line's run). */
  | { type: 'graph.started'; graphId: string; nodes: number; parallel: number; runId?: string }
  | { type: 'graph.node'; graphId: string; node: string; state: NodeState; attempt: number; runId: string | null }
  | { type: 'graph.ended'; graphId: string; state: GraphState; endReason: string | null }
  /** A restart took up a graph left running (`on_restart: resume`): attempts reattached, lost (ended `supervisor_restart`), asked again (never spawned), re-armed gates. */
  | { type: 'graph.resumed'; graphId: string; reattached: number; lost: number; respawned: number; gates: number }
  | { type: 'graph.gate_decided'; graphId: string; node: string; decision: 'approved' | 'rejected'; by: string; noteHash: string | null };

/** A graph event as it goes live (the API's event stream, `graphs.events()`): the ledger's fields, stamped when the supervisor heard it. */
export type GraphStreamEvent = GraphEvent & { timestamp: string };

export interface GraphEventsOptions {
  signal?: AbortSignal;
  /** Only this graph's events. */
  graphId?: string;
  /** Called once the subscription is in place: every event published after it is delivered. */
  onSubscribed?: () => void;
}

/** An operator's decision on a gate. */
export interface GateDecision {
  decision: 'approve' | 'reject';
  /** Who decides (the face says: the operator's user name). */
  by: string;
  note?: string;
}

/** The graphs of one supervisor, as the library and the faces see them. */
export interface GraphSurface {
  /** Define time alone: the order and the nodes, or every refusal with its line. Starts nothing. */
  define(text: string, o?: { source?: string }): Promise<Result<GraphDefinition, BrigError>>;
  /** Checks and starts a graph; answers at once with its id, order and nodes. */
  run(text: string, o?: { source?: string; by?: string }): Promise<Result<GraphStarted, BrigError>>;
  /** An operator's decision on a waiting gate (never reachable from a child). */
  decide(graphId: string, node: string, d: GateDecision): Promise<Result<GraphRecord, BrigError>>;
  status(graphId: string): Promise<Result<GraphRecord, BrigError>>;
  /** Until the graph ends or the timeout: its record (ended: with the envelope and the manifest ref). */
  wait(graphId: string, o?: { timeoutMs?: number; signal?: AbortSignal }): Promise<Result<GraphRecord, BrigError>>;
  /** Kills the running nodes (their whole subtrees) and skips the rest; `confirm` must be true. */
  cancel(graphId: string, o: { confirm: boolean }): Promise<Result<GraphRecord, BrigError>>;
  list(): Promise<GraphRecord[]>;
  /** An operator's view of a graph: per node its attempts, end reasons, why skipped, why it waited, retries, each attempt's lease. */
  explain(graphId: string): Promise<Result<GraphExplanation, BrigError>>;
  /**
   * The graphs' events live, from now on (content-free). Where the graphs run in this process
   * (a daemon's own surface, a local Brig); over a daemon they come on `GET /v1/events`.
   */
  events?(o?: GraphEventsOptions): AsyncIterableIterator<GraphStreamEvent>;
}

/** The lease an attempt's run got, as `brig graph explain` shows it (what was granted and refused, never secrets). */
export interface GraphAttemptLease {
  id: string;
  profile: string;
  depth: number;
  caps: string[];
  /** `what: code` per refusal. */
  refused: string[];
  /** Who revoked it (a run's end revokes its lease: `end`-like reasons), or null while it holds. */
  revokedBy: string | null;
}

/** One attempt, explained: why it came, how it ended, the lease its run got. */
export interface GraphAttemptExplained {
  n: number;
  /** `first`, `retry k of max after attempt n ended <result> (<reason>)`, `asked again after the restart lost attempt n`. */
  why: string;
  state: GraphAttempt['state'];
  result: NodeResult | null;
  endReason: string | null;
  errorCode: string | null;
  runId: string | null;
  startedAt: string;
  endedAt: string | null;
  tokens: number | null;
  costUsd: number | null;
  /** What the attempt reserved out of the graph's budget before it started (its run's token/cost limits). */
  reserved: { tokens?: number; costUsd?: number } | null;
  /** null: no run (a tally, split, join or gate), or the lease is not readable here. */
  lease: GraphAttemptLease | null;
}

/** One node, explained for an operator (`brig graph explain`). */
export interface GraphNodeExplained {
  id: string;
  kind: GraphNodeKind;
  macroOf: string | null;
  dependsOn: string[];
  /** The `when` as written (`all_succeeded`, `quorum 2`, `results a=failed`). */
  when: string;
  state: NodeState;
  skipReason: SkipReason | null;
  /** Why it was skipped, with the facts (which `when` failed on which dependency, which node tripped fail_fast…); null when it was not. */
  skipped: string | null;
  /** Why it waited before its first attempt (or still waits): its dependencies, a slot (the parallel cap), an operator (a gate). */
  waited: string[];
  retry: { max: number; on: RetryOn[]; idempotent: boolean };
  attempts: GraphAttemptExplained[];
  gate?: GateState;
  /** A gate: its prompt as the spec wrote it, and what it shows the person deciding (`show`). */
  prompt?: string;
  shown?: { node: string; text: string }[];
  tally?: TallyOutcome;
  /** Its budget as written (a macro's on each run node it made). */
  budget?: NodeBudget;
}

/** A graph explained: per node its attempts, end reasons, skips, waits, retries and leases. */
export interface GraphExplanation {
  graphId: string;
  label: string | null;
  state: GraphState;
  endReason: string | null;
  createdAt: string;
  endedAt: string | null;
  parallel: number;
  onFailure: 'fail_fast' | 'continue';
  onRestart: 'resume' | 'fail';
  /** The graph's budget as written, what its node runs spent (ended attempts) and started, and the reservation that stopped it. */
  budget: GraphBudget & { spent: { tokens: number; costUsd: number }; runs: number; stop: { node: string | null; why: string } | null };
  nodes: GraphNodeExplained[];
}
