import { openOperator } from '../../index.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';

const command: Command = {
  name: 'image toolbox',
  summary: "Build the toolbox image (Debian 12 with git, python3, build-essential, node, ripgrep, jq, …) from Debian's packages with mmdebstrap; a present tag is kept.",
  usage: 'brig image toolbox [FLAGS]',
  flags: [
    { name: 'force', description: 'rebuild even when the tag is present' },
    { name: 'quiet', description: "don't print mmdebstrap's progress" },
    JSON_FLAG,
  ],
  examples: ['brig image toolbox', 'brig spawn --image "$(brig image toolbox --json | jq -r .tag)" -- git --version'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const quiet = p.bools.has('quiet') || p.bools.has('json');
    const started = Date.now();
    const res = await openOperator({ env: io.env }).buildToolbox({ force: p.bools.has('force'), ...(quiet ? {} : { onProgress: (l: string) => io.stderr.write(`  ${l}\n`) }) });
    const out = { tag: res.tag, built: res.built, ms: Date.now() - started };
    if (p.bools.has('json')) writeJson(io, out);
    else io.stdout.write(`${res.built ? 'built' : 'present'} ${res.tag}\n`);
    return 0;
  },
};
export default command;
