import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { openBrig } from '../connect.js';

const command: Command = {
  name: 'steer',
  summary: 'Send a steering message to a running child (inject at its next step, or kill + respawn).',
  usage: 'brig steer RUN MESSAGE [--json]',
  flags: [JSON_FLAG],
  examples: ["brig steer r-0123456789abcdef 'skip the slow part'"],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [id, ...words] = p.positionals;
    if (!id || words.length === 0) throw new BrigError('invalid_input', 'steer takes a RUN and a MESSAGE');
    const brig = await openBrig(io);
    try {
      const r = await brig.steer(id, words.join(' '));
      if (!r.ok) throw r.error;
      if (p.bools.has('json')) writeJson(io, { steer: r.value });
      else io.stdout.write(r.value.mode === 'inject' ? `steered ${id} (delivered at its next step)\n` : `steered ${id}: killed and respawned as ${r.value.newRunId}\n`);
      return 0;
    } finally {
      await brig.close();
    }
  },
};
export default command;
