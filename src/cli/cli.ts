import { BrigError, exitCodeFor, toBrigError } from '../util/errors.js';
import { nearest, type CliIO } from './command.js';
import { COMMANDS } from './registry.js';

function help(io: CliIO): void {
  const names = Object.keys(COMMANDS).sort();
  io.stdout.write(
    'brig — a sandboxed child-runner for LLM agent systems\n\nUsage: brig COMMAND [ARGS] (brig COMMAND --help for one)\n\nCommands:\n' +
      names.map((n) => `  ${n}`).join('\n') +
      '\n',
  );
}

/** Finds the longest command name that prefixes argv (`lease list` before `lease`). */
function resolve(argv: string[]): { key: string; rest: string[] } | undefined {
  for (let n = Math.min(3, argv.length); n >= 1; n--) {
    const key = argv.slice(0, n).join(' ');
    if (Object.hasOwn(COMMANDS, key)) return { key, rest: argv.slice(n) };
  }
  return undefined;
}

export async function main(argv: string[], io: CliIO): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    help(io);
    return argv.length === 0 ? 2 : 0;
  }
  const hit = resolve(argv);
  const json = argv.includes('--json');
  try {
    if (!hit) {
      const near = nearest(argv.slice(0, 2).join(' '), Object.keys(COMMANDS)) ?? nearest(argv[0]!, Object.keys(COMMANDS));
      throw new BrigError('invalid_input', `unknown command: ${argv[0]}`, {
        hint: near ? `Did you mean \`brig ${near}\`? \`brig --help\` lists all.` : '`brig --help` lists the commands.',
      });
    }
    const cmd = await COMMANDS[hit.key]!();
    if (hit.rest.includes('--help') || hit.rest.includes('-h')) {
      io.stdout.write(`${cmd.summary}\n\nUsage: ${cmd.usage}\n`);
      return 0;
    }
    return await cmd.run(hit.rest, io);
  } catch (e) {
    const be = toBrigError(e);
    if (json) io.stdout.write(JSON.stringify({ error: be.toJSON() }) + '\n');
    io.stderr.write(`brig: ${be.message} [${be.code}]\n  → ${be.hint}\n`);
    if (be.code === 'internal' && e instanceof Error && io.env.BRIG_DEBUG) io.stderr.write(`${e.stack}\n`);
    return exitCodeFor(be.kind);
  }
}

