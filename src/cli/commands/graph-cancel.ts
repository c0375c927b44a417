import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { graphLines, needGraph, withGraphs } from './graph-shared.js';

const command: Command = {
  name: 'graph cancel',
  summary: "Cancel a running graph: its running nodes are killed (by operator), the rest end skipped.",
  usage: 'brig graph cancel GRAPH --confirm [--json]',
  flags: [{ name: 'confirm', description: "required: cancelling discards the running nodes' in-flight work" }, JSON_FLAG],
  examples: ['brig graph cancel g-mabc123def456789a --confirm'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const id = needGraph(p, command.usage);
    if (!p.bools.has('confirm')) throw new BrigError('invalid_input', "cancel discards the running nodes' work: pass --confirm", { hint: `brig graph cancel ${id} --confirm` });
    return withGraphs(io, async (g) => {
      const c = await g.cancel(id, { confirm: true });
      if (!c.ok) throw c.error;
      if (p.bools.has('json')) writeJson(io, { graph: c.value });
      else io.stdout.write(graphLines(c.value));
      return 0;
    });
  },
};
export default command;
