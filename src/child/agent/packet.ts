/**
 * The part of the spawn packet (/workspace/.brig/packet.json) the agent loop reads. The
 * packet is the supervisor's, written 0444 before the child starts; it is checked here so a
 * malformed one fails set-up (exit 2) instead of a confused loop. Defaults fill what the
 * supervisor may leave out; anything of the wrong type is refused.
 */

import type { AgentPacket, SpawnPacket } from '../../protocol/index.js';

/** The packet's agent part, as the supervisor writes it (protocol/runs.ts). */
export type AgentSpec = AgentPacket;

/** What the loop reads of the spawn packet (protocol/runs.ts SpawnPacket), checked and flattened. */
export interface LoopPacket
  extends Pick<SpawnPacket, 'runId' | 'task' | 'objective' | 'artifactRefs' | 'domainKnowledge' | 'parentSummary' | 'depth' | 'maxDepth' | 'timeoutMs'> {
  /** The lease's capabilities (packet.lease.caps). */
  caps: string[];
  agent: AgentSpec;
  /** A graph node's upstream summaries (packet.upstream): data other children wrote. */
  upstream: { node: string; text: string }[];
}

export const AGENT_DEFAULTS = {
  autoCompactThreshold: 0.8,
  toolResultMaxChars: 16_000,
  maxConsecutiveFormatErrors: 3,
  timeoutMs: 600_000,
  heartbeatMs: 30_000,
} as const;

type Obj = Record<string, unknown>;

function bad(field: string, want: string): never {
  throw new Error(`packet field ${field} must be ${want}`);
}
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
function str(o: Obj, k: string, path: string): string {
  return typeof o[k] === 'string' ? (o[k] as string) : bad(path + k, 'a string');
}
function optStr(o: Obj, k: string, path: string): string | null {
  return o[k] === undefined || o[k] === null ? null : str(o, k, path);
}
function strs(o: Obj, k: string, path: string): string[] {
  const v = o[k] ?? [];
  return Array.isArray(v) && v.every((x) => typeof x === 'string') ? [...v] : bad(path + k, 'a list of strings');
}
function num(o: Obj, k: string, path: string, dflt: number | undefined, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const v = o[k] ?? dflt;
  return typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max ? v : bad(path + k, `a number in [${min}, ${max}]`);
}

function upstreamOf(v: unknown): { node: string; text: string }[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((u) => isObj(u) && typeof u.node === 'string' && typeof u.text === 'string')) bad('upstream', 'a list of {node, text}');
  return (v as { node: string; text: string }[]).map((u) => ({ node: u.node, text: u.text }));
}

export function parseAgentPacket(raw: unknown): LoopPacket {
  if (!isObj(raw)) bad('(root)', 'an object');
  const a = raw.agent;
  if (!isObj(a)) bad('agent', 'an object (this packet is not for an agent child)');
  const role = a.role ?? 'worker';
  if (role !== 'worker' && role !== 'coordinator') bad('agent.role', "'worker' or 'coordinator'");
  const lease = isObj(raw.lease) ? raw.lease : {};
  const p = 'agent.';
  return {
    runId: typeof raw.runId === 'string' ? raw.runId : '',
    task: str(raw, 'task', ''),
    objective: optStr(raw, 'objective', ''),
    artifactRefs: strs(raw, 'artifactRefs', ''),
    // A list (one fact an entry); a packet of an older supervisor carries one string or null.
    domainKnowledge: typeof raw.domainKnowledge === 'string' ? [raw.domainKnowledge] : raw.domainKnowledge === null ? [] : strs(raw, 'domainKnowledge', ''),
    parentSummary: optStr(raw, 'parentSummary', ''),
    depth: num(raw, 'depth', '', 1, 0),
    maxDepth: num(raw, 'maxDepth', '', 1, 0),
    timeoutMs: num(raw, 'timeoutMs', '', AGENT_DEFAULTS.timeoutMs, 1),
    caps: strs(lease, 'caps', 'lease.'),
    upstream: upstreamOf(raw.upstream),
    agent: {
      name: str(a, 'name', p),
      instructions: optStr(a, 'instructions', p) ?? '',
      tools: strs(a, 'tools', p),
      maxSteps: Math.floor(num(a, 'maxSteps', p, undefined, 1)),
      workspaceAware: a.workspaceAware === undefined ? false : typeof a.workspaceAware === 'boolean' ? a.workspaceAware : bad(p + 'workspaceAware', 'a boolean'),
      role,
      autoCompactThreshold: num(a, 'autoCompactThreshold', p, AGENT_DEFAULTS.autoCompactThreshold, 0.05, 1),
      toolResultMaxChars: Math.floor(num(a, 'toolResultMaxChars', p, AGENT_DEFAULTS.toolResultMaxChars, 1000, 40_000)),
      maxConsecutiveFormatErrors: Math.floor(num(a, 'maxConsecutiveFormatErrors', p, AGENT_DEFAULTS.maxConsecutiveFormatErrors, 1, 100)),
      contextWindow: Math.floor(num(a, 'contextWindow', p, undefined, 1)),
      maxOutputTokens: Math.floor(num(a, 'maxOutputTokens', p, undefined, 1)),
      ...(optStr(a, 'webSearchUrl', p) !== null ? { webSearchUrl: str(a, 'webSearchUrl', p) } : {}),
      heartbeatMs: Math.floor(num(a, 'heartbeatMs', p, AGENT_DEFAULTS.heartbeatMs, 1000, 3_600_000)),
    },
  };
}
