import { brigPaths, loadConfig } from '../../config/index.js';
import { LeaseStore } from '../../lease/index.js';
import { type EnvelopeRun, FsResultStore, type ResultRef, type RunEnvelope, buildRunEnvelope, loadEnvelope, renderExplain, rollUpSavings, type Savings } from '../../results/index.js';
import { ReadOnlyRuns } from '../../runs/index.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { needPositionals } from './ref-shared.js';
import { loadRunForEnvelope } from './result-shared.js';

const command: Command = {
  name: 'explain',
  summary: 'A run, its lease decisions, its ResultRefs and its estimated context savings.',
  usage: 'brig explain RUN [--json]',
  flags: [JSON_FLAG],
  examples: ['brig explain r-0123456789abcdef'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [runId] = needPositionals(p, 1, command.usage);
    const { run, refs } = await loadRunForEnvelope(io, runId!);
    const store = new FsResultStore({ dir: brigPaths(loadConfig(io.env).home).results });
    const env = await envelopeOf(store, run, refs);
    const leases = new LeaseStore({ dir: brigPaths(loadConfig(io.env).home).leases, ledger: { append: () => undefined } });
    const lease = run.leaseId ? leases.get(run.leaseId) : leases.byRunId(run.id);
    const leaseDecisions = lease
      ? [
          `lease ${lease.id} (profile ${lease.profile}, depth ${lease.depth})${lease.revoked ? ` revoked by ${lease.revoked.by}` : ''}`,
          `granted: ${lease.caps.join(', ') || 'nothing'}`,
          ...lease.refused.map((r) => `refused ${r.what}: ${r.code} (${r.reason})`),
        ]
      : [];
    const treeSavings = run.rootRunId === run.id ? await rolledUpTree(io, store, run.id) : undefined;
    const input = {
      run: {
        runId: run.id,
        rootRunId: run.rootRunId,
        ...(run.parentRunId ? { parentRunId: run.parentRunId } : {}),
        ...(run.label ? { label: run.label } : {}),
        status: run.status,
        ...(run.endReason ? { endReason: run.endReason + (run.killedBy ? ` (by ${run.killedBy})` : '') } : {}),
        ...(run.startedAt ? { startedAt: run.startedAt } : {}),
        ...(run.endedAt ? { endedAt: run.endedAt } : {}),
        ...(run.depth !== undefined ? { depth: run.depth } : {}),
      },
      leaseDecisions,
      refs,
      savings: env.savings,
      ...(treeSavings ? { treeSavings } : {}),
      condensationLevel: env.condensed.level,
    };
    if (p.bools.has('json')) {
      writeJson(io, { ...input, refs: refs.map(({ preview: _p, ...x }) => x) });
      return 0;
    }
    io.stdout.write(renderExplain(input));
    return 0;
  },
};
/**
 * Savings are measured against the envelope the coordinator got when it was kept; else against
 * a Level 1/3 cast made here (no model call, and not kept: explaining must not decide it).
 */
async function envelopeOf(store: FsResultStore, run: EnvelopeRun, refs: ResultRef[]): Promise<RunEnvelope> {
  return (await loadEnvelope(store, run.rootRunId, run.id)) ?? (await buildRunEnvelope(run, refs, { strategy: 'never' }));
}

/** A root's savings rolled up over every run of its tree (the root included). Undefined when it ran alone. */
async function rolledUpTree(io: Parameters<Command['run']>[1], store: FsResultStore, rootRunId: string): Promise<ReturnType<typeof rollUpSavings> | undefined> {
  const tree = await new ReadOnlyRuns(brigPaths(loadConfig(io.env).home).runs).list({ rootRunId });
  if (tree.length < 2) return undefined;
  const each: Savings[] = [];
  for (const r of tree) {
    const refs = await store.list(r.id).catch(() => []);
    each.push((await envelopeOf(store, r, refs)).savings);
  }
  return rollUpSavings(each);
}

export default command;
