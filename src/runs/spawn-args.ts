/**
 * The spawn request in camelCase with units in its names (`limits.timeoutMs`) — the MCP `spawn`
 * tool's arguments and the handle library's `spawn` options (src/handles.ts) — and their
 * translation into brig's one SpawnRequest (the wire's names: SPAWN_FIELDS). Exactly
 * one of `argv` (a command child), `script` (a script child) or `agent` (an agent child);
 * artifacts are ref ids or absolute host paths (a server's working directory is its client's
 * choice, so a relative path would mean nothing stable). Always async: a call must answer in
 * seconds, a child may run for minutes — `wait` follows it.
 */
import path from 'node:path';
import { z } from 'zod';
import { CAPABILITIES, REF_ID_RE, SPAWN_BOUNDS, SPAWN_FIELDS, type SpawnRequestInput } from './types.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';

export const SpawnArgsSchema = z.strictObject({
  task: z.string().min(1).max(SPAWN_BOUNDS.taskChars).describe('what the child is asked to do (in its packet; an agent’s prompt)'),
  argv: z.array(z.string()).min(1).max(SPAWN_BOUNDS.argvItems).optional().describe('a command child: argv run directly in the jail, never a shell string (wrap in ["sh","-c","…"] for one); cwd /workspace, write outputs under out/'),
  script: z.string().min(1).max(SPAWN_BOUNDS.scriptBytes).optional().describe('a script child: the source of an ES module exporting `default async function (brig)` (the brig SDK)'),
  agent: z.string().min(1).max(128).optional().describe('an agent child: the name of an agent spec (e.g. `general`); needs a model configured for the supervisor'),
  model: z.string().min(1).max(128).optional().describe('agent only: a model alias (default: the spec’s, else the configured default)'),
  objective: z.string().max(4096).optional().describe('the goal the task serves'),
  image: z.string().min(1).max(256).optional().describe(SPAWN_FIELDS.image.about),
  artifacts: z.array(z.string().min(1)).max(64).optional().describe(SPAWN_FIELDS.artifact_refs.about),
  domainKnowledge: z.array(z.string().min(1)).max(SPAWN_BOUNDS.domainKnowledgeItems).optional().describe(SPAWN_FIELDS.domain_knowledge.about),
  toolGroups: z.array(z.string().min(1).max(64)).min(1).max(32).optional().describe(SPAWN_FIELDS.tool_groups.about),
  parentSummary: z.string().min(1).max(SPAWN_BOUNDS.parentSummaryMaxTokens * 4).optional().describe(`${SPAWN_FIELDS.parent_summary.about} (sets include_parent_history summary)`),
  profile: z.string().min(1).max(128).optional().describe('a lease profile of this home’s policy (default: the policy’s default)'),
  caps: z.array(z.enum(CAPABILITIES)).optional().describe('capabilities to ask for; the lease grants at most what the profile allows'),
  egress: z.array(z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/)).max(32).optional().describe('egress rule ids of this home’s policy the child may use (through the egress gate; the jail keeps no network). Never inherited: none asked, none held'),
  limits: z
    .strictObject({
      cpu: z.number().positive().optional(),
      memoryMb: z.number().int().positive().optional(),
      pids: z.number().int().positive().optional(),
      diskMb: z.number().int().positive().optional().describe('/workspace size in MiB: writes past it fail with ENOSPC'),
      timeoutMs: z.number().int().positive().optional().describe('end the run watchdog_timeout after this long'),
      maxSteps: z.number().int().positive().optional().describe(SPAWN_FIELDS.max_steps.about),
      tokens: z.number().int().nonnegative().optional().describe("the child's token budget (model calls through its broker)"),
      costUsd: z.number().nonnegative().optional().describe("the child's cost budget in USD"),
    })
    .optional()
    .describe('narrowing only: the lease clamps each to the profile’s'),
  expectedOutputs: z.array(z.string().min(1).max(1024)).max(64).optional().describe('paths under out/ that must exist when the run ends'),
  label: z.string().min(1).max(SPAWN_BOUNDS.labelChars).optional().describe('a label to find the run by (`list` with label)'),
  repo: z.string().min(1).max(4096).optional().describe(SPAWN_FIELDS.repo.about),
});
export type SpawnArgs = z.infer<typeof SpawnArgsSchema>;

const invalid = (message: string, hint: string) => err(new BrigError('invalid_input', message, { hint }));

/** The SpawnRequest for these arguments, or why not (before anything is created). */
export function toSpawnRequest(a: SpawnArgs): Result<SpawnRequestInput> {
  const given = (['argv', 'script', 'agent'] as const).filter((k) => a[k] !== undefined);
  if (given.length !== 1) {
    return invalid(
      given.length === 0 ? 'spawn needs one of argv, script or agent' : `spawn takes exactly one of argv, script or agent, got ${given.join(' and ')}`,
      'A command child: argv ["sh","-c","echo hi > out/a.txt"]; a script child: script (ES module source); an agent child: agent "general".',
    );
  }
  if (a.model !== undefined && a.agent === undefined) return invalid('model is only for an agent child', 'Give agent with model, or leave model out.');
  const relative = (a.artifacts ?? []).find((p) => !path.isAbsolute(p) && !REF_ID_RE.test(p));
  if (relative !== undefined) return invalid(`artifact ${JSON.stringify(relative)} is neither a ResultRef id nor an absolute host path`, 'Give ref ids (ref_…, from a run\'s envelope) or absolute paths, e.g. /home/me/project/src.');
  if (a.repo !== undefined && !path.isAbsolute(a.repo)) return invalid(`repo ${JSON.stringify(a.repo.slice(0, 200))} is not an absolute path`, 'Give the repository as /abs/path or /abs/path@REF (REF default HEAD).');
  if (a.toolGroups !== undefined && a.agent === undefined) return invalid('toolGroups is only for an agent child', 'Give agent with toolGroups, or leave toolGroups out.');
  const bad = (a.expectedOutputs ?? []).find((e) => e.startsWith('/') || e.split('/').includes('..') || e.includes('\0'));
  if (bad !== undefined) return invalid(`expected output ${JSON.stringify(bad)} must be a path relative to out/ without ..`, 'e.g. report.json or logs/run.txt');
  const kind = a.argv !== undefined ? { kind: 'command' as const, argv: a.argv } : a.script !== undefined ? { kind: 'script' as const, script: a.script } : { kind: 'agent' as const, agent: a.agent! };
  const { timeoutMs, maxSteps, ...rest } = a.limits ?? {};
  const jail = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
  return ok({
    task: a.task,
    ...kind,
    ...(a.model !== undefined ? { model: a.model } : {}),
    ...(a.objective !== undefined ? { objective: a.objective } : {}),
    ...(a.image !== undefined ? { image: a.image } : {}),
    ...(a.profile !== undefined ? { profile: a.profile } : {}),
    ...(a.caps !== undefined ? { caps: a.caps } : {}),
    ...(a.egress !== undefined && a.egress.length > 0 ? { egress: { rules: a.egress } } : {}),
    ...(Object.keys(jail).length > 0 ? { limits: jail } : {}),
    ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
    ...(maxSteps !== undefined ? { max_steps: maxSteps } : {}),
    ...(a.label !== undefined ? { label: a.label } : {}),
    ...(a.repo !== undefined ? { repo: a.repo } : {}),
    ...(a.domainKnowledge !== undefined ? { domain_knowledge: a.domainKnowledge } : {}),
    ...(a.toolGroups !== undefined ? { tool_groups: a.toolGroups } : {}),
    ...(a.parentSummary !== undefined ? { include_parent_history: 'summary' as const, parent_summary: a.parentSummary } : {}),
    artifact_refs: a.artifacts ?? [],
    expected_outputs: a.expectedOutputs ?? [],
    async: true,
  });
}
