import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { graphLines, withGraphs } from './graph-shared.js';

const command: Command = {
  name: 'graph status',
  summary: 'A graph: each node, its state, attempts and run; once ended its envelope. Without GRAPH: every graph on record.',
  usage: 'brig graph status [GRAPH] [--json]',
  flags: [JSON_FLAG],
  examples: ['brig graph status', 'brig graph status g-mabc123def456789a'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const id = p.positionals[0];
    return withGraphs(io, async (g) => {
      if (id === undefined) {
        const all = await g.list();
        if (p.bools.has('json')) writeJson(io, { graphs: all });
        else for (const r of all) io.stdout.write(`${r.id}  ${r.state.padEnd(9)}  ${r.nodes.length} nodes  ${r.createdAt}  ${r.label ?? ''}`.trimEnd() + '\n');
        return 0;
      }
      const s = await g.status(id);
      if (!s.ok) throw s.error;
      if (p.bools.has('json')) writeJson(io, { graph: s.value });
      else io.stdout.write(s.value.envelope ? s.value.envelope + '\n' : graphLines(s.value));
      return 0;
    });
  },
};
export default command;
