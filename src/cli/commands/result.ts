import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { needPositionals, withBrig } from './ref-shared.js';
import { termText } from '../run-view.js';

const STRATEGIES = ['auto', 'always', 'never'] as const;

const command: Command = {
  name: 'result',
  summary: 'The envelope a coordinator receives for a run (cast once, then kept): condensed result, metrics, one line per ResultRef.',
  usage: 'brig result RUN [FLAGS]',
  flags: [
    { name: 'strategy', value: 'auto|always|never', choices: STRATEGIES, description: 'cast a fresh envelope with this condensation strategy (not kept)' },
    JSON_FLAG,
  ],
  examples: ['brig result r-0123456789abcdef', 'brig result RUN --strategy never --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [runId] = needPositionals(p, 1, command.usage);
    const given = p.flags.get('strategy')?.at(-1);
    const strategy = STRATEGIES.find((s) => s === given);
    if (given !== undefined && strategy === undefined) {
      throw new BrigError('invalid_input', `--strategy must be auto, always or never, got ${JSON.stringify(given.slice(0, 40))}`, { hint: command.usage });
    }
    // The API's answer (RefService.result): only an ended run has an envelope. Without
    // --strategy it is the one the coordinator got (cast once, kept); with it, a fresh look, not kept.
    const res = await withBrig(io, (brig) => brig.refs.result(runId!, strategy !== undefined ? { strategy } : {}));
    if (!res.ok) throw res.error;
    const r = res.value;
    if (p.bools.has('json')) {
      writeJson(io, { envelope: r.envelope, level: r.condensed.level, originalTokens: r.condensed.originalTokens, ratio: r.condensed.ratio, savings: r.savings, refs: r.refs.map(({ preview: _p, ...x }) => x) });
      return 0;
    }
    // The envelope's body is the child's text: its control characters are shown, not obeyed.
    io.stdout.write(termText(r.envelope));
    return 0;
  },
};
export default command;
