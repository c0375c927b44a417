import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { needGraph, withGraphs } from './graph-shared.js';

const command: Command = {
  name: 'graph explain',
  summary: 'A graph for an operator: per node its attempts and end reasons, why it was skipped (which when failed), why it waited (dependencies, a slot, a gate), its retries and the lease each attempt got.',
  usage: 'brig graph explain GRAPH [--json]',
  flags: [JSON_FLAG],
  examples: ['brig graph explain g-mabc123def456789a', 'brig graph explain g-mabc123def456789a --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const id = needGraph(p, command.usage);
    return withGraphs(io, async (g) => {
      const x = await g.explain(id);
      if (!x.ok) throw x.error;
      if (p.bools.has('json')) writeJson(io, { explanation: x.value });
      else {
        const { renderGraphExplain } = await import('../../index.js');
        io.stdout.write(renderGraphExplain(x.value));
      }
      return 0;
    });
  },
};
export default command;
