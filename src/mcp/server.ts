/**
 * brig's MCP face: one McpServer over a Brig (the library's: the daemon's supervisor, or one
 * in this process). It translates only — every tool is one call of Brig or its RefService,
 * every refusal a tool result with the BrigError's code and hint. No transport here: the
 * caller connects it (stdio.ts for `brig mcp`, an in-memory pair in the tests).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Brig } from '../index.js';
import { RESOURCE_DEFAULTS, registerRefResources, type ResourceOptions } from './resources.js';
import { GATE_TOOLS, GRAPH_TOOLS } from './graph-tools.js';
import { REF_TOOLS } from './ref-tools.js';
import { RESULT_TOOLS } from './result-tools.js';
import { RUN_TOOLS } from './run-tools.js';
import { REAL_TIMERS, registerTools, type ToolContext, type ToolDef } from './tool-def.js';

export interface McpServerOptions {
  /** brig's version, for the server's implementation info. */
  version: string;
  /** Offer only the tools that read (no spawn, steer, kill). */
  readOnly?: boolean;
  /** The operator lets this server decide graph gates (`graph_decide`); off by default, never with readOnly. */
  gateDecisions?: boolean;
  /** How often `wait` sends progress notifications (default 2 s). */
  progressEveryMs?: number;
  resources?: Partial<ResourceOptions>;
  now?: () => Date;
  /** The progress notifications' timer (a test fires it by hand). */
  timers?: ToolContext['timers'];
}

/** Every tool, in the order a client lists them. */
export const ALL_TOOLS: ToolDef[] = [...RUN_TOOLS, ...RESULT_TOOLS, ...REF_TOOLS, ...GRAPH_TOOLS];

/** The tools a server with these options offers. */
export const toolsFor = (o: { readOnly?: boolean; gateDecisions?: boolean }): ToolDef[] =>
  o.readOnly === true ? ALL_TOOLS.filter((t) => t.annotations.readOnlyHint) : o.gateDecisions === true ? [...ALL_TOOLS, ...GATE_TOOLS] : ALL_TOOLS;

const INSTRUCTIONS = `brig runs children — commands, scripts, LLM agents — each in its own fresh, network-less, hardened container under a lease, and keeps their outputs on disk as ResultRefs.
Hand work off with spawn (it returns the run id at once), then wait for it: an ended run comes back as an envelope, a bounded summary plus one handle per ResultRef.
Drill into a ref with ref_read / ref_grep / ref_jq / ref_sql / ref_jsonpath instead of reading it whole: only the slice enters your context.
A refusal (isError) carries a code and a hint saying what to do next.`;

export function createMcpServer(brig: Brig, o: McpServerOptions): McpServer {
  const server = new McpServer(
    { name: 'brig', title: 'brig: jailed children and sliceable results', version: o.version },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS },
  );
  registerTools(server, toolsFor(o), {
    brig,
    now: o.now ?? (() => new Date()),
    progressEveryMs: o.progressEveryMs ?? 2000,
    timers: o.timers ?? REAL_TIMERS,
  });
  registerRefResources(server, brig, { ...RESOURCE_DEFAULTS, ...o.resources });
  return server;
}
