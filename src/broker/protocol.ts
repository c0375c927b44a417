/**
 * Broker protocol v1: one JSON object per line, at most 64 KiB, over a run's unix socket.
 *
 * Guarantees: ONE table (METHODS) says which capability each method needs; every envelope
 * and every method's params are zod-validated (strict: unknown keys refused); fields that
 * name who the caller is (run, lease, depth, caps…) are stripped from params before a
 * handler sees them — identity comes from the verified bearer, never from the child.
 * Threat: a hostile child shaping requests to widen itself or impersonate another run.
 * Trusts: nothing in the line. Fails closed: an unknown method or shape is refused.
 */
import { z } from 'zod';
import {
  BROKER_METHODS,
  LLM_PURPOSES,
  GRAPH_ID,
  PROTOCOL_VERSION,
  SEND_MODES,
  MAX_SEND_TURNS,
  type BrokerMethod,
  type Capability,
  type LlmMessage,
  type LlmTool,
  type ParamsOf,
} from '../protocol/index.js';

export { MAX_LINE_BYTES, MAX_NESTING, MAX_REPLY_BYTES, PROTOCOL_VERSION } from '../protocol/index.js';
export type { ParamsOf, ReplyOf } from '../protocol/index.js';

const Id = z.union([z.string().min(1).max(64), z.number().int().safe()]);
const RunRef = z.string().min(1).max(128);
const RefId = z.string().min(1).max(256);
const Json = z.unknown();

/** The longest text of one message or system prompt (a line is ≤ 64 KiB anyway). */
const MAX_CONTENT = 48 * 1024;
const ToolCallSchema = z.strictObject({ id: z.string().min(1).max(128), name: z.string().min(1).max(64), input: Json, inputError: z.string().max(2000).optional() });
/** docs/agents.md: brig's provider-neutral conversation messages. */
export const LlmMessageSchema: z.ZodType<LlmMessage> = z.discriminatedUnion('role', [
  z.strictObject({ role: z.literal('user'), content: z.string().max(MAX_CONTENT) }),
  z.strictObject({ role: z.literal('assistant'), content: z.string().max(MAX_CONTENT), toolCalls: z.array(ToolCallSchema).max(64).optional() }),
  z.strictObject({ role: z.literal('tool'), toolCallId: z.string().min(1).max(128), content: z.string().max(MAX_CONTENT), isError: z.boolean().optional() }),
]);
const LlmToolSchema = z.strictObject({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
  description: z.string().max(2000),
  parameters: z.record(z.string(), Json),
}) satisfies z.ZodType<LlmTool>;

/** Every method's params schema, declared against protocol's ParamsOf (strict: unknown keys refused). */
const PARAMS = {
  hello: z.strictObject({}),
  progress: z.strictObject({
    line: z.string().max(1000).nullable().optional(),
    steps: z.number().int().nonnegative().optional(),
    /** The tool the child is running now (content-free: a name). */
    tool: z.string().max(64).regex(/^[A-Za-z0-9_.-]*$/).nullable().optional(),
  }),
  log: z.strictObject({ level: z.enum(['debug', 'info', 'warn', 'error']).default('info'), message: z.string().max(2000) }),
  checkpoint: z.strictObject({ state: Json }),
  resume: z.strictObject({}),
  result: z.union([z.strictObject({ value: Json }), z.strictObject({ spooled: z.strictObject({ bytes: z.number().int().nonnegative() }) })]),
  'steer.poll': z.strictObject({}),
  spawn: z.strictObject({ request: z.record(z.string(), Json) }),
  wait: z.strictObject({ runs: z.array(RunRef).min(1).max(50), timeoutMs: z.number().int().positive().max(600_000).optional() }),
  'refs.list': z.strictObject({ run: RunRef }),
  'refs.read': z.strictObject({
    ref: RefId,
    offset: z.number().int().nonnegative().optional(),
    length: z.number().int().positive().max(1 << 20).optional(),
    line: z.number().int().positive().optional(),
    lines: z.number().int().positive().max(10_000).optional(),
  }),
  'refs.grep': z.strictObject({
    ref: RefId,
    pattern: z.string().min(1).max(1000),
    maxMatches: z.number().int().positive().max(10_000).optional(),
    context: z.number().int().nonnegative().max(20).optional(),
    ignoreCase: z.boolean().optional(),
    fixed: z.boolean().optional(),
  }),
  'refs.jq': z.strictObject({ ref: RefId, filter: z.string().min(1).max(2000) }),
  'refs.sql': z.strictObject({ ref: RefId, sql: z.string().min(1).max(8000), maxRows: z.number().int().positive().max(10_000).optional() }),
  'refs.jsonpath': z.strictObject({ ref: RefId, path: z.string().min(1).max(1000) }),
  'llm.append': z.strictObject({ messages: z.array(LlmMessageSchema).min(1).max(64) }),
  'llm.reset': z.strictObject({ messages: z.array(LlmMessageSchema).max(64) }),
  'llm.complete': z.strictObject({
    system: z.string().max(MAX_CONTENT),
    append: z.array(LlmMessageSchema).min(1).max(64).optional(),
    tools: z.array(LlmToolSchema).max(64).optional(),
    maxTokens: z.number().int().positive().max(200_000).optional(),
    model: z.string().max(128).optional(),
    purpose: z.enum(LLM_PURPOSES).optional(),
    step: z.number().int().nonnegative().optional(),
  }),
  'child.kill': z.strictObject({ child: RunRef, reason: z.string().max(200).optional() }),
  'child.steer': z.strictObject({ child: RunRef, message: z.string().min(1).max(4000) }),
  'child.send': z.strictObject({
    child: RunRef,
    text: z.string().min(1).max(4000),
    mode: z.enum(SEND_MODES).optional(),
    timeoutMs: z.number().int().positive().max(50_000).optional(),
    maxTurns: z.number().int().min(0).max(MAX_SEND_TURNS).optional(),
    conversation: z.string().min(1).max(64).optional(),
  }),
  'child.status': z.strictObject({ child: RunRef }),
  'child.explain': z.strictObject({ child: RunRef }),
  'child.history': z.strictObject({ child: RunRef, offset: z.number().int().nonnegative().optional(), limit: z.number().int().positive().max(20).optional() }),
  'session.status': z.strictObject({}),
  'session.search': z.strictObject({ query: z.string().min(1).max(200), limit: z.number().int().positive().max(20).optional() }),
  'session.expand': z.strictObject({ offset: z.number().int().nonnegative().optional(), limit: z.number().int().positive().max(20).optional() }),
  // The spec travels whole in one line (MAX_LINE_BYTES): a graph bigger than that is not one an agent writes.
  // timeoutMs 0: start it and answer at once (graph.wait polls or waits for it, bounded).
  'graph.run': z.strictObject({ spec: z.string().min(1).max(48 * 1024), timeoutMs: z.number().int().min(0).max(600_000).optional() }),
  'graph.wait': z.strictObject({ graphId: z.string().regex(GRAPH_ID), timeoutMs: z.number().int().min(0).max(600_000).optional() }),
  'graph.cancel': z.strictObject({ graphId: z.string().regex(GRAPH_ID) }),
} as const satisfies { [M in BrokerMethod]: z.ZodType<ParamsOf<M>> };

export type Method = BrokerMethod;
export const METHOD_NAMES = Object.keys(BROKER_METHODS) as Method[];

/** The one method → required capability table (protocol/broker.ts) with each method's params schema. */
export const METHODS: { readonly [M in Method]: { readonly cap: (typeof BROKER_METHODS)[M]; readonly params: (typeof PARAMS)[M] } } = Object.freeze(
  Object.fromEntries(METHOD_NAMES.map((m) => [m, Object.freeze({ cap: BROKER_METHODS[m], params: PARAMS[m] })])) as never,
);

/**
 * Names the first in-jail runtime used; they resolve to the same table rows (not new
 * methods, not new capabilities). New clients should use the plain names.
 */
export const METHOD_ALIASES: Readonly<Record<string, Method>> = Object.freeze({
  'run.progress': 'progress',
  'run.checkpoint': 'checkpoint',
  'run.resume': 'resume',
  'run.result': 'result',
  'run.spawn': 'spawn',
});

export function resolveMethod(name: string): Method | undefined {
  if (Object.hasOwn(METHODS, name)) return name as Method;
  return Object.hasOwn(METHOD_ALIASES, name) ? METHOD_ALIASES[name] : undefined;
}

/** The capability a method needs: the broker passes it to the lease code's own predicate. */
export function requiredCapability(m: Method): Capability | null {
  return BROKER_METHODS[m];
}

export const RequestSchema = z.strictObject({
  v: z.literal(PROTOCOL_VERSION),
  id: Id,
  method: z.string().min(1).max(64),
  token: z.string().max(512),
  params: z.unknown().optional(),
  /**
   * The client sends this call again after a reconnect (it had no reply): a handler that
   * already applied the call with this id answers it again instead of applying it twice.
   */
  resent: z.literal(true).optional(),
});
export type BrokerRequest = z.infer<typeof RequestSchema>;

export type BrokerReply =
  | { v: 1; id: string | number | null; ok: true; result: unknown }
  | { v: 1; id: string | number | null; ok: false; error: { code: string; message: string; hint: string } };

/** Identity a child must never set: the broker fills it from the verified lease. */
export const FORBIDDEN_FIELDS = [
  'runId',
  'rootRunId',
  'parentRunId',
  'leaseId',
  'parentLeaseId',
  'depth',
  'token',
  'lease',
  'killedBy',
  'tokenHash',
] as const;
const FORBIDDEN = new Set<string>(FORBIDDEN_FIELDS);

function stripTop(o: unknown, stripped: string[]): unknown {
  if (!o || typeof o !== 'object' || Array.isArray(o)) return o;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (FORBIDDEN.has(k) || k === '__proto__') stripped.push(k);
    else out[k] = v;
  }
  return out;
}

/**
 * Removes identity fields from params (and from a spawn's `request`, where a child could
 * otherwise claim a parent or a depth). Returns the cleaned params and the names removed.
 */
export function stripParams(method: Method, params: unknown): { params: unknown; stripped: string[] } {
  const stripped: string[] = [];
  const top = stripTop(params ?? {}, stripped);
  if (method === 'spawn' && top && typeof top === 'object' && 'request' in top) {
    (top as Record<string, unknown>).request = stripTop((top as Record<string, unknown>).request, stripped);
  }
  return { params: top, stripped };
}

/** Nesting depth of a JSON text, counted without parsing (strings are skipped). */
export function jsonNesting(text: string): number {
  let depth = 0;
  let max = 0;
  let inStr = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inStr) {
      if (c === 92) i++; // backslash: skip the escaped char
      else if (c === 34) inStr = false;
    } else if (c === 34) inStr = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) max = depth;
    } else if (c === 125 || c === 93) depth--;
  }
  return max;
}
