import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, numberFlag, parseArgs, type Command } from '../command.js';
import { needPositionals, printSlice, withBrig } from './ref-shared.js';

const command: Command = {
  name: 'ref grep',
  summary: 'Lines of a ref matching an extended regex (GNU grep, empty environment, timeout).',
  usage: 'brig ref grep REF PATTERN [FLAGS]',
  flags: [
    { name: 'max', value: 'N', description: 'stop after N matching lines' },
    { name: 'context', value: 'N', description: 'N lines of context around each match' },
    { name: 'ignore-case', description: 'match without regard to case' },
    { name: 'fixed', description: 'PATTERN is a fixed string, not a regex' },
    JSON_FLAG,
  ],
  examples: ["brig ref grep REF 'ERROR .*disk' --max 20", 'brig ref grep REF E503 --fixed --context 2'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [ref, ...rest] = needPositionals({ ...p, positionals: [...p.positionals, ...p.rest] }, 2, command.usage);
    const ctxRaw = p.flags.get('context')?.at(-1);
    const ctx = ctxRaw === undefined ? undefined : Number(ctxRaw);
    if (ctx !== undefined && (!Number.isSafeInteger(ctx) || ctx < 0)) {
      throw new BrigError('invalid_input', `--context must be a whole number of lines ≥ 0, got ${JSON.stringify(ctxRaw!.slice(0, 40))}`, { hint: command.usage });
    }
    const opts = {
      ...(numberFlag(p, 'max') !== undefined ? { maxMatches: numberFlag(p, 'max')! } : {}),
      ...(ctx !== undefined ? { context: ctx } : {}),
      ignoreCase: p.bools.has('ignore-case'),
      fixed: p.bools.has('fixed'),
    };
    return printSlice(io, p, await withBrig(io, (brig) => brig.refs.grep(ref!, rest.join(' '), opts)));
  },
};
export default command;
