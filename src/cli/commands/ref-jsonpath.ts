import { JSON_FLAG, numberFlag, parseArgs, type Command } from '../command.js';
import { needPositionals, printSlice, withBrig } from './ref-shared.js';

const command: Command = {
  name: 'ref jsonpath',
  summary: "Extract with a strict JSONPath ($, .name, ['name'], [n], [*]) compiled to DuckDB json_extract.",
  usage: "brig ref jsonpath REF 'PATH' [--max-rows N] [--json]",
  flags: [{ name: 'max-rows', value: 'N', description: 'at most N values back (the rest is counted)' }, JSON_FLAG],
  examples: ["brig ref jsonpath REF '$.items[*].id'"],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [ref, ...rest] = needPositionals({ ...p, positionals: [...p.positionals, ...p.rest] }, 2, command.usage);
    const max = numberFlag(p, 'max-rows');
    return printSlice(io, p, await withBrig(io, (brig) => brig.refs.jsonpath(ref!, rest.join(' '), max !== undefined ? { maxRows: max } : {})));
  },
};
export default command;
