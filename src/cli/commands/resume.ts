import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, durationFlag, numberFlag, parseArgs, writeJson, type Command } from '../command.js';
import { openBrig } from '../connect.js';
import { exitForRuns } from '../exit-codes.js';
import { runBlock, runJsonOf } from '../run-view.js';

const command: Command = {
  name: 'resume',
  summary: 'Continue an ended run in a new one: a timed-out script from its checkpoint, a cut-short agent from its conversation.',
  usage: 'brig resume RUN [--timeout DURATION] [--max-steps N] [--async] [--json]',
  flags: [
    { name: 'timeout', value: 'DURATION', description: "the new run's timeout, 90s, 10m (a bare number: seconds; default: the old request's; narrowed by its lease like any spawn)" },
    { name: 'max-steps', value: 'N', description: "the new run's step budget (default: the old request's)" },
    { name: 'async', description: 'return once the new run is admitted (needs `brig serve`); `brig wait RUN` later' },
    JSON_FLAG,
  ],
  examples: ['brig resume r-0123456789abcdef', 'brig resume r-0123456789abcdef --timeout 10m --max-steps 50', 'brig resume r-0123456789abcdef --async --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    if (p.positionals.length !== 1) throw new BrigError('invalid_input', 'resume takes exactly one RUN');
    const brig = await openBrig(io, { needsJail: true });
    try {
      const timeout = durationFlag(p, 'timeout', 's');
      const steps = numberFlag(p, 'max-steps');
      const detach = p.bools.has('async');
      if (detach && brig.mode !== 'daemon') throw new BrigError('daemon_unavailable', '--async needs a running daemon: an in-process supervisor ends with this command', { hint: 'Start `brig serve` first, or resume without --async.' });
      const r = await brig.resume(p.positionals[0]!, { ...(timeout !== undefined ? { timeoutMs: Math.round(timeout * 1000) } : {}), ...(steps !== undefined ? { maxSteps: steps } : {}) });
      if (!r.ok) throw r.error;
      // Followed to its end like `spawn`, through the daemon too; --async returns at admission.
      const done = detach ? r : await brig.wait(r.value.id);
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
