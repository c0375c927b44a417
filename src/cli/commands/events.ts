import type { SupervisorEvent } from '../../index.js';
import { BrigError, isBrigError } from '../../util/errors.js';
import { JSON_FLAG, flag, parseArgs, writeJson, type CliIO, type Command, type ParsedArgs } from '../command.js';
import { openBrig } from '../connect.js';

function print(io: CliIO, p: ParsedArgs, ev: SupervisorEvent): void {
  if (p.bools.has('json')) return writeJson(io, ev);
  const extra = 'endReason' in ev ? ` ${ev.endReason}` : ev.type === 'progress' ? ` ${ev.progress.progressLine} ${ev.progress.elapsedMs}ms` : '';
  io.stdout.write(`${ev.timestamp} ${ev.type.padEnd(15)} ${ev.runId} d${ev.depth}${extra}\n`);
}

const command: Command = {
  name: 'events',
  summary: "Follow the daemon's content-free event stream (spawned, progress, completed, failed, lifecycle_ended).",
  usage: 'brig events [FLAGS]',
  flags: [
    { name: 'run', value: 'RUN', description: "only this run's events" },
    { name: 'root', value: 'RUN', description: 'only the events of the tree under this root run' },
    JSON_FLAG,
  ],
  examples: ['brig events', 'brig events --root r-0123456789abcdef --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const brig = await openBrig(io);
    try {
      if (brig.mode !== 'daemon') throw new BrigError('daemon_unavailable', 'events come from a running daemon', { hint: 'Start `brig serve`.' });
      try {
        // A reader that went away (`brig events | head -1`) ends the stream like Ctrl-C would.
        const filter = { ...(flag(p, 'run') ? { runId: flag(p, 'run')! } : {}), ...(flag(p, 'root') ? { rootRunId: flag(p, 'root')! } : {}) };
        for await (const ev of brig.events({ ...filter, ...(io.hangup ? { signal: io.hangup } : {}) })) print(io, p, ev);
      } catch (e) {
        // The stream ends only when the daemon does (the client says so): say what to do next.
        if (!isBrigError(e, 'daemon_unavailable')) throw e;
        throw new BrigError('daemon_unavailable', e.message, { hint: 'Start `brig serve` again and rerun `brig events`.', data: { ...e.data }, cause: e });
      }
      return 0;
    } finally {
      await brig.close();
    }
  },
};
export default command;
