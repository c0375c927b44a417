import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, numberFlag, parseArgs, writeJson, type Command } from '../command.js';
import { openBrig } from '../connect.js';
import { exitForRuns } from '../exit-codes.js';
import { runBlock, runJsonOf } from '../run-view.js';

const command: Command = {
  name: 'resume',
  summary: 'Continue an ended run in a new one: a timed-out script from its checkpoint, a cut-short agent from its conversation.',
  usage: 'brig resume RUN [--timeout SECONDS] [--max-steps N] [--json]',
  flags: [
    { name: 'timeout', value: 'SECONDS', description: "the new run's timeout (default: the old request's; narrowed by its lease like any spawn)" },
    { name: 'max-steps', value: 'N', description: "the new run's step budget (default: the old request's)" },
    JSON_FLAG,
  ],
  examples: ['brig resume r-0123456789abcdef', 'brig resume r-0123456789abcdef --timeout 600 --max-steps 50'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    if (p.positionals.length !== 1) throw new BrigError('invalid_input', 'resume takes exactly one RUN');
    const brig = await openBrig(io, { needsJail: true });
    try {
      const timeout = numberFlag(p, 'timeout');
      const steps = numberFlag(p, 'max-steps');
      const r = await brig.resume(p.positionals[0]!, { ...(timeout !== undefined ? { timeoutMs: Math.round(timeout * 1000) } : {}), ...(steps !== undefined ? { maxSteps: steps } : {}) });
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
