import { BrigError } from '../../util/errors.js';
import { replaySummary } from '../../light.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { openBrig } from '../connect.js';
import { runJsonOf } from '../run-view.js';

const command: Command = {
  name: 'replay',
  summary: 'Re-run an ended agent run against its recorded model replies in a fresh jail; say where it diverges.',
  usage: 'brig replay RUN [--json]',
  flags: [JSON_FLAG],
  examples: ['brig replay r-0123456789abcdef', 'brig replay r-0123456789abcdef --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    if (p.positionals.length !== 1) throw new BrigError('invalid_input', 'replay takes exactly one RUN');
    const brig = await openBrig(io, { needsJail: true });
    try {
      const r = await brig.replay(p.positionals[0]!);
      if (!r.ok) throw r.error;
      // A replay is short and its answer is the divergence: wait for it whatever serves it.
      const done = await brig.wait(r.value.id);
      if (!done.ok) throw done.error;
      if (p.bools.has('json')) writeJson(io, { ...(await runJsonOf(brig, done.value)), replayOf: done.value.replayOf ?? null, replay: done.value.replay ?? null, summary: replaySummary(done.value) });
      else io.stdout.write(`${replaySummary(done.value)}\n`);
      // 0: replayed with no divergence; 1: it diverged (what a debugging session looks for).
      return done.value.replay?.divergence ? 1 : 0;
    } finally {
      await brig.close();
    }
  },
};
export default command;
