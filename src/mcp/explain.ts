/**
 * `explain`: what `brig explain RUN` shows, from the same library calls — the run, its lease
 * decisions (the operator's lease view), its ResultRefs and its savings from RefService.peek
 * (the kept envelope, or a Level 1/3 look made now: explaining never decides an envelope),
 * and for a root run the savings rolled up over its tree. renderExplain writes the text.
 */
import { z } from 'zod';
import type { Brig, ExplainInput, LeaseView, RunRecord, Savings } from '../index.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';
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
  refs: z.array(RefSummarySchema),
  savings: SavingsSchema,
  treeSavings: SavingsSchema.extend({ runs: z.number() }).optional(),
  condensationLevel: z.number(),
});
export type Explained = z.infer<typeof ExplainSchema>;

function leaseOf(leases: ToolContext['leases'], run: RunRecord): LeaseView | undefined {
  if (!leases) return undefined;
  if (run.leaseId) {
    const shown = leases.show(run.leaseId);
    return shown.ok ? shown.value.lease : undefined;
  }
  return leases.list().leases.find((l) => l.runId === run.id);
}

export function leaseDecisions(lease: LeaseView | undefined): string[] {
  if (!lease) return [];
  return [
    `lease ${lease.id} (profile ${lease.profile}, depth ${lease.depth})${lease.revoked ? ` revoked by ${lease.revoked.by}` : ''}`,
    `granted: ${lease.caps.join(', ') || 'nothing'}`,
    ...lease.refused.map((r) => `refused ${r.what}: ${r.code} (${r.reason})`),
  ];
}

/** A root's savings over every run of its tree; undefined when it ran alone. */
async function treeSavings(brig: Brig, rootRunId: string): Promise<(Savings & { runs: number }) | undefined> {
  const tree = await brig.list({ rootRunId });
  if (tree.length < 2) return undefined;
  const each: Savings[] = [];
  for (const r of tree) {
    const env = await brig.refs.peek(r.id);
    if (env.ok) each.push(env.value.savings);
  }
  return brig.refs.rollUp(each);
}

export async function explainRun(ctx: Pick<ToolContext, 'brig' | 'leases'>, runId: string): Promise<Result<{ structured: Explained; input: ExplainInput }>> {
  const { brig } = ctx;
  const run = await brig.get(runId);
  if (!run) return err(new BrigError('run_not_found', `no run ${runId}`));
  const env = await brig.refs.peek(run.id);
  if (!env.ok) return env;
  const decisions = leaseDecisions(leaseOf(ctx.leases, run));
  const tree = run.rootRunId === run.id ? await treeSavings(brig, run.id) : undefined;
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
    leaseDecisions: decisions,
    refs: env.value.refs.map(refSummary),
    savings: env.value.savings,
    ...(tree ? { treeSavings: tree } : {}),
    condensationLevel: env.value.condensed.level,
  };
  const r = structured.run;
  const input: ExplainInput = {
    run: {
      runId: r.runId,
      rootRunId: r.rootRunId,
      ...(r.parentRunId ? { parentRunId: r.parentRunId } : {}),
      ...(r.label ? { label: r.label } : {}),
      status: r.status,
      ...(r.endReason ? { endReason: r.endReason + (r.killedBy ? ` (by ${r.killedBy})` : '') } : {}),
      ...(r.startedAt ? { startedAt: r.startedAt } : {}),
      ...(r.endedAt ? { endedAt: r.endedAt } : {}),
      depth: r.depth,
    },
    leaseDecisions: decisions,
    refs: env.value.refs,
    savings: env.value.savings,
    ...(tree ? { treeSavings: tree } : {}),
    condensationLevel: env.value.condensed.level,
  };
  return ok({ structured, input });
}
