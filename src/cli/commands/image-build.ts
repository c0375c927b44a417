import { openOperator } from '../../index.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';

const command: Command = {
  name: 'image build',
  summary: 'Build the child image FROM scratch (node + its libraries, busybox-static, the child runtime); a present tag is kept.',
  usage: 'brig image build [FLAGS]',
  flags: [
    { name: 'force', description: 'rebuild even when the tag is present' },
    { name: 'prune', description: 'remove older child images no container uses' },
    { name: 'quiet', description: "don't print the build's progress" },
    JSON_FLAG,
  ],
  examples: ['brig image build', 'brig image build --force --prune'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const quiet = p.bools.has('quiet') || p.bools.has('json');
    const started = Date.now();
    const res = await openOperator({ env: io.env }).buildImage({
      force: p.bools.has('force'),
      prune: p.bools.has('prune'),
      ...(quiet ? {} : { onProgress: (l: string) => io.stderr.write(`  ${l}\n`) }),
    });
    const pruned = res.pruned;
    const out = { tag: res.tag, built: res.built, runtimeIncluded: res.runtimeIncluded, pruned, ms: Date.now() - started };
    if (p.bools.has('json')) writeJson(io, out);
    else {
      io.stdout.write(`${res.built ? 'built' : 'present'} ${res.tag}\n`);
      for (const t of pruned) io.stdout.write(`removed ${t}\n`);
      if (!res.runtimeIncluded) io.stderr.write('note: dist/child is missing, so the image has no child runtime; run `make build` first.\n');
    }
    return 0;
  },
};
export default command;
