import { buildRunEnvelope, envelopeOnce } from '../../results/index.js';
import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { needPositionals, openRefs } from './ref-shared.js';
import { configuredModel, loadRunForEnvelope } from './result-shared.js';

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
    const { run, refs } = await loadRunForEnvelope(io, runId!);
    // Same answer as the API and the library (RefService.result): only an ended run has an envelope.
    if (run.status !== 'ended') {
      throw new BrigError('not_running', `run ${runId} has not ended (status ${run.status})`, { hint: '`brig wait RUN` first.', data: { status: run.status } });
    }
    const model = configuredModel(io);
    const opts = { ...(strategy !== undefined ? { strategy } : {}), ...(model ? { model } : {}) };
    // Without --strategy: the envelope the coordinator got (cast once, kept). With it: a fresh
    // cast for a look, not kept.
    const r = strategy === undefined ? await envelopeOnce(openRefs(io).store, run, refs, opts) : await buildRunEnvelope(run, refs, opts);
    if (p.bools.has('json')) {
      writeJson(io, { envelope: r.envelope, level: r.condensed.level, originalTokens: r.condensed.originalTokens, ratio: r.condensed.ratio, savings: r.savings, refs: refs.map(({ preview: _p, ...x }) => x) });
      return 0;
    }
    io.stdout.write(r.envelope);
    return 0;
  },
};
export default command;
