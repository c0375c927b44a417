import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { openBrig } from '../connect.js';
import { runLine } from '../run-view.js';

const command: Command = {
  name: 'kill',
  summary: 'Kill a running child (ends `killed` by operator; its in-flight work is discarded).',
  usage: 'brig kill RUN --confirm [--json]',
  flags: [{ name: 'confirm', description: "required: killing discards the run's in-flight work" }, JSON_FLAG],
  examples: ['brig kill r-0123456789abcdef --confirm'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    if (p.positionals.length !== 1) throw new BrigError('invalid_input', 'kill takes exactly one RUN');
    if (!p.bools.has('confirm')) throw new BrigError('invalid_input', 'kill discards the run\'s work: pass --confirm', { hint: `brig kill ${p.positionals[0]} --confirm` });
    const brig = await openBrig(io);
    try {
      const r = await brig.kill(p.positionals[0]!, { confirm: true, by: 'operator' });
      if (!r.ok) throw r.error;
      if (p.bools.has('json')) writeJson(io, { run: r.value });
      else {
        io.stdout.write(runLine(r.value) + '\n');
        // Answered before the end: the engine did not answer, the kill is recorded and finishes once it is back.
        if (r.value.status !== 'ended') io.stderr.write(`brig: the engine does not answer: the kill is recorded; ${r.value.id} is stopped, collected and released once it is back (\`brig wait ${r.value.id}\`)\n`);
      }
      return 0;
    } finally {
      await brig.close();
    }
  },
};
export default command;
