import { RUN_STATUSES, type RunStatus } from '../../runs/index.js';
import { BrigError } from '../../util/errors.js';
import { flag, parseArgs, writeJson, type Command } from '../command.js';
import { connectSupervisor } from '../connect.js';
import { runLine } from '../run-view.js';

const command: Command = {
  name: 'list',
  summary: 'List runs: status, end reason, depth, steps, elapsed, parent.',
  usage: 'brig list [--status S]... [--root RUN] [--parent RUN] [--label L] [--json]',
  async run(args, io) {
    const p = parseArgs(args, { valued: ['status', 'root', 'parent', 'label'], booleans: ['json'] });
    const status = p.flags.get('status') ?? [];
    for (const s of status) if (!(RUN_STATUSES as readonly string[]).includes(s)) throw new BrigError('invalid_input', `unknown status ${s}`, { hint: `Known: ${RUN_STATUSES.join(', ')}` });
    const conn = await connectSupervisor(io);
    try {
      const runs = await conn.sup.list({
        ...(status.length ? { status: status as RunStatus[] } : {}),
        ...(flag(p, 'root') ? { rootRunId: flag(p, 'root')! } : {}),
        ...(flag(p, 'parent') ? { parentRunId: flag(p, 'parent')! } : {}),
        ...(flag(p, 'label') ? { label: flag(p, 'label')! } : {}),
      });
      if (p.bools.has('json')) writeJson(io, { runs });
      else for (const r of runs) io.stdout.write(runLine(r) + '\n');
      return 0;
    } finally {
      await conn.close();
    }
  },
};
export default command;
