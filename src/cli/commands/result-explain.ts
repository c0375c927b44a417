import { explainRun, renderExplain, renderTiming, splitTiming } from '../../index.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { needPositionals, withBrig } from './ref-shared.js';
import { termText } from '../run-view.js';

const command: Command = {
  name: 'explain',
  summary: 'A run, its lease decisions, its ResultRefs and its estimated context savings.',
  usage: 'brig explain RUN [--timing] [--json]',
  flags: [{ name: 'timing', description: 'where the run\'s time went: intake, lease, jail, first instruction, run, collect, ended durable, envelope, release' }, JSON_FLAG],
  examples: ['brig explain r-0123456789abcdef', 'brig explain r-0123456789abcdef --timing'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [runId] = needPositionals(p, 1, command.usage);
    const got = await withBrig(io, async (brig) => {
      const x = await explainRun(brig, runId!);
      if (!x.ok) throw x.error;
      return { ...x.value.input, timing: x.value.run.timing };
    });
    const { timing, ...input } = got;
    if (p.bools.has('timing')) {
      if (p.bools.has('json')) writeJson(io, { runId, ...(timing ? { marks: timing.marks, ...splitTiming(timing) } : { marks: null }) });
      else io.stdout.write(renderTiming(timing));
      return 0;
    }
    if (p.bools.has('json')) {
      writeJson(io, { ...input, refs: input.refs.map(({ preview: _p, ...x }) => x) });
      return 0;
    }
    io.stdout.write(termText(renderExplain(input)));
    return 0;
  },
};

export default command;
