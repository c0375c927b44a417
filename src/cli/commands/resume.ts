import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { openBrig } from '../connect.js';
import { exitForRuns } from '../exit-codes.js';
import { runBlock, runJsonOf } from '../run-view.js';

const command: Command = {
  name: 'resume',
  summary: 'Re-spawn a timed-out resumable script run from its pinned bytes and last checkpoint.',
  usage: 'brig resume RUN [--json]',
  flags: [JSON_FLAG],
  examples: ['brig resume r-0123456789abcdef'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    if (p.positionals.length !== 1) throw new BrigError('invalid_input', 'resume takes exactly one RUN');
    const brig = await openBrig(io, { needsJail: true });
    try {
      const r = await brig.resume(p.positionals[0]!);
      if (!r.ok) throw r.error;
      // The daemon keeps the new run going; an in-process supervisor waits for it.
      const done = brig.mode === 'local' ? await brig.wait(r.value.id) : r;
      if (!done.ok) throw done.error;
      if (p.bools.has('json')) writeJson(io, await runJsonOf(brig, done.value));
      else io.stdout.write(done.value.status === 'ended' ? runBlock(done.value) : `run ${done.value.id} ${done.value.status} (resumes ${p.positionals[0]})\n`);
      return exitForRuns([done.value], { notEnded: 'ok' });
    } finally {
      await brig.close();
    }
  },
};
export default command;
