/**
 * The graph tools: check a `graph: brig/v1` spec, start it, look at it, wait for its one
 * envelope, explain it, cancel it. Each is one call of the Brig's graph surface (docs/graphs.md). By
 * default no tool decides a gate: an MCP client is a model that a page can prompt-inject, and
 * approvals come from people (the CLI, HTTP, the console). An operator who runs the server with
 * `--allow-gate-decisions` adds `graph_decide` (GATE_TOOLS) — decided `by: mcp`, so a gate with
 * `prevent_self` of a graph MCP submitted still refuses it.
 */
import { z } from 'zod';
import { BrigError } from '../util/errors.js';
import { renderGraphExplain, type Brig, type GraphRecord, type GraphSurface } from '../index.js';
import { READ_ONLY, tool, type ToolDef } from './tool-def.js';
import { answer, outputShape, refusal } from './tool-result.js';

const SpecSchema = z.string().min(1).max(2 * 1024 * 1024).describe('the graph spec, `graph: brig/v1`, as YAML or JSON text (docs/graphs.md)');
const GraphIdSchema = z.string().min(1).max(64).describe('a graph id (g-…), as graph_run gave it');
const NodeSchema = z.object({ id: z.string(), kind: z.string(), state: z.string(), attempts: z.number(), runId: z.string().nullable(), skipReason: z.string().nullable() });
const GraphShape = {
  graphId: z.string(),
  state: z.string().describe('running | completed | failed | cancelled'),
  endReason: z.string().nullable(),
  nodes: z.array(NodeSchema),
  envelope: z.string().nullable().describe('once ended: the one bounded answer (≤ 4 KiB), a line per node'),
  manifestRef: z.string().nullable().describe('once ended: a JSONL ResultRef, one row per node attempt; drill in with ref_jq / ref_sql'),
};

function graphsOf(brig: Brig): GraphSurface | BrigError {
  return brig.graphs ?? new BrigError('invalid_input', 'this brig serves no graphs (a read-only view of the home)', { hint: 'Run `brig serve`, or run this server where it may start a supervisor.' });
}

function view(r: GraphRecord) {
  return {
    graphId: r.id,
    state: r.state,
    endReason: r.endReason,
    nodes: r.nodes.map((n) => ({ id: n.id, kind: n.kind, state: n.state, attempts: n.attempts.length, runId: n.attempts.at(-1)?.runId ?? null, skipReason: n.skipReason })),
    envelope: r.envelope,
    manifestRef: r.manifestRef,
  };
}
const text = (r: GraphRecord) => r.envelope ?? `graph ${r.id} ${r.state}: ${r.nodes.map((n) => `${n.id} ${n.state}`).join(', ')}`;

const graphDefine = tool({
  name: 'graph_define',
  title: 'Check a graph spec',
  description: 'Use to check a graph spec before graph_run, without running anything: it answers the topological order and every node as it will run (macros expanded), or each refusal with its line.',
  annotations: READ_ONLY,
  input: z.strictObject({ spec: SpecSchema }),
  output: outputShape({ order: z.array(z.string()), nodes: z.array(z.object({ id: z.string(), kind: z.string(), macro_of: z.string().optional(), depends_on: z.array(z.string()), depth: z.number() })), sinks: z.array(z.string()), criticalPathMs: z.number() }),
  async run({ spec }, { brig }) {
    const g = graphsOf(brig);
    if (g instanceof BrigError) return refusal(g);
    const d = await g.define(spec, { source: 'spec' });
    if (!d.ok) return refusal(d.error);
    const v = d.value;
    return answer({ order: v.order, nodes: v.nodes, sinks: v.sinks, criticalPathMs: v.criticalPathMs }, `${v.nodes.length} nodes in order: ${v.order.join(', ')}`);
  },
});

const graphRun = tool({
  name: 'graph_run',
  title: 'Run a graph of jailed children',
  description: 'Use to hand a whole DAG of children (commands, scripts, agents, votes, maps, rounds) to brig at once: it answers the graph id, order and nodes at once (the graph runs on); then call graph_wait for its one bounded envelope.',
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  input: z.strictObject({ spec: SpecSchema }),
  output: outputShape({ graphId: z.string(), order: z.array(z.string()), parallel: z.number() }),
  async run({ spec }, { brig }) {
    const g = graphsOf(brig);
    if (g instanceof BrigError) return refusal(g);
    const s = await g.run(spec, { source: 'spec', by: 'mcp' });
    if (!s.ok) return refusal(s.error);
    return answer({ graphId: s.value.graphId, order: s.value.order, parallel: s.value.parallel }, `started ${s.value.graphId} (${s.value.order.length} nodes, ≤ ${s.value.parallel} at once). Call \`graph_wait\` with graphId "${s.value.graphId}".`);
  },
});

const graphStatus = tool({
  name: 'graph_status',
  title: 'Status of one graph',
  description: 'Use to check on a graph without waiting: its state and each node\'s state, attempts and run id (drill into a node\'s run with status / result).',
  annotations: READ_ONLY,
  input: z.strictObject({ graphId: GraphIdSchema }),
  output: outputShape(GraphShape),
  async run({ graphId }, { brig }) {
    const g = graphsOf(brig);
    if (g instanceof BrigError) return refusal(g);
    const s = await g.status(graphId);
    return s.ok ? answer(view(s.value), text(s.value)) : refusal(s.error);
  },
});

const graphWait = tool({
  name: 'graph_wait',
  title: 'Wait for a graph',
  description: 'Use after graph_run to wait (at most timeoutMs) for a graph to end: an ended graph comes back with its one envelope (≤ 4 KiB) and its manifest ref; timedOut says it is still running — call again.',
  annotations: READ_ONLY,
  input: z.strictObject({ graphId: GraphIdSchema, timeoutMs: z.number().int().min(0).max(50_000).default(30_000).describe('how long to wait in this call') }),
  output: outputShape({ ...GraphShape, timedOut: z.boolean() }),
  async run({ graphId, timeoutMs }, { brig }, extra) {
    const g = graphsOf(brig);
    if (g instanceof BrigError) return refusal(g);
    const w = await g.wait(graphId, { timeoutMs, signal: extra.signal });
    if (!w.ok) return refusal(w.error);
    const timedOut = w.value.state === 'running';
    return answer({ ...view(w.value), timedOut }, timedOut ? `graph ${graphId} is still running; call graph_wait again\n${text(w.value)}` : text(w.value));
  },
});

const LeaseSchema = z.object({ id: z.string(), profile: z.string(), depth: z.number(), caps: z.array(z.string()), refused: z.array(z.string()), revokedBy: z.string().nullable() });
const AttemptSchema = z.object({
  n: z.number(),
  why: z.string().describe('first, a retry (which rule allowed it), or asked again after a restart'),
  state: z.string(),
  result: z.string().nullable(),
  endReason: z.string().nullable(),
  errorCode: z.string().nullable(),
  runId: z.string().nullable().describe('drill further with explain on this run'),
  startedAt: z.string(),
  endedAt: z.string().nullable(),
  tokens: z.number().nullable(),
  costUsd: z.number().nullable(),
  reserved: z.object({ tokens: z.number().optional(), costUsd: z.number().optional() }).nullable().describe('what the attempt reserved out of the graph\'s budget before it started'),
  lease: LeaseSchema.nullable().describe('the lease the attempt\'s run got: granted capabilities and each refusal'),
});
const ExplainedNodeSchema = z.object({
  id: z.string(),
  kind: z.string(),
  macroOf: z.string().nullable(),
  dependsOn: z.array(z.string()),
  when: z.string(),
  state: z.string(),
  skipReason: z.string().nullable(),
  skipped: z.string().nullable().describe('why it was skipped: which when could not hold on which dependency, the node that tripped fail_fast, …'),
  waited: z.array(z.string()).describe('why it waited: its dependencies, a slot (the parallel cap), an operator (a gate)'),
  retry: z.object({ max: z.number(), on: z.array(z.string()), idempotent: z.boolean() }),
  attempts: z.array(AttemptSchema),
  gate: z.object({ deadline: z.string(), decision: z.string().nullable(), by: z.string().nullable(), at: z.string().nullable(), noteHash: z.string().nullable() }).optional(),
  tally: z.record(z.string(), z.unknown()).optional(),
  budget: z.object({ tokens: z.number().optional(), cost_usd: z.number().optional(), wall_ms: z.number().optional() }).optional(),
});

const graphExplain = tool({
  name: 'graph_explain',
  title: 'Explain one graph',
  description: 'Use to understand why a graph ran as it did: per node why it was skipped or waited, each attempt (why it came, how it ended, its run and the lease it got) and its retry rule.',
  annotations: READ_ONLY,
  input: z.strictObject({ graphId: GraphIdSchema }),
  output: outputShape({
    graphId: z.string(),
    label: z.string().nullable(),
    state: z.string(),
    endReason: z.string().nullable(),
    createdAt: z.string(),
    endedAt: z.string().nullable(),
    parallel: z.number(),
    onFailure: z.string(),
    onRestart: z.string(),
    budget: z.object({
      wall_ms: z.number().optional(),
      tokens: z.number().optional(),
      cost_usd: z.number().optional(),
      children: z.number().optional(),
      spent: z.object({ tokens: z.number(), costUsd: z.number() }),
      runs: z.number(),
      stop: z.object({ node: z.string().nullable(), why: z.string() }).nullable(),
    }).describe('the graph\'s budget, what its node runs spent, and the reservation that stopped it (budget_exhausted)'),
    nodes: z.array(ExplainedNodeSchema),
  }),
  async run({ graphId }, { brig }) {
    const g = graphsOf(brig);
    if (g instanceof BrigError) return refusal(g);
    const x = await g.explain(graphId);
    return x.ok ? answer({ ...x.value }, renderGraphExplain(x.value)) : refusal(x.error);
  },
});

const graphCancel = tool({
  name: 'graph_cancel',
  title: 'Cancel a graph',
  description: 'Use only to stop a graph you no longer want: its running nodes are killed (their whole subtrees) and the rest skipped; pass confirm: true — this call is the confirmation.',
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  input: z.strictObject({ graphId: GraphIdSchema, confirm: z.literal(true).describe('must be true: cancelling discards the running nodes’ in-flight work') }),
  output: outputShape(GraphShape),
  async run({ graphId }, { brig }) {
    const g = graphsOf(brig);
    if (g instanceof BrigError) return refusal(g);
    const c = await g.cancel(graphId, { confirm: true });
    return c.ok ? answer(view(c.value), text(c.value)) : refusal(c.error);
  },
});

const graphDecide = tool({
  name: 'graph_decide',
  title: 'Approve or reject a waiting gate',
  description: "Use only when a person told you the decision: approves or rejects a graph's waiting gate (recorded as decided by mcp, the note kept only as its hash).",
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  input: z.strictObject({
    graphId: GraphIdSchema,
    node: z.string().min(1).max(64).describe('the gate node id'),
    decision: z.enum(['approve', 'reject']),
    note: z.string().max(4096).optional().describe('why (kept only as its sha256)'),
  }),
  output: outputShape(GraphShape),
  async run({ graphId, node, decision, note }, { brig }) {
    const g = graphsOf(brig);
    if (g instanceof BrigError) return refusal(g);
    const d = await g.decide(graphId, node, { decision, by: 'mcp', ...(note !== undefined ? { note } : {}) });
    return d.ok ? answer(view(d.value), text(d.value)) : refusal(d.error);
  },
});

/** Offered only when the operator turns gate decisions over MCP on (`brig mcp --allow-gate-decisions`). */
export const GATE_TOOLS: ToolDef[] = [graphDecide];

export const GRAPH_TOOLS: ToolDef[] = [graphDefine, graphRun, graphStatus, graphWait, graphExplain, graphCancel];
