/**
 * Tools that are broker calls: slicing descendants' ResultRefs and managing this run's own
 * children. The supervisor decides everything (admission, depth, lease intersection, whose
 * refs are whose); these only shape the params and render the reply for the model.
 */
import type { AgentSpawnParam, BrokerMethod, ChildSummaryWithRefs, ParamsOf } from '../../../protocol/index.js';
import type { JsonSchema } from '../types.js';
import { MAX_BOUNDED_CHARS, obj, S, type ChildInfo, type ToolContext, type ToolDef } from './tool.js';

const REF_TIMEOUT_MS = 60_000;
const CONTROL_TIMEOUT_MS = 30_000;
/** The longest a `wait_children` call blocks: under the supervisor's per-step timeout. */
export const MAX_WAIT_MS = 50_000;

const ref = S.str('a ResultRef id (from a child summary)', { minLength: 1, maxLength: 256 });
const runId = S.str('a child run id (from spawn)', { minLength: 1, maxLength: 128 });

/** Only the keys the schema names, and only those set: the broker's params are strict. */
function pick(a: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => a[k] !== undefined && a[k] !== null).map((k) => [k, a[k]]));
}

/**
 * A tool's arguments as the params of its broker method: they were checked against the tool's
 * JSON schema (check-args.ts) before the tool ran, and the broker validates them again with
 * the method's strict schema, so this is the one place a model's words take a wire type.
 */
function params<M extends BrokerMethod>(_method: M, p: Record<string, unknown>): ParamsOf<M> {
  return p as ParamsOf<M>;
}

const json = (v: unknown) => JSON.stringify(v, null, 1);

function renderSlice(v: unknown): string {
  const s = (v ?? {}) as Record<string, unknown>;
  const { text, rows, columns, ...meta } = s;
  const parts = [json(meta)];
  if (columns !== undefined) parts.push(`columns: ${JSON.stringify(columns)}`);
  if (rows !== undefined) parts.push(`rows:\n${(rows as unknown[]).map((r) => JSON.stringify(r)).join('\n')}`);
  if (typeof text === 'string') parts.push(text);
  return parts.join('\n');
}

function refTool(name: string, method: 'refs.read' | 'refs.grep' | 'refs.jq' | 'refs.sql' | 'refs.jsonpath', description: string, props: Record<string, JsonSchema>, required: string[]): ToolDef {
  return {
    name,
    description,
    parameters: obj({ ref, ...props }, ['ref', ...required]),
    timeoutMs: () => REF_TIMEOUT_MS,
    async run(a, ctx) {
      return renderSlice(await ctx.broker.call(method, params(method, pick(a, ['ref', ...Object.keys(props)]))));
    },
  };
}

export const REF_TOOLS: ToolDef[] = [
  refTool('ref_read', 'refs.read', "Read part of a descendant's ResultRef: bytes (offset, length) or lines (line, lines).", {
    offset: S.int('first byte', 0, Number.MAX_SAFE_INTEGER),
    length: S.int('bytes to read', 1, 1 << 20),
    line: S.int('first line, 1-based', 1, Number.MAX_SAFE_INTEGER),
    lines: S.int('lines to read', 1, 10_000),
  }, []),
  refTool('ref_grep', 'refs.grep', "Search a descendant's ResultRef for a pattern.", {
    pattern: S.str('regular expression (or fixed text with fixed=true)', { minLength: 1, maxLength: 1000 }),
    maxMatches: S.int('most matches', 1, 10_000),
    context: S.int('lines of context around each match', 0, 20),
    ignoreCase: S.bool('case-insensitive'),
    fixed: S.bool('pattern is plain text'),
  }, ['pattern']),
  refTool('ref_jq', 'refs.jq', 'Run a jq filter over a JSON or JSONL ResultRef.', { filter: S.str('jq filter', { minLength: 1, maxLength: 2000 }) }, ['filter']),
  refTool('ref_sql', 'refs.sql', 'Run one read-only SQL SELECT over a tabular ResultRef (the table is named ref).', {
    sql: S.str('a SELECT over the table `ref`', { minLength: 1, maxLength: 8000 }),
    maxRows: S.int('most rows', 1, 10_000),
  }, ['sql']),
  refTool('ref_jsonpath', 'refs.jsonpath', 'Evaluate a JSONPath expression over a JSON or JSONL ResultRef.', { path: S.str('JSONPath, e.g. $.items[0].name', { minLength: 1, maxLength: 1000 }) }, ['path']),
];

type Summary = { runId?: unknown; status?: unknown; endReason?: unknown };

function remember(ctx: ToolContext, s: Summary, seed?: Omit<ChildInfo, 'runId' | 'status' | 'endReason'>): void {
  if (typeof s?.runId !== 'string') return;
  const prev = ctx.children.get(s.runId);
  const base = prev ?? { task: seed?.task ?? '', agent: seed?.agent ?? null, async: seed?.async ?? false };
  ctx.children.set(s.runId, {
    ...base,
    runId: s.runId,
    status: typeof s.status === 'string' ? s.status : (prev?.status ?? 'unknown'),
    endReason: typeof s.endReason === 'string' ? s.endReason : (prev?.endReason ?? null),
  });
}

/**
 * The spawn tool's parameters: the spawn request's fields a lead may set (protocol
 * SPAWN_FIELDS, its `agentTool` column; the descriptions are that table's `about`, pinned by
 * test/unit/runs/spawn-faces.test.ts — the jail holds no copy of protocol's values).
 */
export const SPAWN_PARAMS = {
  task: S.str('what the child is asked to do', { minLength: 1 }),
  agent: S.str('the agent spec the child runs (default: the default agent); for other kinds a name for the run', { minLength: 1, maxLength: 128 }),
  model: S.str("agent only: a model alias of the supervisor's configuration (default: the spec's, else the configured default)", { minLength: 1, maxLength: 128 }),
  objective: S.str('the goal the task serves; re-read by an agent after each compaction', { maxLength: 4096 }),
  artifact_refs: S.strs('handed to the child read-only at /artifacts/<name>: ResultRef ids (ref_…) of runs the spawner may read, or (an operator only) absolute host paths', 64, { minLength: 1, maxLength: 256 }),
  domain_knowledge: S.strs('facts the child should know, one entry each', 64, { minLength: 1 }),
  tool_groups: { ...S.strs('agent only: offer only the tools of these policy groups (workspace, delegation, slicing, … — `brig policy check` lists them) and finish, never more than its lease allows', 32, { minLength: 1, maxLength: 64 }), minItems: 1 },
  include_parent_history: S.oneOf("`summary`: the child gets a bounded summary of its parent's conversation (default `none`)", ['none', 'summary']),
  expected_outputs: S.strs('files under /workspace/out that must exist when the child ends (missing ones are named in its envelope)', 64, { minLength: 1, maxLength: 1024 }),
  repo: S.str("a host git repository PATH[@REF] (absolute PATH, REF default HEAD) cloned clean into /workspace/repo; the change comes back as the changes.patch ref, `brig apply` makes it a branch. A lead may give only `inherit`: its own repository, at its base", { minLength: 1, maxLength: 4096 }),
  max_steps: S.int('the step budget: at least 30 (or the configured default, if smaller), at most the configured default (50); outside is refused', 1, 1_000_000),
  tokens: S.int("the child's token budget (at most what its parent holds; more is clamped)", 1, 1_000_000_000),
  cost_usd: S.num("the child's cost budget in USD (at most what its parent holds; more is clamped)", 0, 1_000_000),
  async: S.bool('return once the run is admitted instead of waiting for its end'),
  // Rule ids only: each must be one this lead holds (the supervisor grants a rule only inside one of the parent's).
  egress: S.strs('hosts the child may reach through the egress gate: rule ids of the policy (the CLI also host[:port] inside one); never inherited (docs/egress.md)', 32, { minLength: 1, maxLength: 32 }),
} satisfies Record<AgentSpawnParam, JsonSchema>;

/** Where each parameter goes in the spawn request (the rest keep their names). */
const LIMIT_PARAMS = { tokens: 'tokens', cost_usd: 'costUsd' } as const;

/**
 * The spawn request for a lead's `spawn` call (pure): kind `agent`, the parameters under their
 * request names, the budgets under `limits`. The supervisor applies the one spawn schema.
 */
export function spawnRequestOf(a: Record<string, unknown>): Record<string, unknown> {
  const named = Object.keys(SPAWN_PARAMS).filter((k) => !(k in LIMIT_PARAMS) && k !== 'egress');
  const limits = Object.fromEntries(Object.entries(LIMIT_PARAMS).filter(([k]) => a[k] !== undefined && a[k] !== null).map(([k, to]) => [to, a[k]]));
  const egress = Array.isArray(a.egress) && a.egress.length > 0 ? { egress: { rules: a.egress } } : {};
  return { kind: 'agent', ...pick(a, named), ...(Object.keys(limits).length > 0 ? { limits } : {}), ...egress };
}

/**
 * A child as its lead reads it: an ended child's envelope — the one `brig result` shows —
 * then its handles as one JSON line (ids and paths to call ref_* with); a running one as its
 * short summary. The envelope is bounded by brig's condensation, so it passes whole.
 */
export function renderChild(s: ChildSummaryWithRefs): string {
  if (typeof s.envelope !== 'string') return json(s);
  const handles = {
    runId: s.runId,
    endReason: s.endReason,
    refs: s.refs.map((r) => ({ ref: r.ref, path: r.path, kind: r.kind, bytes: r.bytes })),
    ...(s.refsMore ? { refsMore: s.refsMore } : {}),
  };
  return `${s.envelope.trimEnd()}\nHandles: ${JSON.stringify(handles)}`;
}

const spawnTool: ToolDef = {
  name: 'spawn',
  description: "Start a child agent in its own jail on a sub-task; returns its envelope (summary, footer, ref handles to drill into) when it ends (async=true returns at once: use wait_children).",
  parameters: obj(SPAWN_PARAMS, ['task']),
  timeoutMs: (a, ctx) => (a.async === true ? REF_TIMEOUT_MS : ctx.runTimeoutMs),
  async run(a, ctx) {
    const s = await ctx.broker.call('spawn', { request: spawnRequestOf(a) });
    remember(ctx, s, { task: String(a.task).slice(0, 200), agent: typeof a.agent === 'string' ? a.agent : null, async: a.async === true });
    return { content: renderChild(s), maxChars: MAX_BOUNDED_CHARS };
  },
};

const listChildren: ToolDef = {
  name: 'list_children',
  description: 'List the children this run has spawned, with their last known status.',
  parameters: obj({}),
  timeoutMs: () => CONTROL_TIMEOUT_MS,
  async run(_a, ctx) {
    if (ctx.children.size === 0) return 'no children spawned yet';
    return [...ctx.children.values()].map((c) => JSON.stringify(c)).join('\n');
  },
};

const waitChildren: ToolDef = {
  name: 'wait_children',
  description: `Wait until these children ended (or timeoutMs, at most ${MAX_WAIT_MS}); returns each one's envelope (or, still running, its status).`,
  parameters: obj({ runIds: { ...S.strs('child run ids', 50), minItems: 1 }, timeoutMs: S.int(`how long to wait (default and most ${MAX_WAIT_MS})`, 1, MAX_WAIT_MS) }, ['runIds']),
  timeoutMs: (a) => (typeof a.timeoutMs === 'number' ? a.timeoutMs : MAX_WAIT_MS) + 10_000,
  async run(a, ctx) {
    const r = await ctx.broker.call('wait', params('wait', { runs: a.runIds, timeoutMs: typeof a.timeoutMs === 'number' ? a.timeoutMs : MAX_WAIT_MS }));
    for (const s of r.runs) remember(ctx, s);
    // One block per child, each headed `== <run id> <status>` (a body line like it is quoted in the envelope).
    return { content: r.runs.map((s) => `== ${s.runId} ${s.endReason ?? s.status}\n${renderChild(s)}`).join('\n\n'), maxChars: MAX_BOUNDED_CHARS };
  },
};

const steerChild: ToolDef = {
  name: 'steer_child',
  description: 'Send a running child a message it gets at its next step.',
  parameters: obj({ runId, message: S.str('the message', { minLength: 1, maxLength: 4000 }) }, ['runId', 'message']),
  timeoutMs: () => CONTROL_TIMEOUT_MS,
  async run(a, ctx) {
    return json(await ctx.broker.call('child.steer', params('child.steer', { child: a.runId, message: a.message })));
  },
};

const killChild: ToolDef = {
  name: 'kill_child',
  description: 'Stop a child; what it wrote so far is kept as a partial result.',
  parameters: obj({ runId, reason: S.str('why (kept on its record)', { maxLength: 200 }) }, ['runId']),
  timeoutMs: () => CONTROL_TIMEOUT_MS,
  async run(a, ctx) {
    const r = await ctx.broker.call('child.kill', params('child.kill', { child: a.runId, ...pick(a, ['reason']) }));
    remember(ctx, { ...r, status: 'ended' });
    return json(r);
  },
};

const sendChild: ToolDef = {
  name: 'send',
  description:
    'Send a running agent child a message at its next step; mode `wait` returns its next reply. Mode `ping-pong` is a conversation of maxTurns turns: this returns after each reply of the child with a conversation id — answer it by calling send again with `conversation` and your answer as text.',
  parameters: obj(
    {
      runId,
      text: S.str('the message (in a conversation: your answer to its last reply)', { minLength: 1, maxLength: 4000 }),
      mode: S.str('fire-and-forget (default), wait or ping-pong', { maxLength: 20 }),
      timeoutMs: S.int(`how long to wait for the reply (at most ${MAX_WAIT_MS})`, 1, MAX_WAIT_MS),
      maxTurns: S.int('ping-pong: turns of the conversation (0–5, default 3)', 0, 5),
      conversation: S.str('ping-pong: the conversation id the last send returned', { minLength: 1, maxLength: 64 }),
    },
    ['runId', 'text'],
  ),
  timeoutMs: (a) => (typeof a.timeoutMs === 'number' ? a.timeoutMs : 30_000) + 10_000,
  async run(a, ctx) {
    return json(await ctx.broker.call('child.send', params('child.send', { child: a.runId, text: a.text, ...pick(a, ['mode', 'timeoutMs', 'maxTurns', 'conversation']) })));
  },
};

const statusTool: ToolDef = {
  name: 'status',
  description: 'The status of one of your children: state, end reason, steps, tokens, cost, its lease capabilities and refs count.',
  parameters: obj({ runId }, ['runId']),
  timeoutMs: () => CONTROL_TIMEOUT_MS,
  async run(a, ctx) {
    const r = await ctx.broker.call('child.status', params('child.status', { child: a.runId }));
    remember(ctx, r);
    return json(r);
  },
};

const explainTool: ToolDef = {
  name: 'explain',
  description: "What one of your children was granted (capabilities, budgets) and what it produced (ref handles), to decide what to slice.",
  parameters: obj({ runId }, ['runId']),
  timeoutMs: () => CONTROL_TIMEOUT_MS,
  async run(a, ctx) {
    return json(await ctx.broker.call('child.explain', params('child.explain', { child: a.runId })));
  },
};

const historyTool: ToolDef = {
  name: 'history',
  description: "A bounded page of one of your agent children's transcript, only when its summary is not enough.",
  parameters: obj({ runId, offset: S.int('first entry', 0, 1_000_000), limit: S.int('entries (at most 20)', 1, 20) }, ['runId']),
  timeoutMs: () => CONTROL_TIMEOUT_MS,
  async run(a, ctx) {
    return json(await ctx.broker.call('child.history', params('child.history', { child: a.runId, ...pick(a, ['offset', 'limit']) })));
  },
};

const graphRunTool: ToolDef = {
  name: 'graph_run',
  description:
    "Run an execution graph (a `graph: brig/v1` spec, YAML or JSON text: nodes with depends_on, inputs, when, retry; docs/graphs.md) as one child of yours. Every node is your child, its lease inside yours. Returns the graph's bounded envelope (a line per node) and its manifest ref (JSONL, one row per node attempt) to drill into with ref_sql / ref_jq. With timeoutMs 0 it starts the graph and returns its graphId at once: follow it with graph_wait. A gate waits for an operator.",
  parameters: obj(
    {
      spec: S.str('the graph spec text (YAML or JSON), `graph: brig/v1`', { minLength: 1, maxLength: 48 * 1024 }),
      timeoutMs: S.int(`how long to wait for its end (0: not at all; at most ${MAX_WAIT_MS}); the graph goes on after it`, 0, MAX_WAIT_MS),
    },
    ['spec'],
  ),
  timeoutMs: (a) => (typeof a.timeoutMs === 'number' ? a.timeoutMs : MAX_WAIT_MS) + 10_000,
  async run(a, ctx) {
    return graphReply(await ctx.broker.call('graph.run', params('graph.run', { spec: a.spec, timeoutMs: typeof a.timeoutMs === 'number' ? a.timeoutMs : MAX_WAIT_MS })));
  },
};

const graphWaitTool: ToolDef = {
  name: 'graph_wait',
  description:
    "A graph you started with graph_run: its state and node counts now (timeoutMs 0), or its envelope and manifest ref once it ends, waiting at most timeoutMs. Still running after the wait: call it again.",
  parameters: obj(
    {
      graphId: S.str('the graphId graph_run answered', { minLength: 1, maxLength: 64 }),
      timeoutMs: S.int(`how long to wait for its end (0: look without waiting; at most ${MAX_WAIT_MS}, default 30000)`, 0, MAX_WAIT_MS),
    },
    ['graphId'],
  ),
  timeoutMs: (a) => (typeof a.timeoutMs === 'number' ? a.timeoutMs : 30_000) + 10_000,
  async run(a, ctx) {
    return graphReply(await ctx.broker.call('graph.wait', params('graph.wait', { graphId: a.graphId, timeoutMs: typeof a.timeoutMs === 'number' ? a.timeoutMs : 30_000 })));
  },
};

const graphCancelTool: ToolDef = {
  name: 'graph_cancel',
  description:
    "Cancel a graph you started with graph_run: its running nodes are killed (what they wrote so far kept as partial results), the rest skipped. Returns the graph as graph_wait does, once the kills went through.",
  parameters: obj({ graphId: S.str('the graphId graph_run answered', { minLength: 1, maxLength: 64 }) }, ['graphId']),
  timeoutMs: () => CONTROL_TIMEOUT_MS,
  async run(a, ctx) {
    return graphReply(await ctx.broker.call('graph.cancel', params('graph.cancel', { graphId: a.graphId })));
  },
};

/** The envelope first (as a child's envelope reads), then the ids and counts. */
function graphReply(r: { envelope: string | null }): string {
  const { envelope, ...rest } = r;
  return envelope ? `${envelope}\n${JSON.stringify(rest)}` : json(rest);
}

export const CHILD_TOOLS: ToolDef[] = [spawnTool, listChildren, waitChildren, steerChild, killChild, sendChild, statusTool, explainTool, historyTool, graphRunTool, graphWaitTool, graphCancelTool];
