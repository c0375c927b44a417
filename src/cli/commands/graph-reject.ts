import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { BrigError } from '../../util/errors.js';
import { graphLines, operatorName, withGraphs } from './graph-shared.js';

const command: Command = {
  name: 'graph reject',
  summary: "Reject a waiting gate of a running graph (an operator decision, ledgered with who, when and the note's hash).",
  usage: 'brig graph reject GRAPH NODE [--note TEXT] [--json]',
  flags: [{ name: 'note', value: 'TEXT', description: 'why (≤ 4096 characters; only its hash is kept)' }, JSON_FLAG],
  examples: ['brig graph reject g-mabc123def456789a go --note "checked the panel"'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    if (p.positionals.length !== 2) throw new BrigError('invalid_input', 'reject takes GRAPH and NODE', { hint: `Usage: ${command.usage}` });
    const [graph, node] = p.positionals as [string, string];
    const note = p.flags.get('note')?.[0];
    return withGraphs(io, async (g) => {
      const r = await g.decide(graph, node, { decision: 'reject', by: operatorName(), ...(note !== undefined ? { note } : {}) });
      if (!r.ok) throw r.error;
      if (p.bools.has('json')) writeJson(io, { graph: r.value });
      else io.stdout.write(graphLines(r.value));
      return 0;
    });
  },
};
export default command;
