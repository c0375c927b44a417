import { BrigError } from '../../util/errors.js';
import { parseArgs, type CliIO, type Command, type CommandTable } from '../command.js';
import { bashCompletion, fishCompletion, ID_KINDS, zshCompletion, type CompletionModel, type IdKind } from '../completion.js';
import { withBrig } from '../connect.js';
import { byCreatedAt } from '../run-view.js';

/** The completion model from the command table (loads every command for its flags). */
export async function completionModel(table: CommandTable): Promise<CompletionModel> {
  const commands = await Promise.all(
    Object.entries(table.commands).map(async ([key, e]) => {
      const c = await e.load();
      return { key, summary: e.summary, usage: c.usage, flags: c.flags };
    }),
  );
  return { commands, groups: Object.entries(table.groups).map(([name, g]) => ({ name, summary: g.summary })) };
}

const SHELLS = { bash: bashCompletion, zsh: zshCompletion, fish: fishCompletion } as const;

/** Runs a TAB asks about: the newest, so a long history stays a short list. */
const RECENT_RUNS = 200;
/** Runs whose refs a TAB offers (each is a manifest read). */
const RECENT_REF_RUNS = 20;

/** The ids of one kind this home holds, newest runs first. */
async function idsOf(kind: IdKind, io: CliIO): Promise<string[]> {
  if (kind === 'agent') {
    // The catalog is the home's files (no daemon holds it); loaded only for this kind.
    const { agentCatalogFor, loadConfig } = await import('../../index.js');
    return agentCatalogFor(loadConfig(io.env).home).list().map((s) => s.name);
  }
  return withBrig(io, async (brig) => {
    if (kind === 'lease') return (await brig.operator.leases.list()).leases.map((l) => l.id);
    const runs = [...(await brig.list({ limit: RECENT_RUNS }))].sort((a, b) => byCreatedAt(b, a));
    if (kind === 'run') return runs.map((r) => r.id);
    const refs: string[] = [];
    for (const r of runs.slice(0, RECENT_REF_RUNS)) {
      const m = await brig.refs.manifest(r.id);
      if (m.ok) refs.push(...m.value.refs.map((x) => x.ref));
    }
    return refs;
  });
}

export function completionCommand(table: CommandTable): Command {
  const command: Command = {
  name: 'completion',
  summary: 'Print a shell completion script (bash, zsh or fish) for every command, flag and id.',
  usage: 'brig completion bash|zsh|fish   (the scripts call: brig completion ids run|ref|lease|agent)',
  flags: [],
  examples: ['source <(brig completion bash)', 'brig completion zsh > "${fpath[1]}/_brig"', 'brig completion fish > ~/.config/fish/completions/brig.fish'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [shell, kind] = p.positionals;
    if (shell === 'ids' && p.positionals.length === 2 && (ID_KINDS as readonly string[]).includes(kind!)) {
      // A TAB must never print an error over the user's command line: no answer is no ids.
      const ids = await idsOf(kind as IdKind, io).catch(() => []);
      io.stdout.write(ids.map((id) => `${id}\n`).join(''));
      return 0;
    }
    if (p.positionals.length !== 1 || !shell || !Object.hasOwn(SHELLS, shell)) {
      throw new BrigError('invalid_input', `completion needs one shell: ${Object.keys(SHELLS).join(', ')} (or ids ${ID_KINDS.join('|')})`, { hint: command.usage });
    }
    io.stdout.write(SHELLS[shell as keyof typeof SHELLS](await completionModel(table)));
    return 0;
  },
  };
  return command;
}
