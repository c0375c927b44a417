import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, numberFlag, parseArgs, type Command } from '../command.js';
import { needPositionals, printSlice, withBrig } from './ref-shared.js';

const command: Command = {
  name: 'ref read',
  summary: 'Read a slice of a ref by line (1-based, a seek via the line index) or by byte offset.',
  usage: 'brig ref read REF (--line N [--lines M] | --offset B [--length L]) [--json]',
  flags: [
    { name: 'line', value: 'N', description: 'start at this line (1-based; a seek through the line index)' },
    { name: 'lines', value: 'M', description: 'how many lines from --line' },
    { name: 'offset', value: 'B', description: 'start at this byte offset instead' },
    { name: 'length', value: 'L', description: 'how many bytes from --offset' },
    JSON_FLAG,
  ],
  examples: ['brig ref read REF --line 2500000 --lines 20', 'brig ref read REF --offset 1048576 --length 4096'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [ref] = needPositionals(p, 1, command.usage);
    const line = numberFlag(p, 'line');
    // --length alone is a byte read from the start (it was silently ignored for line 1 before).
    const offsetRaw = p.flags.get('offset')?.at(-1) ?? (numberFlag(p, 'length') !== undefined ? '0' : undefined);
    if (line !== undefined && offsetRaw !== undefined) throw new BrigError('invalid_input', 'give --line or --offset, not both', { hint: command.usage });
    if (offsetRaw !== undefined && numberFlag(p, 'lines') !== undefined) throw new BrigError('invalid_input', '--lines goes with --line; with --offset give --length', { hint: command.usage });
    const range =
      offsetRaw !== undefined
        ? { offset: Number(offsetRaw), ...(numberFlag(p, 'length') !== undefined ? { length: numberFlag(p, 'length')! } : {}) }
        : { line: line ?? 1, ...(numberFlag(p, 'lines') !== undefined ? { lines: numberFlag(p, 'lines')! } : {}) };
    return printSlice(io, p, await withBrig(io, (brig) => brig.refs.read(ref!, range)));
  },
};
export default command;
