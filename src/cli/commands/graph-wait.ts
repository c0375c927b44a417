import { JSON_FLAG, durationFlag, parseArgs, writeJson, type Command } from '../command.js';
import { graphLines, needGraph, withGraphs } from './graph-shared.js';

const command: Command = {
  name: 'graph wait',
  summary: 'Wait for a graph to end; print its envelope (≤ 4 KiB: a line per node, the manifest ref).',
  usage: 'brig graph wait GRAPH [--timeout DURATION] [--json]',
  flags: [{ name: 'timeout', value: 'DURATION', description: 'give up waiting after this long (the graph goes on); exit 1 if it has not ended (90s, 10m; a bare number: seconds)' }, JSON_FLAG],
  examples: ['brig graph wait g-mabc123def456789a', 'brig graph wait g-mabc123def456789a --timeout 60'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const id = needGraph(p, command.usage);
    const secs = durationFlag(p, 'timeout', 's');
    return withGraphs(io, async (g) => {
      const w = await g.wait(id, secs !== undefined ? { timeoutMs: secs * 1000 } : {});
      if (!w.ok) throw w.error;
      if (p.bools.has('json')) writeJson(io, { graph: w.value });
      else io.stdout.write(w.value.envelope ? w.value.envelope + '\n' : graphLines(w.value));
      return w.value.state === 'completed' ? 0 : 1;
    });
  },
};
export default command;
