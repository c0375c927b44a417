/**
 * The `graph: brig/v1` spec: one strict schema, read from YAML or JSON (JSON is YAML 1.2, so
 * one parser gives both their line numbers), every problem said as `source:line: what`.
 *
 * Guarantees: an unknown key, a wrong type, a value over a bound or a kind this version does
 * not run is refused with its line — never ignored, defaulted or clamped. Pure: no I/O.
 */
import { z } from 'zod';
import { describeIssue, parseYaml, type Problem } from '../config/yaml-issues.js';
import {
  CAPABILITIES,
  GRAPH_INPUT_REF,
  GATE_MAX_MS,
  GRAPH_BOUNDS,
  GRAPH_INPUT_NAME,
  GRAPH_NODE_ID,
  GRAPH_NODE_KINDS,
  GRAPH_RUN_KINDS,
  GRAPH_VERSION,
  NODE_RESULTS,
  RETRY_ON,
  SPAWN_BOUNDS,
  SUMMARY_BOUNDS,
  REF_ID_RE,
  type GraphSpec,
} from '../protocol/index.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';

const id = z.string().regex(GRAPH_NODE_ID, 'a node id is lowercase letters, digits, _ and -, starting with a letter, at most 48 characters');
const positive = z.number().int().positive();
/** A node id, or a graph input (`$inputs.<name>`) where an input may come from either. */
const source = z.union([id, z.string().regex(GRAPH_INPUT_REF)], { error: 'a node id, or $inputs.<name> for a graph input that is a ref' });
const Limits = z.strictObject({ cpu: z.number().positive().optional(), memoryMb: positive.optional(), pids: positive.optional(), diskMb: positive.optional(), tokens: positive.optional(), costUsd: z.number().positive().optional() });

const SpawnSchema = z.strictObject({
  task: z.string().min(1).max(SPAWN_BOUNDS.taskChars),
  agent: z.string().min(1).max(64).optional(),
  model: z.string().min(1).max(128).optional(),
  script: z.string().min(1).max(SPAWN_BOUNDS.scriptBytes).optional(),
  argv: z.array(z.string().max(4096)).min(1).max(SPAWN_BOUNDS.argvItems).optional(),
  caps: z.array(z.enum(CAPABILITIES)).optional(),
  limits: Limits.optional(),
  profile: z.string().min(1).max(64).optional(),
  objective: z.string().min(1).max(SPAWN_BOUNDS.taskChars).optional(),
  max_steps: positive.max(10_000).optional(),
  timeout_ms: positive.max(24 * 3600_000).optional(),
  expected_outputs: z.array(z.string().min(1).max(1024)).max(64).optional(),
});

const result = z.enum(NODE_RESULTS);
const WhenSchema = z.union([
  z.enum(['all_succeeded', 'all_done', 'any_succeeded']),
  z.strictObject({ quorum: positive.max(GRAPH_BOUNDS.nodes) }),
  z.strictObject({ results: z.record(id, z.union([result, z.array(result).min(1)])) }),
]);

const choice = z.string().min(1).max(64);
const TallyFields = {
  field: z.string().regex(/^\$(\.[A-Za-z_][A-Za-z0-9_]{0,63}){1,8}$/, 'a path like $.verdict or $.a.b (dotted keys only)'),
  choices: z.array(choice).min(2).max(16),
  rule: z.union([z.enum(['plurality', 'majority', 'unanimous']), z.strictObject({ quorum: positive.max(GRAPH_BOUNDS.nodes) })]).default('plurality'),
  min_valid: positive.max(GRAPH_BOUNDS.nodes).default(1),
  tie: z.enum(['fail', 'first_choice']).default('fail'),
  ballot: z.string().regex(/^(result|out\/[A-Za-z0-9._/-]{1,200})$/, 'result, or out/<path> of a JSON file').default('result'),
};
const TallySchema = z.strictObject(TallyFields);
const VoteSchema = z.strictObject({
  ...TallyFields,
  voters: z.array(z.string().regex(/^[a-z][a-z0-9_-]{0,23}$/, 'a voter name is lowercase letters, digits, _ and -')).min(2).max(16),
  voter_kind: z.enum(GRAPH_RUN_KINDS).default('agent'),
});

const runKind = z.enum(GRAPH_RUN_KINDS);
const name = (what: string) => z.string().regex(/^[a-z][a-z0-9_-]{0,23}$/, `a ${what} name is lowercase letters, digits, _ and -, at most 24 characters`);
const MapSchema = z.strictObject({
  over: z.union([
    z.strictObject({ items: z.array(z.unknown()).min(1).max(GRAPH_BOUNDS.mapItems) }),
    z.strictObject({ from: id, path: z.string().regex(/^out\/[A-Za-z0-9._/-]{1,200}$/, 'out/<path> of a JSONL or JSON-array file the node committed') }),
    z.strictObject({ from: z.string().regex(GRAPH_INPUT_REF, '$inputs.<name> of a graph input that is a ref (a node\'s file takes a path too)') }),
  ]),
  max_items: positive.max(GRAPH_BOUNDS.mapItems).default(16),
  item_max_bytes: positive.max(GRAPH_BOUNDS.itemBytes).default(2048),
  item_kind: runKind.default('agent'),
});
const ReduceSchema = z.strictObject({ kind: runKind.default('agent'), as: z.string().regex(GRAPH_INPUT_NAME).max(40).default('items'), spawn: SpawnSchema });
const scalar = z.union([z.string().max(256), z.number(), z.boolean(), z.null()]);
const StopWhenSchema = z
  .strictObject({ file: z.string().regex(/^(result|out\/[A-Za-z0-9._/-]{1,200})$/, 'result, or out/<path> of a JSON file').default('result'), field: TallyFields.field, equals: scalar.optional(), gte: z.number().optional() })
  .refine((w) => (w.equals !== undefined) !== (w.gte !== undefined), 'stop_when takes exactly one of equals or gte');
const RoundsSchema = z.strictObject({ count: positive.max(GRAPH_BOUNDS.rounds).default(2), round_kind: runKind.default('agent'), stop_when: StopWhenSchema.optional() });
const DebateSchema = z.strictObject({
  sides: z.array(name('side')).min(2).max(GRAPH_BOUNDS.sides),
  rounds: positive.max(GRAPH_BOUNDS.rounds).default(2),
  side_kind: runKind.default('agent'),
  synthesizer: z.strictObject({ kind: runKind.default('agent'), spawn: SpawnSchema }).optional(),
});

const GateSchema = z.strictObject({
  prompt: z.string().min(1).max(2048),
  timeout_ms: positive.max(GATE_MAX_MS),
  on_timeout: z.literal('reject').default('reject'),
  prevent_self: z.boolean().default(false),
  approvers: z.union([z.literal('operators'), z.array(z.string().min(1).max(128)).min(1).max(32)]).default('operators'),
  show: z.array(id).min(1).max(SUMMARY_BOUNDS.count).optional(),
});

const NodeBudgetSchema = z.strictObject({ tokens: positive.optional(), cost_usd: z.number().positive().optional(), wall_ms: positive.max(24 * 3600_000).optional() });

const NodeSchema = z.strictObject({
  id,
  kind: z.enum(GRAPH_NODE_KINDS),
  depends_on: z.array(id).max(GRAPH_BOUNDS.nodes).default([]),
  when: WhenSchema.default('all_succeeded'),
  spawn: SpawnSchema.optional(),
  tally: TallySchema.optional(),
  vote: VoteSchema.optional(),
  gate: GateSchema.optional(),
  map: MapSchema.optional(),
  reduce: ReduceSchema.optional(),
  rounds: RoundsSchema.optional(),
  debate: DebateSchema.optional(),
  inputs: z
    .array(z.strictObject({ from: source, as: z.string().regex(GRAPH_INPUT_NAME, 'an input name is lowercase letters, digits, _ and -, starting with a letter') }))
    .max(GRAPH_BOUNDS.inputs)
    .default([]),
  retry: z
    .strictObject({ max: z.number().int().min(0).max(GRAPH_BOUNDS.retries), on: z.array(z.enum(RETRY_ON)).min(1).default(['failed']), idempotent: z.boolean().default(false) })
    .default({ max: 0, on: ['failed'], idempotent: false }),
  budget: NodeBudgetSchema.optional(),
  context: z.strictObject({ summaries_of: z.array(id).min(1).max(SUMMARY_BOUNDS.count) }).optional(),
});

const GraphInputSchema = z.union([
  z.strictObject({ text: z.string().max(GRAPH_BOUNDS.textInputBytes) }),
  z.strictObject({ ref: z.string().regex(REF_ID_RE, 'a ResultRef id (ref_…)') }),
]);

export const GraphSpecSchema = z.strictObject({
  graph: z.literal(GRAPH_VERSION),
  label: z.string().min(1).max(GRAPH_BOUNDS.labelChars).optional(),
  inputs: z.record(z.string().regex(GRAPH_INPUT_NAME), GraphInputSchema).default({}),
  lease: z.strictObject({ caps: z.array(z.enum(CAPABILITIES)).optional(), limits: Limits.optional(), timeout_ms: positive.max(24 * 3600_000).optional() }).optional(),
  concurrency: z.strictObject({ max_parallel: positive.max(GRAPH_BOUNDS.maxParallel) }).default({ max_parallel: 4 }),
  on_failure: z.strictObject({ policy: z.enum(['fail_fast', 'continue']) }).default({ policy: 'fail_fast' }),
  on_restart: z.enum(['resume', 'fail']).default('fail'),
  budget: z.strictObject({ wall_ms: positive.optional(), tokens: positive.optional(), cost_usd: z.number().positive().optional(), children: positive.max(GRAPH_BOUNDS.nodes * (GRAPH_BOUNDS.retries + 1)).optional() }).default({}),
  sinks: z.array(id).default([]),
  nodes: z.array(NodeSchema).min(1),
}) satisfies z.ZodType<GraphSpec, unknown>;

/** The keys a map at this path may hold (for the "did you mean" hint). */
export function validKeysAt(p: readonly PropertyKey[]): readonly string[] {
  let s: z.core.$ZodType = GraphSpecSchema;
  for (const k of [...p, null]) {
    for (;;) {
      const def = s._zod.def as { type: string; innerType?: z.core.$ZodType; element?: z.core.$ZodType; options?: z.core.$ZodType[] };
      if ((def.type === 'default' || def.type === 'optional') && def.innerType) s = def.innerType;
      else if (def.type === 'union' && def.options) s = def.options.find((o) => (o._zod.def as { type: string }).type === 'object') ?? def.options[0]!;
      else break;
    }
    const def = s._zod.def as { type: string; shape?: Record<string, z.core.$ZodType>; element?: z.core.$ZodType; valueType?: z.core.$ZodType };
    if (k === null) return def.type === 'object' && def.shape ? Object.keys(def.shape) : [];
    if (def.type === 'object' && def.shape && typeof k === 'string' && def.shape[k]) s = def.shape[k]!;
    else if (def.type === 'array' && def.element) s = def.element;
    else if (def.type === 'record' && def.valueType) s = def.valueType;
    else return [];
  }
  return [];
}

export function specError(source: string, problems: Problem[]): BrigError {
  const first = problems[0]!;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more: ${problems.slice(1, 4).map((p) => p.text).join('; ')})` : '';
  return new BrigError('invalid_input', `graph spec ${first.text}${more}`, {
    data: { problems: problems.slice(0, 20).map((p) => p.text) },
    hint: first.hint ?? 'Fix the spec; docs/graphs.md has its fields. `brig graph define FILE` checks it without running anything.',
  });
}

/** Where each node sits in the text (1-based line, by its index in `nodes`), for the checks after the schema. */
export type NodeLines = (number | undefined)[];

/** Parses and checks a spec's text against the one schema. `source` names it in errors. */
export function parseGraphSpec(text: string, source = 'graph'): Result<{ spec: GraphSpec; lines: NodeLines }, BrigError> {
  if (text.length > 2 * 1024 * 1024) return err(specError(source, [{ text: `${source}: the spec is ${text.length} characters; the bound is 2 MiB` }]));
  const { doc, lc, problems } = parseYaml(text, source);
  if (problems.length > 0) return err(specError(source, problems));
  const raw = doc.toJS({ maxAliasCount: 0 }) as unknown;
  const parsed = GraphSpecSchema.safeParse(raw);
  if (!parsed.success) {
    const ps = parsed.error.issues.map((i) => describeIssue(i, source, doc, lc, validKeysAt));
    return err(specError(source, ps));
  }
  const lines: NodeLines = parsed.data.nodes.map((_, i) => {
    const node = doc.getIn(['nodes', i], true) as { range?: [number, number, number] } | undefined;
    return node?.range ? lc.linePos(node.range[0]).line : undefined;
  });
  return ok({ spec: parsed.data as GraphSpec, lines });
}
