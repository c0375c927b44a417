import { applyRun } from '../../index.js';
import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, flag, parseArgs, writeJson, type Command } from '../command.js';
import { withBrig } from '../connect.js';

const command: Command = {
  name: 'apply',
  summary: "Write a run's change to its repository (--repo) as a new branch; the working tree and every existing branch are left as they are.",
  usage: 'brig apply RUN [--branch NAME] [--rebase] [--json]',
  flags: [
    { name: 'branch', value: 'NAME', description: 'the new branch (default brig/RUN); an existing branch is refused, never moved' },
    { name: 'rebase', description: 'when the ref the run started from has moved, apply the change onto its new commit (else refused)' },
    JSON_FLAG,
  ],
  examples: ['brig apply r-0123456789abcdef --branch fix-typo', 'brig apply r-0123456789abcdef --rebase'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    if (p.positionals.length !== 1) throw new BrigError('invalid_input', 'apply takes exactly one RUN', { hint: command.usage });
    const branch = flag(p, 'branch');
    const out = await withBrig(io, (brig) => applyRun(brig, p.positionals[0]!, { ...(branch !== undefined ? { branch } : {}), ...(p.bools.has('rebase') ? { rebase: true } : {}) }));
    if (p.bools.has('json')) writeJson(io, out);
    else io.stdout.write(`branch ${out.branch} at ${out.commit.slice(0, 12)} in ${out.repo} (${out.filesChanged} file(s), onto ${out.onto.slice(0, 12)}${out.rebased ? ', rebased' : ''})\n`);
    return 0;
  },
};
export default command;
