import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { readSpec } from './graph-shared.js';

const command: Command = {
  name: 'graph define',
  summary: 'Check a graph spec (YAML or JSON) without running it: its topological order and nodes, or every refusal with its line.',
  usage: 'brig graph define FILE [--json]',
  flags: [JSON_FLAG],
  examples: ['brig graph define examples/graphs/fanout.yaml'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const { text, source } = readSpec(p.positionals[0], command.usage);
    // Define time is pure: the home's bounds (maxSpawnDepth, the default run timeout) are the supervisor's defaults.
    const { defineGraphText } = await import('../../index.js');
    const d = defineGraphText(text, { source });
    if (!d.ok) throw d.error;
    if (p.bools.has('json')) {
      writeJson(io, { definition: d.value });
      return 0;
    }
    io.stdout.write(`order: ${d.value.order.join(' → ')}\n`);
    const w = Math.max(4, ...d.value.nodes.map((n) => n.id.length));
    for (const n of d.value.nodes) io.stdout.write(`${n.id.padEnd(w)}  ${n.kind.padEnd(7)}  depth ${n.depth}  ${n.depends_on.length ? `after ${n.depends_on.join(', ')}` : ''}`.trimEnd() + '\n');
    io.stdout.write(`sinks: ${d.value.sinks.join(', ')} · critical path ≤ ${d.value.criticalPathMs} ms\n`);
    return 0;
  },
};
export default command;
