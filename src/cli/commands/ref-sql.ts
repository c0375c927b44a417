import { JSON_FLAG, numberFlag, parseArgs, type Command } from '../command.js';
import { needPositionals, printSlice, withBrig } from './ref-shared.js';

const command: Command = {
  name: 'ref sql',
  summary: 'One SELECT over the view `ref` in the locked DuckDB helper.',
  usage: "brig ref sql REF 'SELECT …' [--max-rows N] [--json]",
  flags: [{ name: 'max-rows', value: 'N', description: 'at most N rows back (the rest is counted)' }, JSON_FLAG],
  examples: ["brig ref sql REF 'SELECT kind, count(*) FROM ref GROUP BY 1'", "brig ref sql REF 'SELECT * FROM ref' --max-rows 10 --json"],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [ref, ...rest] = needPositionals({ ...p, positionals: [...p.positionals, ...p.rest] }, 2, command.usage);
    const max = numberFlag(p, 'max-rows');
    return printSlice(io, p, await withBrig(io, (brig) => brig.refs.sql(ref!, rest.join(' '), max !== undefined ? { maxRows: max } : {})));
  },
};
export default command;
