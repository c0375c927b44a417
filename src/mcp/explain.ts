/**
 * `explain` as an MCP tool: the library's explainRun (the same one `brig explain` uses), its
 * run and decisions shaped as the tool's structured content.
 */
import { z } from 'zod';
import { EXPLAIN_REFS, explainRun as explainLibrary, type ExplainInput } from '../index.js';
import { ok, type Result } from '../util/errors.js';
import type { ToolContext } from './tool-def.js';
import { RefSummarySchema, SavingsSchema, refSummary } from './views.js';

export const ExplainSchema = z.object({
  run: z.object({
    runId: z.string(),
    rootRunId: z.string(),
    parentRunId: z.string().nullable(),
    label: z.string().nullable(),
    status: z.string(),
    endReason: z.string().nullable(),
    killedBy: z.string().nullable(),
    startedAt: z.string().nullable(),
    endedAt: z.string().nullable(),
    depth: z.number(),
  }),
  leaseDecisions: z.array(z.string()).describe('the lease, what it granted, and each refusal with its code'),
  refs: z.array(RefSummarySchema).describe(`the first ${EXPLAIN_REFS} refs (ref_list pages through all)`),
  refsTotal: z.number().optional().describe('refs the run has, when more than listed'),
  savings: SavingsSchema,
  treeSavings: SavingsSchema.extend({ runs: z.number() }).optional(),
  condensationLevel: z.number(),
});
export type Explained = z.infer<typeof ExplainSchema>;

export async function explainRun(ctx: Pick<ToolContext, 'brig'>, runId: string): Promise<Result<{ structured: Explained; input: ExplainInput }>> {
  const x = await explainLibrary(ctx.brig, runId);
  if (!x.ok) return x;
  const { run, input } = x.value;
  const structured: Explained = {
    run: {
      runId: run.id,
      rootRunId: run.rootRunId,
      parentRunId: run.parentRunId,
      label: run.label,
      status: run.status,
      endReason: run.endReason,
      killedBy: run.killedBy,
      startedAt: run.startedAt,
      endedAt: run.endedAt,
      depth: run.depth,
    },
    leaseDecisions: input.leaseDecisions,
    refs: input.refs.slice(0, EXPLAIN_REFS).map(refSummary),
    ...(input.refs.length > EXPLAIN_REFS ? { refsTotal: input.refs.length } : {}),
    savings: input.savings,
    ...(input.treeSavings ? { treeSavings: input.treeSavings } : {}),
    condensationLevel: input.condensationLevel,
  };
  return ok({ structured, input });
}
