import { BrigError } from '../../util/errors.js';
import { flag, parseArgs, writeJson, type Command } from '../command.js';
import { connectSupervisor } from '../connect.js';

const command: Command = {
  name: 'events',
  summary: "Follow the daemon's content-free event stream (spawned, progress, completed, failed, lifecycle_ended).",
  usage: 'brig events [--run RUN] [--root RUN] [--json]',
  async run(args, io) {
    const p = parseArgs(args, { valued: ['run', 'root'], booleans: ['json'] });
    const conn = await connectSupervisor(io);
    try {
      if (conn.mode !== 'daemon') throw new BrigError('daemon_unavailable', 'events come from a running daemon', { hint: 'Start `brig serve`.' });
      for await (const ev of conn.sup.events({ ...(flag(p, 'run') ? { runId: flag(p, 'run')! } : {}), ...(flag(p, 'root') ? { rootRunId: flag(p, 'root')! } : {}) })) {
        if (p.bools.has('json')) writeJson(io, ev);
        else {
          const extra = 'endReason' in ev ? ` ${ev.endReason}` : ev.type === 'progress' ? ` ${ev.progress.progressLine} ${ev.progress.elapsedMs}ms` : '';
          io.stdout.write(`${ev.timestamp} ${ev.type.padEnd(15)} ${ev.runId} d${ev.depth}${extra}\n`);
        }
      }
      return 0;
    } finally {
      await conn.close();
    }
  },
};
export default command;
