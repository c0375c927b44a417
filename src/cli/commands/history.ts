import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, flag, parseArgs, writeJson, type Command } from '../command.js';
import { openBrig } from '../connect.js';

const command: Command = {
  name: 'history',
  summary: "A bounded page of a run's transcript: what its model was sent and answered (on explicit request only).",
  usage: 'brig history RUN [--offset N] [--limit N] [--json]',
  flags: [
    { name: 'offset', value: 'N', description: 'the first entry to show (default 0)' },
    { name: 'limit', value: 'N', description: 'how many entries, at most 50 (default 20)' },
    JSON_FLAG,
  ],
  examples: ['brig history r-0123456789abcdef --limit 5', 'brig history r-0123456789abcdef --offset 20 --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [id] = p.positionals;
    if (!id) throw new BrigError('invalid_input', 'history takes a RUN');
    const off = flag(p, 'offset');
    const lim = flag(p, 'limit');
    const brig = await openBrig(io);
    try {
      const r = await brig.history(id, { ...(off !== undefined ? { offset: Number(off) } : {}), ...(lim !== undefined ? { limit: Number(lim) } : {}) });
      if (!r.ok) throw r.error;
      const h = r.value;
      if (p.bools.has('json')) writeJson(io, { history: h });
      else {
        for (const [i, e] of h.entries.entries()) io.stdout.write(`#${h.offset + i} ${JSON.stringify(e)}\n`);
        io.stdout.write(`(${h.entries.length} of ${h.total}${h.more ? `; ${h.more} more: --offset ${h.offset + h.entries.length}` : ''})\n`);
      }
      return 0;
    } finally {
      await brig.close();
    }
  },
};
export default command;
