import { BrigError, exitCodeFor, toBrigError } from '../util/errors.js';
import { nearest, type CliIO } from './command.js';
import { groupMembers } from './command.js';
import { COMMANDS, GROUPS, TABLE } from './registry.js';
import { mark } from '../util/timing.js';

/** Help is rendered only when asked for: a command's run does not load it. */
const help = () => import('./help.js');

/** Finds the longest command name that prefixes argv (`lease list` before `lease`). */
function resolve(argv: string[]): { key: string; rest: string[] } | undefined {
  for (let n = Math.min(3, argv.length); n >= 1; n--) {
    const key = argv.slice(0, n).join(' ');
    if (Object.hasOwn(COMMANDS, key)) return { key, rest: argv.slice(n) };
  }
  return undefined;
}

/** The flags part of argv: what comes after `--` is the child's (`spawn -- tool --help`). */
function ownArgs(argv: string[]): string[] {
  const i = argv.indexOf('--');
  return i === -1 ? argv : argv.slice(0, i);
}

const wantsHelp = (args: string[]) => ownArgs(args).some((a) => a === '--help' || a === '-h');

/** `brig ref`, `brig ref --help`, `brig ref bogus`: the group's page, or the nearest subcommand. */
async function groupCommand(group: string, rest: string[], io: CliIO): Promise<number> {
  if (rest.length === 0 || wantsHelp(rest)) {
    io.stdout.write((await help()).renderGroupHelp(TABLE, group));
    return rest.length === 0 ? 2 : 0;
  }
  const subs = groupMembers(TABLE, group).map((k) => k.slice(group.length + 1));
  const near = rest[0]!.startsWith('-') ? undefined : nearest(rest[0]!, subs);
  throw new BrigError('invalid_input', rest[0]!.startsWith('-') ? `brig ${group} needs a subcommand before its flags` : `unknown command: ${group} ${rest[0]}`, {
    hint: near ? `Did you mean \`brig ${group} ${near}\`? \`brig ${group} --help\` lists them.` : `\`brig ${group} --help\` lists them: ${subs.join(', ')}.`,
  });
}

export async function main(argv: string[], io: CliIO): Promise<number> {
  const json = ownArgs(argv).includes('--json');
  try {
    if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h') {
      io.stdout.write((await help()).renderTopHelp(TABLE));
      return argv.length === 0 ? 2 : 0;
    }
    if (argv[0] === '--version') return await (await COMMANDS.version!.load()).run(argv.slice(1), io);
    const hit = resolve(argv);
    if (!hit) {
      if (Object.hasOwn(GROUPS, argv[0]!)) return await groupCommand(argv[0]!, argv.slice(1), io);
      const names = [...Object.keys(COMMANDS), ...Object.keys(GROUPS)];
      const near = nearest(argv.slice(0, 2).join(' '), names) ?? nearest(argv[0]!, names);
      throw new BrigError('invalid_input', `unknown command: ${argv[0]}`, {
        hint: near ? `Did you mean \`brig ${near}\`? \`brig --help\` lists all.` : '`brig --help` lists the commands.',
      });
    }
    mark('cli: modules loaded');
    const cmd = await COMMANDS[hit.key]!.load();
    mark(`cli: ${hit.key} loaded`);
    if (wantsHelp(hit.rest)) {
      io.stdout.write((await help()).renderCommandHelp(cmd));
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
