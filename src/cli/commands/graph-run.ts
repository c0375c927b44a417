import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { openBrig } from '../connect.js';
import { BrigError } from '../../util/errors.js';
import { graphLines, operatorName, readSpec } from './graph-shared.js';

const command: Command = {
  name: 'graph run',
  summary: 'Run a graph: each node attempt an ordinary jailed run; prints its id and order at once, then (with --wait, or without a daemon) its end envelope.',
  usage: 'brig graph run FILE [--wait] [--json]',
  flags: [{ name: 'wait', description: 'wait for the end and print the envelope (always so without a daemon: the graph lives in this process)' }, JSON_FLAG],
  examples: ['brig graph run examples/graphs/fanout.yaml --wait'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const { text, source } = readSpec(p.positionals[0], command.usage);
    const brig = await openBrig(io, { needsJail: true });
    try {
      if (!brig.graphs) throw new BrigError('daemon_unavailable', 'this brig serves no graphs', { hint: 'Restart the daemon (`brig serve`) with this version.' });
      const started = await brig.graphs.run(text, { source, by: operatorName() });
      if (!started.ok) throw started.error;
      const s = started.value;
      const json = p.bools.has('json');
      if (!json) io.stdout.write(`${s.graphId}  order: ${s.order.join(' → ')}  (${s.nodes.length} nodes, ≤ ${s.parallel} at once)\n`);
      const wait = p.bools.has('wait') || brig.mode !== 'daemon';
      if (!wait) {
        if (json) writeJson(io, { graph: s });
        return 0;
      }
      if (brig.mode !== 'daemon' && !json) io.stderr.write('brig: no daemon: the graph runs in this process until it ends\n');
      const w = await brig.graphs.wait(s.graphId);
      if (!w.ok) throw w.error;
      if (json) writeJson(io, { graph: w.value });
      else io.stdout.write((w.value.envelope ?? graphLines(w.value)) + '\n');
      return w.value.state === 'completed' ? 0 : 1;
    } finally {
      await brig.close();
    }
  },
};
export default command;
