import { BrigError } from '../../util/errors.js';
import { parseArgs, type Command, type CommandTable } from '../command.js';
import { bashCompletion, zshCompletion, type CompletionModel } from '../completion.js';

/** The completion model from the command table (loads every command for its flags). */
export async function completionModel(table: CommandTable): Promise<CompletionModel> {
  const commands = await Promise.all(Object.entries(table.commands).map(async ([key, e]) => ({ key, summary: e.summary, flags: (await e.load()).flags })));
  return { commands, groups: Object.entries(table.groups).map(([name, g]) => ({ name, summary: g.summary })) };
}

const SHELLS = { bash: bashCompletion, zsh: zshCompletion } as const;

export function completionCommand(table: CommandTable): Command {
  const command: Command = {
  name: 'completion',
  summary: 'Print a shell completion script (bash or zsh) for every command and flag.',
  usage: 'brig completion bash|zsh',
  flags: [],
  examples: ['source <(brig completion bash)', 'brig completion zsh > "${fpath[1]}/_brig"'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const shell = p.positionals[0];
    if (p.positionals.length !== 1 || !shell || !Object.hasOwn(SHELLS, shell)) {
      throw new BrigError('invalid_input', `completion needs one shell: ${Object.keys(SHELLS).join(' or ')}`, { hint: command.usage });
    }
    io.stdout.write(SHELLS[shell as keyof typeof SHELLS](await completionModel(table)));
    return 0;
  },
  };
  return command;
}
