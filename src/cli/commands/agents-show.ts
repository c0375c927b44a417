import { agentCatalogFor, grantAllows, loadConfig } from '../../index.js';
import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { offeredTools, sourceOf } from './agents-shared.js';

const command: Command = {
  name: 'agents show',
  summary: 'Show one agent spec: its frontmatter, its instructions, and the tools it would be offered under this home\'s policy.',
  usage: 'brig agents show AGENT [--json]',
  flags: [JSON_FLAG],
  examples: ['brig agents show general', 'brig agents show coordinator --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const name = p.positionals[0];
    if (!name || p.positionals.length > 1) throw new BrigError('invalid_input', 'agents show takes one NAME', { hint: '`brig agents list` shows the names.' });
    const home = loadConfig(io.env).home;
    // An unknown name is refused with the nearest one; a broken spec with its file, line and key.
    const got = agentCatalogFor(home).get(name);
    if (!got.ok) throw got.error;
    const { instructions, source: file, ...frontmatter } = got.value;
    const source = sourceOf(home, got.value);
    const offered = offeredTools(home, got.value);
    if (p.bools.has('json')) {
      const { error, ...rest } = offered;
      writeJson(io, { name, source, file, frontmatter, instructions, offered: { ...rest, ...(error ? { error: error.toJSON() } : {}) } });
      return 0;
    }
    const w = (s: string) => io.stdout.write(s + '\n');
    w(`agent ${frontmatter.name}  (${source}: ${file})`);
    w(`  description:    ${frontmatter.description.replace(/\s+/g, ' ')}`);
    w(`  role:           ${frontmatter.role}`);
    w(`  model:          ${frontmatter.model ?? '(the configured default)'}`);
    w(`  profile:        ${frontmatter.profile ?? `(none: an operator's spawn gets ${offered.profile})`}`);
    w(`  tools:          ${frontmatter.tools ? frontmatter.tools.join(', ') || '(none)' : '(every tool its lease allows)'}`);
    w(`  maxSteps:       ${frontmatter.maxSteps ?? '-'}`);
    w(`  timeout:        ${frontmatter.timeout !== undefined ? `${frontmatter.timeout}s` : '-'}`);
    w(`  workspaceAware: ${frontmatter.workspaceAware}`);
    if (offered.error) w(`offered under profile ${offered.profile} (${offered.policy}): nothing — ${offered.error.message}`);
    else {
      w(`offered under profile ${offered.profile} (${offered.policy}):`);
      w(`  caps:  ${offered.caps!.join(', ') || '(none)'}`);
      w(`  tools: ${offered.tools!.join(', ')}`);
      if (!grantAllows({ caps: offered.caps! }, 'llm')) w('  note: the profile grants no `llm`, so a spawn of this agent is refused (capability_denied)');
    }
    w('--- instructions');
    io.stdout.write(instructions.endsWith('\n') ? instructions : `${instructions}\n`);
    return 0;
  },
};
export default command;
