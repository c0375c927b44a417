/**
 * Tools that are broker calls: slicing descendants' ResultRefs and managing this run's own
 * children. The supervisor decides everything (admission, depth, lease intersection, whose
 * refs are whose); these only shape the params and render the reply for the model.
 */
import type { BrokerMethod, ParamsOf } from '../../../protocol/index.js';
import type { JsonSchema } from '../types.js';
import { obj, S, type ChildInfo, type ToolContext, type ToolDef } from './tool.js';

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

const spawnTool: ToolDef = {
  name: 'spawn',
  description: 'Start a child agent in its own jail on a sub-task; returns its summary (async=true returns at once: use wait_children).',
  parameters: obj(
    {
      task: S.str('what the child is asked to do', { minLength: 1 }),
      agent: S.str('agent spec name (default: the default agent)', { minLength: 1, maxLength: 128 }),
      objective: S.str('the larger goal the task serves'),
      async: S.bool('return at once with the run id instead of waiting for the child'),
      tokens: S.int("the child's token budget (at most what is left of yours; more is clamped)", 1, 1_000_000_000),
      cost_usd: S.num("the child's cost budget in USD (at most what is left of yours; more is clamped)", 0, 1_000_000),
    },
    ['task'],
  ),
  timeoutMs: (a, ctx) => (a.async === true ? REF_TIMEOUT_MS : ctx.runTimeoutMs),
  async run(a, ctx) {
    // A smaller budget for the child: attenuated by the supervisor like every limit.
    const limits = pick({ tokens: a.tokens, costUsd: a.cost_usd }, ['tokens', 'costUsd']);
    const request = { kind: 'agent', ...pick(a, ['task', 'agent', 'objective', 'async']), ...(Object.keys(limits).length > 0 ? { limits } : {}) };
    const s = await ctx.broker.call('spawn', { request });
    remember(ctx, s, { task: String(a.task).slice(0, 200), agent: typeof a.agent === 'string' ? a.agent : null, async: a.async === true });
    return json(s);
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
  description: `Wait until these children ended (or timeoutMs, at most ${MAX_WAIT_MS}); returns each one's summary.`,
  parameters: obj({ runIds: { ...S.strs('child run ids', 50), minItems: 1 }, timeoutMs: S.int(`how long to wait (default and most ${MAX_WAIT_MS})`, 1, MAX_WAIT_MS) }, ['runIds']),
  timeoutMs: (a) => (typeof a.timeoutMs === 'number' ? a.timeoutMs : MAX_WAIT_MS) + 10_000,
  async run(a, ctx) {
    const r = await ctx.broker.call('wait', params('wait', { runs: a.runIds, timeoutMs: typeof a.timeoutMs === 'number' ? a.timeoutMs : MAX_WAIT_MS }));
    for (const s of r.runs) remember(ctx, s);
    return json(r);
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
  description: 'Send a running agent child a message at its next step; mode `wait` returns its next reply, `ping-pong` up to maxTurns replies.',
  parameters: obj(
    {
      runId,
      text: S.str('the message', { minLength: 1, maxLength: 4000 }),
      mode: S.str('fire-and-forget (default), wait or ping-pong', { maxLength: 20 }),
      timeoutMs: S.int(`how long to wait for replies (at most ${MAX_WAIT_MS})`, 1, MAX_WAIT_MS),
      maxTurns: S.int('ping-pong: replies to collect (0–5)', 0, 5),
    },
    ['runId', 'text'],
  ),
  timeoutMs: (a) => (typeof a.timeoutMs === 'number' ? a.timeoutMs : 30_000) + 10_000,
  async run(a, ctx) {
    return json(await ctx.broker.call('child.send', params('child.send', { child: a.runId, text: a.text, ...pick(a, ['mode', 'timeoutMs', 'maxTurns']) })));
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

export const CHILD_TOOLS: ToolDef[] = [spawnTool, listChildren, waitChildren, steerChild, killChild, sendChild, statusTool, explainTool, historyTool];
