import { z } from 'zod';
import { CapabilitySchema, EgressAskSchema, LimitsSchema } from '../lease/index.js';
import { RUN_KINDS, SPAWN_BOUNDS, TOOL_GROUP_RE, type SpawnRequest, type SpawnRequestInput } from '../protocol/index.js';

/**
 * The schema of the one spawn request for every face (library, HTTP body, broker `spawn`
 * params, CLI), declared against protocol/runs.ts' SpawnRequest.
 */

/**
 * One spawn request, for every face. snake_case because it is wire-visible (HTTP body,
 * broker params, library call all parse through this schema). Unknown keys are refused.
 */
export const SpawnRequestSchema = z
  .strictObject({
    task: z.string().min(1).max(SPAWN_BOUNDS.taskChars),
    /**
     * Kind `agent`: the agent spec it runs (`general` by default). Otherwise a name for the run.
     * A name, not text (letters, digits, `_ . -`): it is ledgered and on every event.
     */
    agent: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'a name of letters, digits and _ . - (at most 128), starting with a letter or digit')
      .default('default'),
    /** Kind `agent`: a model alias of the supervisor's configuration (default: the spec's, else the default model). */
    model: z.string().min(1).max(128).optional(),
    kind: z.enum(RUN_KINDS).default('script'),
    /** Script source (an ES module exporting `default async function (brig)`); kind `script`. */
    script: z.string().max(SPAWN_BOUNDS.scriptBytes).optional(),
    /** argv run directly in the jail (never a shell string); kind `command`. */
    argv: z.array(z.string()).min(1).max(SPAWN_BOUNDS.argvItems).optional(),
    image: z.string().min(1).optional(),
    caps: z.array(CapabilitySchema).optional(),
    /** Narrowing of the jail's size; the lease clamps it to the parent's (never widens). */
    limits: LimitsSchema.pick({ cpu: true, memoryMb: true, pids: true, diskMb: true, tokens: true, costUsd: true }).partial().strict().optional(),
    /** Egress rules asked for (policy rule ids or narrowed rules): egress is never inherited. */
    egress: EgressAskSchema.optional(),
    profile: z.string().min(1).optional(),
    objective: z.string().max(4096).optional(),
    /** ResultRef ids (REF_ID_RE) or, for an operator, host paths: handed to the child read-only. */
    artifact_refs: z.array(z.string().min(1).max(4096)).max(64).default([]),
    /** One fact an entry; together at most domainKnowledgeChars characters. */
    domain_knowledge: z
      .array(z.string().min(1))
      .max(SPAWN_BOUNDS.domainKnowledgeItems)
      .refine((l) => l.reduce((n, x) => n + x.length, 0) <= SPAWN_BOUNDS.domainKnowledgeChars, `at most ${SPAWN_BOUNDS.domainKnowledgeChars} characters in all`)
      .optional(),
    /** Names of the policy's groups: checked against the policy in force at intake. */
    tool_groups: z.array(z.string().regex(TOOL_GROUP_RE, 'a group name of the policy (lowercase letters, digits, _ -)')).min(1).max(32).optional(),
    include_parent_history: z.enum(['none', 'summary']).default('none'),
    /** Only with include_parent_history `summary`; bounded by parentSummaryMaxTokens (chars / 4). */
    parent_summary: z.string().max(SPAWN_BOUNDS.parentSummaryMaxTokens * 4).optional(),
    /** Paths under /workspace/out that must exist afterwards (relative, no `..`). */
    expected_outputs: z
      .array(z.string().min(1).max(1024).refine((p) => !p.split('/').includes('..') && !p.includes('\0'), 'an expected output is a path under /workspace/out without `..`'))
      .default([]),
    /** A host repository `PATH[@REF]` (intake resolves it), or from a jailed spawner `inherit`. */
    repo: z.string().min(1).max(4096).refine((r) => !r.includes('\0'), 'a path without NUL').optional(),
    /** Its bounds (SPAWN_BOUNDS.maxStepsFloor … defaultMaxSteps) depend on the settings: intake checks them. */
    max_steps: z.number().int().positive().optional(),
    /** Run timeout in ms (clamped by maxRunTimeoutMs and the lease). */
    timeout: z.number().int().positive().optional(),
    label: z.string().max(SPAWN_BOUNDS.labelChars).optional(),
    async: z.boolean().default(false),
  })
  .superRefine((r, ctx) => {
    if (r.kind === 'script' && r.script === undefined)
      ctx.addIssue({ code: 'custom', path: ['script'], message: 'kind `script` needs `script`' });
    if (r.kind === 'command' && r.argv === undefined)
      ctx.addIssue({ code: 'custom', path: ['argv'], message: 'kind `command` needs `argv`' });
    if (r.kind === 'agent' && (r.script !== undefined || r.argv !== undefined))
      ctx.addIssue({ code: 'custom', path: ['kind'], message: 'kind `agent` runs an agent spec (`agent`), not a script or argv' });
    if (r.model !== undefined && r.kind !== 'agent') ctx.addIssue({ code: 'custom', path: ['model'], message: 'only kind `agent` takes a model' });
    if (r.tool_groups !== undefined && r.kind !== 'agent') ctx.addIssue({ code: 'custom', path: ['tool_groups'], message: 'only kind `agent` takes tool groups' });
    if (r.parent_summary !== undefined && r.include_parent_history !== 'summary')
      ctx.addIssue({ code: 'custom', path: ['parent_summary'], message: 'needs include_parent_history `summary`' });
  }) satisfies z.ZodType<SpawnRequest, SpawnRequestInput>;
