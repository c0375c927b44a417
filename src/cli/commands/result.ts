import { buildRunEnvelope } from '../../results/index.js';
import { BrigError } from '../../util/errors.js';
import { parseArgs, writeJson, type Command } from '../command.js';
import { needPositionals } from './ref-shared.js';
import { configuredModel, loadRunForEnvelope } from './result-shared.js';

const command: Command = {
  name: 'result',
  summary: 'The envelope a coordinator receives for a run: condensed result, metrics, one line per ResultRef.',
  usage: 'brig result RUN [--strategy auto|always|never] [--json]',
  async run(args, io) {
    const p = parseArgs(args, { valued: ['strategy'], booleans: ['json'] });
    const [runId] = needPositionals(p, 1, command.usage);
    const strategy = p.flags.get('strategy')?.at(-1);
    if (strategy !== undefined && strategy !== 'auto' && strategy !== 'always' && strategy !== 'never') {
      throw new BrigError('invalid_input', `--strategy must be auto, always or never, got ${JSON.stringify(strategy.slice(0, 40))}`, { hint: command.usage });
    }
    const { run, refs } = await loadRunForEnvelope(io, runId!);
    // Same answer as the API and the library (RefService.result): only an ended run has an envelope.
    if (run.status !== 'ended') {
      throw new BrigError('not_running', `run ${runId} has not ended (status ${run.status})`, { hint: '`brig wait RUN` first.', data: { status: run.status } });
    }
    const model = configuredModel(io);
    const r = await buildRunEnvelope(run, refs, {
      ...(strategy !== undefined ? { strategy } : {}),
      ...(model ? { model } : {}),
    });
    if (p.bools.has('json')) {
      writeJson(io, { envelope: r.envelope, level: r.condensed.level, originalTokens: r.condensed.originalTokens, ratio: r.condensed.ratio, savings: r.savings, refs: refs.map(({ preview: _p, ...x }) => x) });
      return 0;
    }
    io.stdout.write(r.envelope);
    return 0;
  },
};
export default command;
