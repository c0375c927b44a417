/**
 * The spawn request on every face: one row per field of SpawnRequest (a limit as
 * `limits.<name>`), naming it as each face spells it — the HTTP body and the library take the
 * request's own name; the CLI a flag; MCP's `spawn` tool an argument (camelCase); an agent
 * lead's `spawn` tool a parameter. `null` is a face that does not take the field, and `why`
 * says why. One table, one truth: test/unit/runs/spawn-faces.test.ts pins each face's schema
 * to it (every name it lists is accepted and reaches that request field; nothing else is
 * accepted) and docs/api.md's table ("The spawn request on every face") to it.
 */
import type { SpawnRequest, SpawnLimits } from './runs.js';

/** A request field, a limit as `limits.<name>` (`upstream` is intake's, never on a face). */
export type SpawnField = Exclude<keyof SpawnRequest, 'limits' | 'upstream'> | `limits.${keyof SpawnLimits}`;

export interface SpawnFieldFaces {
  /** The `brig spawn` flag (`-- ARGV` for argv), or null. */
  cli: string | null;
  /** The MCP `spawn` argument (a limit as `limits.<name>`), or null. */
  mcp: string | null;
  /** The agent lead's `spawn` tool parameter, or null. */
  agentTool: string | null;
  /** What the field means, for every face. */
  about: string;
  /** Why a face does without it (when one is null). */
  why?: string;
}

const LEAD_SPAWNS_AGENTS = 'a lead spawns agent children only, under its own lease';

export const SPAWN_FIELDS = {
  task: { cli: '--task', mcp: 'task', agentTool: 'task', about: 'what the child is asked to do' },
  agent: { cli: '--agent', mcp: 'agent', agentTool: 'agent', about: 'the agent spec the child runs (default: the default agent); for other kinds a name for the run' },
  model: { cli: '--model', mcp: 'model', agentTool: 'model', about: "agent only: a model alias of the supervisor's configuration (default: the spec's, else the configured default)" },
  kind: { cli: null, mcp: null, agentTool: null, about: 'script, command or agent', why: 'the CLI and MCP say it by --script / -- ARGV / --agent (script / argv / agent); a lead spawns agents' },
  script: { cli: '--script', mcp: 'script', agentTool: null, about: 'a script child: ES-module source exporting `default async function (brig)`', why: LEAD_SPAWNS_AGENTS },
  argv: { cli: '-- ARGV', mcp: 'argv', agentTool: null, about: 'a command child: argv run directly in the jail, never a shell string', why: LEAD_SPAWNS_AGENTS },
  image: {
    cli: '--image',
    mcp: 'image',
    agentTool: null,
    about: 'a local image to run the child in, under the same hardened profile (default: brig\'s child image); an agent spec may name one (`image:`); docs/jail.md, "Any image"',
    why: 'an operator choice; a child never picks an image',
  },
  caps: { cli: '--cap', mcp: 'caps', agentTool: null, about: 'capabilities to ask for; the lease grants at most what the parent (or profile) holds', why: LEAD_SPAWNS_AGENTS },
  egress: {
    cli: '--egress',
    mcp: 'egress',
    agentTool: 'egress',
    about: 'hosts the child may reach through the egress gate: rule ids of the policy (the CLI also host[:port] inside one); never inherited (docs/egress.md)',
  },
  profile: { cli: '--profile', mcp: 'profile', agentTool: null, about: "a lease profile of this home's policy", why: LEAD_SPAWNS_AGENTS },
  'limits.cpu': { cli: '--cpus', mcp: 'limits.cpu', agentTool: null, about: 'CPU limit of the jail', why: LEAD_SPAWNS_AGENTS },
  'limits.memoryMb': { cli: '--memory', mcp: 'limits.memoryMb', agentTool: null, about: 'memory limit of the jail (MiB)', why: LEAD_SPAWNS_AGENTS },
  'limits.pids': { cli: '--pids', mcp: 'limits.pids', agentTool: null, about: 'process limit of the jail', why: LEAD_SPAWNS_AGENTS },
  'limits.diskMb': { cli: '--disk', mcp: 'limits.diskMb', agentTool: null, about: '/workspace size (MiB)', why: LEAD_SPAWNS_AGENTS },
  'limits.tokens': { cli: '--tokens', mcp: 'limits.tokens', agentTool: 'tokens', about: "the child's token budget (at most what its parent holds; more is clamped)" },
  'limits.costUsd': { cli: '--cost', mcp: 'limits.costUsd', agentTool: 'cost_usd', about: "the child's cost budget in USD (at most what its parent holds; more is clamped)" },
  objective: { cli: '--objective', mcp: 'objective', agentTool: 'objective', about: 'the goal the task serves; re-read by an agent after each compaction' },
  artifact_refs: {
    cli: '--artifact',
    mcp: 'artifacts',
    agentTool: 'artifact_refs',
    about: 'handed to the child read-only at /artifacts/<name>: ResultRef ids (ref_…) of runs the spawner may read, or (an operator only) absolute host paths',
  },
  domain_knowledge: { cli: '--knowledge', mcp: 'domainKnowledge', agentTool: 'domain_knowledge', about: 'facts the child should know, one entry each' },
  tool_groups: { cli: '--tool-group', mcp: 'toolGroups', agentTool: 'tool_groups', about: "agent only: offer only the tools of these policy groups (workspace, delegation, slicing, … — `brig policy check` lists them) and finish, never more than its lease allows" },
  include_parent_history: {
    cli: null,
    mcp: null,
    agentTool: 'include_parent_history',
    about: '`summary`: the child gets a bounded summary of its parent\'s conversation (default `none`)',
    why: 'brig holds no conversation of an operator: the CLI and MCP give the summary text itself (--parent-summary / parentSummary), which implies `summary`',
  },
  parent_summary: {
    cli: '--parent-summary',
    mcp: 'parentSummary',
    agentTool: null,
    about: "the parent's history as the child sees it, at most parentSummaryMaxTokens × 4 characters",
    why: "brig writes it for a lead: the supervisor condenses the lead's own conversation",
  },
  expected_outputs: { cli: '--expect', mcp: 'expectedOutputs', agentTool: 'expected_outputs', about: 'files under /workspace/out that must exist when the child ends (missing ones are named in its envelope)' },
  repo: {
    cli: '--repo',
    mcp: 'repo',
    agentTool: 'repo',
    about: "a host git repository PATH[@REF] (absolute PATH, REF default HEAD) cloned clean into /workspace/repo; the change comes back as the changes.patch ref, `brig apply` makes it a branch. A lead may give only `inherit`: its own repository, at its base",
  },
  max_steps: { cli: '--max-steps', mcp: 'limits.maxSteps', agentTool: 'max_steps', about: 'the step budget: at least 30 (or the configured default, if smaller), at most the configured default (50); outside is refused' },
  timeout: { cli: '--timeout', mcp: 'limits.timeoutMs', agentTool: null, about: 'run timeout (the CLI in seconds, else ms), narrowed by the lease', why: "a lead's child lives within the lead's own timeout" },
  label: { cli: '--label', mcp: 'label', agentTool: null, about: 'a label to find the run by', why: 'a lead finds its children by run id (list_children)' },
  async: { cli: '--async', mcp: null, agentTool: 'async', about: 'return once the run is admitted instead of waiting for its end', why: 'MCP spawn is always async: `wait` follows it' },
} as const satisfies Record<SpawnField, SpawnFieldFaces>;

/** The agent tool's parameters, as the lead's model writes them (child/agent/tools/broker-tools.ts). */
export type AgentSpawnParam = { [F in keyof typeof SPAWN_FIELDS]: (typeof SPAWN_FIELDS)[F]['agentTool'] }[keyof typeof SPAWN_FIELDS] & string;
