import { BrigError } from '../../util/errors.js';
import { nearest, parseArgs, type Command, type CommandTable } from '../command.js';
import { exitTable } from '../exit-codes.js';
import { renderCommandHelp, renderGroupHelp, renderTopHelp } from '../help.js';

/** `brig help [COMMAND...]`: the same pages as `--help`, plus the exit-code table, over the table it is handed. */
export function helpCommand(table: CommandTable): Command {
  const { commands: COMMANDS, groups: GROUPS } = table;
  const command: Command = {
  name: 'help',
  summary: 'Show help for brig, a command or a group (`brig help lease list`).',
  usage: 'brig help [COMMAND [SUBCOMMAND] | exit-codes]',
  flags: [],
  examples: ['brig help spawn', 'brig help lease list', 'brig help ref', 'brig help exit-codes'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const topic = p.positionals.join(' ');
    if (topic === '') io.stdout.write(renderTopHelp(table));
    else if (topic === 'exit-codes') {
      io.stdout.write('Exit codes (docs/cli.md):\n' + exitTable().map((r) => `  ${String(r.code).padStart(3)}  ${r.meaning}`).join('\n') + '\n');
    } else if (Object.hasOwn(COMMANDS, topic)) io.stdout.write(renderCommandHelp(await COMMANDS[topic]!.load()));
    else if (Object.hasOwn(GROUPS, topic)) io.stdout.write(renderGroupHelp(table, topic));
    else {
      const near = nearest(topic, [...Object.keys(COMMANDS), ...Object.keys(GROUPS), 'exit-codes']);
      throw new BrigError('invalid_input', `no help topic ${JSON.stringify(topic.slice(0, 60))}`, {
        hint: near ? `Did you mean \`brig help ${near}\`?` : '`brig --help` lists the commands.',
      });
    }
    return 0;
  },
  };
  return command;
}
