import { readFileSync } from 'node:fs';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';

/**
 * package.json's version, read relative to this module: src/cli/commands/ under tsx and
 * dist/cli/commands/ once built are both three levels below the package root.
 */
export function readVersion(moduleUrl: string = import.meta.url): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', moduleUrl), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

const command: Command = {
  name: 'version',
  summary: "Print brig's version.",
  usage: 'brig version [--json]   (also: brig --version)',
  flags: [JSON_FLAG],
  examples: ['brig --version', 'brig version --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const version = readVersion();
    if (p.bools.has('json')) writeJson(io, { version, node: process.versions.node });
    else io.stdout.write(`brig ${version}\n`);
    return 0;
  },
};
export default command;
