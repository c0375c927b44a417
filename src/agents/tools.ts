import type { BrokerMethod } from '../protocol/index.js';
import { grantAllows, type Capability } from '../lease/index.js';

/**
 * The tool surface an agent child may be offered, decided on the supervisor side from its
 * lease — never from the model, the spec's wishes or the child: a tool whose capability the
 * lease does not hold is not offered, and its broker method refuses it anyway.
 */

/** Every tool the in-jail loop implements, with the capability it needs (null: none). */
export const AGENT_TOOLS = {
  shell: 'exec',
  read_file: null,
  write_file: null,
  edit_file: null,
  list_files: null,
  grep_files: null,
  ref_read: 'refs.read',
  ref_grep: 'refs.read',
  ref_jq: 'refs.read',
  ref_sql: 'refs.read',
  ref_jsonpath: 'refs.read',
  spawn: 'spawn',
  list_children: 'spawn',
  wait_children: 'spawn',
  steer_child: 'steer',
  kill_child: 'kill',
  send: 'steer',
  status: 'spawn',
  explain: 'spawn',
  history: 'spawn',
  // Runs an execution graph (docs/graphs.md) as one child of this run: only with `graph`.
  graph_run: 'graph',
  // Its companion: a graph it started, looked at (timeoutMs 0) or waited for, bounded.
  graph_wait: 'graph',
  // And its stop: a graph it started, cancelled (its running nodes killed, the rest skipped).
  graph_cancel: 'graph',
  // The `web` group: HTTP from inside the jail through its egress relay; the gate decides each host (docs/egress.md).
  web_fetch: 'net.egress',
  web_search: 'net.egress',
  session_status: null,
  ctx_search: null,
  ctx_expand: null,
  finish: null,
} as const satisfies Record<string, Capability | null>;
export type AgentTool = keyof typeof AGENT_TOOLS;
export const AGENT_TOOL_NAMES = Object.keys(AGENT_TOOLS) as AgentTool[];

/**
 * The run looking at itself (its status, its own transcript): read-only and of no effect on
 * anything else, so a spawn's tool groups do not take them away (as they keep `finish`); a
 * spec's explicit tool list and the policy's denylist still do.
 */
const SELF_TOOLS = ['session_status', 'ctx_search', 'ctx_expand'] as const satisfies readonly AgentTool[];

/** What a coordinator lead keeps: delegation, read-only drill-in, observability, and finish. */
const COORDINATOR_TOOLS: ReadonlySet<AgentTool> = new Set([
  'read_file', 'list_files', 'grep_files',
  'ref_read', 'ref_grep', 'ref_jq', 'ref_sql', 'ref_jsonpath',
  'spawn', 'list_children', 'wait_children', 'steer_child', 'kill_child', 'send', 'status', 'explain', 'history', 'graph_run', 'graph_wait', 'graph_cancel',
  ...SELF_TOOLS, 'finish',
]);

export interface ToolSurfaceInput {
  /** The lease's capabilities. */
  caps: readonly string[];
  /** Tools the spec lists (names); undefined = every tool the lease allows. */
  wanted?: readonly string[];
  role: 'worker' | 'coordinator';
  /** The policy's denylisted tools: never offered, whatever else says. */
  denied?: readonly string[];
  /** The tools of the spawn's tool groups (the policy's): only these (and finish); undefined = not narrowed. */
  groupTools?: readonly string[];
}

/** The offered tools, in a fixed order (the system prompt and tool list stay byte-stable). */
export function toolSurface(i: ToolSurfaceInput): AgentTool[] {
  const want = i.wanted ? new Set(i.wanted) : undefined;
  const denied = new Set(i.denied ?? []);
  const grouped = i.groupTools ? new Set(i.groupTools) : undefined;
  return AGENT_TOOL_NAMES.filter((t) => {
    if (t === 'finish') return true;
    const cap = AGENT_TOOLS[t];
    if (!grantAllows(i, cap)) return false;
    if (denied.has(t)) return false;
    if (grouped && !grouped.has(t) && !(SELF_TOOLS as readonly string[]).includes(t)) return false;
    // The role gives the default surface; a spec's explicit tool list overrides it. Either
    // way the lease's capabilities bound it: the role never widens anything.
    if (want) return want.has(t);
    return i.role !== 'coordinator' || COORDINATOR_TOOLS.has(t);
  });
}

/**
 * The broker methods each tool calls. The run's bearer is good for these and the loop's own
 * methods only (AGENT_LOOP_METHODS): the broker refuses every other method `tool_not_offered`,
 * so a bearer that leaves the runtime still cannot do what the spec's tools do not offer.
 */
export const TOOL_METHODS = {
  shell: [],
  read_file: [],
  write_file: [],
  edit_file: [],
  list_files: [],
  grep_files: [],
  ref_read: ['refs.read'],
  ref_grep: ['refs.grep'],
  ref_jq: ['refs.jq'],
  ref_sql: ['refs.sql'],
  ref_jsonpath: ['refs.jsonpath'],
  spawn: ['spawn'],
  list_children: [],
  wait_children: ['wait'],
  steer_child: ['child.steer'],
  kill_child: ['child.kill'],
  send: ['child.send'],
  status: ['child.status'],
  explain: ['child.explain'],
  history: ['child.history'],
  graph_run: ['graph.run'],
  graph_wait: ['graph.wait'],
  graph_cancel: ['graph.cancel'],
  finish: [],
  // Plain HTTP through the egress relay: the gate decides each request, no broker method.
  web_fetch: [],
  web_search: [],
  // Read-only views of the run itself, answered by the supervisor (runs/self-view.ts).
  session_status: ['session.status'],
  ctx_search: ['session.search'],
  ctx_expand: ['session.expand'],
} as const satisfies Record<AgentTool, readonly BrokerMethod[]>;

/**
 * What the loop itself calls, whatever its tools: methods about the run itself (its model
 * conversation, progress, steers, checkpoint and result) — none reaches another run or a ref.
 */
export const AGENT_LOOP_METHODS = [
  'hello', 'progress', 'log', 'checkpoint', 'resume', 'result', 'steer.poll', 'llm.append', 'llm.reset', 'llm.complete',
] as const satisfies readonly BrokerMethod[];

/** The broker methods an agent run offered `tools` may call: its loop's and its tools' (sorted). */
export function agentMethodSurface(tools: readonly string[]): BrokerMethod[] {
  const out = new Set<BrokerMethod>(AGENT_LOOP_METHODS);
  for (const t of tools) {
    if (Object.hasOwn(TOOL_METHODS, t)) for (const m of TOOL_METHODS[t as AgentTool]) out.add(m);
  }
  return [...out].sort();
}
