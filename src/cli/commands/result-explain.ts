import { openOperator, renderExplain, type Brig, type LeaseView, type RunRecord, type Savings } from '../../index.js';
import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, writeJson, type CliIO, type Command } from '../command.js';
import { needPositionals, withBrig } from './ref-shared.js';

const command: Command = {
  name: 'explain',
  summary: 'A run, its lease decisions, its ResultRefs and its estimated context savings.',
  usage: 'brig explain RUN [--json]',
  flags: [JSON_FLAG],
  examples: ['brig explain r-0123456789abcdef'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [runId] = needPositionals(p, 1, command.usage);
    const input = await withBrig(io, async (brig) => {
      const run = await brig.get(runId!);
      if (!run) throw new BrigError('run_not_found', `no run ${runId}`);
      // Savings against the envelope the coordinator got when it was kept; else a Level 1/3
      // look made now (no model call, not kept: explaining must not decide it). RefService.peek.
      const env = await brig.refs.peek(run.id);
      if (!env.ok) throw env.error;
      const lease = leaseOf(io, run);
      const leaseDecisions = lease
        ? [
            `lease ${lease.id} (profile ${lease.profile}, depth ${lease.depth})${lease.revoked ? ` revoked by ${lease.revoked.by}` : ''}`,
            `granted: ${lease.caps.join(', ') || 'nothing'}`,
            ...lease.refused.map((r) => `refused ${r.what}: ${r.code} (${r.reason})`),
          ]
        : [];
      const treeSavings = run.rootRunId === run.id ? await rolledUpTree(brig, run.id) : undefined;
      return {
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
        refs: env.value.refs,
        savings: env.value.savings,
        ...(treeSavings ? { treeSavings } : {}),
        condensationLevel: env.value.condensed.level,
      };
    });
    if (p.bools.has('json')) {
      writeJson(io, { ...input, refs: input.refs.map(({ preview: _p, ...x }) => x) });
      return 0;
    }
    io.stdout.write(renderExplain(input));
    return 0;
  },
};

/** The run's lease: the one its record names, else (an older record) the one issued for it. */
function leaseOf(io: CliIO, run: RunRecord): LeaseView | undefined {
  const leases = openOperator({ env: io.env }).leases;
  if (run.leaseId) {
    const shown = leases.show(run.leaseId);
    return shown.ok ? shown.value.lease : undefined;
  }
  return leases.list().leases.find((l) => l.runId === run.id);
}

/** A root's savings rolled up over every run of its tree (the root included). Undefined when it ran alone. */
async function rolledUpTree(brig: Brig, rootRunId: string): Promise<ReturnType<Brig['refs']['rollUp']> | undefined> {
  const tree = await brig.list({ rootRunId });
  if (tree.length < 2) return undefined;
  const each: Savings[] = [];
  for (const r of tree) {
    const env = await brig.refs.peek(r.id);
    if (env.ok) each.push(env.value.savings);
  }
  return brig.refs.rollUp(each);
}

export default command;
