import { JSON_FLAG, parseArgs, type Command } from '../command.js';
import { needPositionals, printSlice, withBrig } from './ref-shared.js';

const command: Command = {
  name: 'ref jq',
  summary: 'Run a jq filter over a json/jsonl ref (Debian jq, empty environment, timeout, output cap).',
  usage: "brig ref jq REF 'FILTER' [--json]",
  flags: [JSON_FLAG],
  examples: ["brig ref jq REF 'select(.kind == \"error\") | .id'"],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [ref, ...rest] = needPositionals({ ...p, positionals: [...p.positionals, ...p.rest] }, 2, command.usage);
    return printSlice(io, p, await withBrig(io, (brig) => brig.refs.jq(ref!, rest.join(' '))));
  },
};
export default command;
