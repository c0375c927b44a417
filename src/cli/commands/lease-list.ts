import { JSON_FLAG, QUIET_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { withBrig } from '../connect.js';

const command: Command = {
  name: 'lease list',
  summary: 'List lease records: id, run, parent, depth, profile, caps, state.',
  usage: 'brig lease list [-q] [--json]',
  flags: [QUIET_FLAG, JSON_FLAG],
  examples: ['brig lease list', 'brig lease list --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const { leases, unreadable } = await withBrig(io, (brig) => brig.operator.leases.list());
    if (p.bools.has('quiet')) {
      io.stdout.write(leases.map((l) => `${l.id}\n`).join(''));
      return 0;
    }
    if (p.bools.has('json')) {
      writeJson(io, { leases, unreadable });
      return 0;
    }
    // A damaged record is no lease (its run's calls are refused); say so rather than hide it.
    for (const id of unreadable) io.stderr.write(`warning: lease file ${id}.json is not a valid record: treated as no lease (its run's broker calls are refused)\n`);
    if (leases.length === 0) {
      io.stdout.write('no leases\n');
      return 0;
    }
    const rows = leases.map((r) => [r.id, r.runId, r.parentLeaseId ?? '-', String(r.depth), r.profile, r.state, r.caps.join(',') || '-']);
    const head = ['LEASE', 'RUN', 'PARENT', 'DEPTH', 'PROFILE', 'STATE', 'CAPS'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    for (const r of [head, ...rows]) io.stdout.write(r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd() + '\n');
    return 0;
  },
};
export default command;
