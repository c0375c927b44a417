/**
 * `explain` for every face (the CLI's `brig explain`, the MCP `explain` tool): a run, its lease
 * decisions, its ResultRefs and its savings from RefService.peek — the kept envelope, or a
 * Level 1/3 look made now (explaining never decides an envelope) — and for a root run the
 * savings rolled up over its tree. renderExplain (results/) writes the text.
 */
import type { Brig, LeaseView, ResultRef, RunRecord, Savings } from '../protocol/index.js';
import { rollUpSavings, type ExplainInput } from '../results/index.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';

/** The run's lease: the one its record names, else (an older record) the one issued for it. */
async function leaseOf(leases: Brig['operator']['leases'], run: RunRecord): Promise<LeaseView | undefined> {
  if (run.leaseId) {
    const shown = await leases.show(run.leaseId);
    return shown.ok ? shown.value.lease : undefined;
  }
  return (await leases.list()).leases.find((l) => l.runId === run.id);
}

export function leaseDecisions(lease: LeaseView | undefined): string[] {
  if (!lease) return [];
  return [
    `lease ${lease.id} (profile ${lease.profile}, depth ${lease.depth})${lease.revoked ? ` revoked by ${lease.revoked.by}` : ''}`,
    `granted: ${lease.caps.join(', ') || 'nothing'}`,
    ...lease.refused.map((r) => `refused ${r.what}: ${r.code} (${r.reason})`),
    ...(lease.egress?.rules ?? []).map((r) => `egress rule ${r.id}: ${r.hosts.join(', ')} port ${r.ports.join(', ')} ${r.scheme}${r.scheme === 'https' ? ` ${r.tls}` : ''}${r.methods ? ` ${r.methods.join('|')}` : ''}${r.paths ? ` ${r.paths.join(' ')}` : ''}`),
  ];
}

/** The run's egress from the ledger, content-free: connections and bytes by rule, refusals by reason. Empty when it had none. */
export async function egressLines(audit: Brig['operator']['audit'], runId: string): Promise<string[]> {
  if (!/^[A-Za-z0-9_-]{1,80}$/.test(runId)) return [];
  const q = await audit.query(`SELECT type, CAST(reason AS VARCHAR), CAST("ruleId" AS VARCHAR), CAST("bytesUp" AS BIGINT), CAST("bytesDown" AS BIGINT), CAST("addrClass" AS VARCHAR) FROM ledger WHERE "runId" = '${runId}' AND type IN ('egress.conn', 'egress.deny')`, 10_000).catch(() => undefined);
  if (!q?.ok || q.value.rows.length === 0) return [];
  const byRule = new Map<string, number>();
  const byReason = new Map<string, number>();
  let up = 0;
  let down = 0;
  let testPublic = 0;
  for (const [type, reason, rule, u, d, cls] of q.value.rows as [string, string | null, string | null, number | bigint | null, number | bigint | null, string | null][]) {
    if (cls === 'test_public') testPublic++;
    if (type === 'egress.conn') {
      byRule.set(rule ?? '?', (byRule.get(rule ?? '?') ?? 0) + 1);
      up += Number(u ?? 0);
      down += Number(d ?? 0);
    } else byReason.set(reason ?? '?', (byReason.get(reason ?? '?') ?? 0) + 1);
  }
  const conns = [...byRule.values()].reduce((a, b) => a + b, 0);
  const refused = [...byReason.values()].reduce((a, b) => a + b, 0);
  const list = (m: Map<string, number>) => [...m].map(([k, n]) => `${k} ${n}`).join(', ');
  return [
    `egress: ${conns} connection(s)${conns ? ` (${list(byRule)}; ${up} B up, ${down} B down)` : ''}, ${refused} refused${refused ? ` (${list(byReason)})` : ''}`,
    // An operator must see when the test-only setting made a loopback address count as public.
    ...(testPublic > 0 ? [`egress: ${testPublic} to loopback addresses egress.testPublicCidrs treats as public (a test-only setting)`] : []),
  ];
}

/** A root's savings rolled up over every run of its tree (the root included); undefined when it ran alone. */
async function treeSavings(brig: Brig, rootRunId: string): Promise<ReturnType<typeof rollUpSavings> | undefined> {
  const tree = await brig.list({ rootRunId });
  if (tree.length < 2) return undefined;
  const each: Savings[] = [];
  for (const r of tree) {
    const env = await brig.refs.peek(r.id);
    if (env.ok) each.push(env.value.savings);
  }
  return rollUpSavings(each);
}

/** What renderExplain takes, with every part present (the faces shape it further). */
export interface Explanation extends ExplainInput {
  leaseDecisions: string[];
  refs: ResultRef[];
  savings: Savings;
  condensationLevel: number;
}

export async function explainRun(brig: Brig, runId: string): Promise<Result<{ run: RunRecord; input: Explanation }>> {
  const run = await brig.get(runId);
  if (!run) return err(new BrigError('run_not_found', `no run ${runId}`));
  const env = await brig.refs.peek(run.id);
  if (!env.ok) return env;
  const tree = run.rootRunId === run.id ? await treeSavings(brig, run.id) : undefined;
  return ok({
    run,
    input: {
      run: {
        runId: run.id,
        rootRunId: run.rootRunId,
        ...(run.parentRunId ? { parentRunId: run.parentRunId } : {}),
        ...(run.label ? { label: run.label } : {}),
        status: run.status,
        ...(run.endReason ? { endReason: run.endReason + (run.killedBy ? ` (by ${run.killedBy})` : '') } : {}),
        ...(run.startedAt ? { startedAt: run.startedAt } : {}),
        ...(run.endedAt ? { endedAt: run.endedAt } : {}),
        depth: run.depth,
      },
      leaseDecisions: [...leaseDecisions(await leaseOf(brig.operator.leases, run).catch(() => undefined)), ...(await egressLines(brig.operator.audit, run.id))],
      refs: env.value.refs,
      savings: env.value.savings,
      ...(tree ? { treeSavings: tree } : {}),
      condensationLevel: env.value.condensed.level,
    },
  });
}
