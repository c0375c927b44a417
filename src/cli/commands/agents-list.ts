import { agentCatalogFor, loadConfig } from '../../index.js';
import { JSON_FLAG, QUIET_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { sourceOf } from './agents-shared.js';

const command: Command = {
  name: 'agents list',
  summary: "List the agent specs `brig spawn --agent` can run: name, role, source (this home's or shipped), description.",
  usage: 'brig agents list [-q] [--json]',
  flags: [QUIET_FLAG, JSON_FLAG],
  examples: ['brig agents list', 'brig agents list --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const home = loadConfig(io.env).home;
    const catalog = agentCatalogFor(home);
    const agents = catalog.list().map((s) => ({ name: s.name, role: s.role, description: s.description, source: sourceOf(home, s), file: s.source }));
    const broken = catalog.broken();
    if (p.bools.has('quiet')) {
      io.stdout.write(agents.map((a) => `${a.name}\n`).join(''));
      return 0;
    }
    if (p.bools.has('json')) {
      writeJson(io, { agents, broken: broken.map((b) => ({ file: b.file, error: b.error.toJSON() })) });
      return 0;
    }
    if (agents.length === 0) io.stdout.write('no agent specs\n');
    else {
      const head = ['NAME', 'ROLE', 'SOURCE', 'DESCRIPTION'];
      const rows = agents.map((a) => [a.name, a.role, a.source, a.description.replace(/\s+/g, ' ')]);
      const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
      for (const r of [head, ...rows]) io.stdout.write(r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd() + '\n');
    }
    // A broken spec is not loaded (`brig spawn --agent` refuses its name with this error): say so.
    for (const b of broken) io.stderr.write(`warning: broken agent spec, not loaded: ${b.error.message}\n  → ${b.error.hint}\n`);
    return 0;
  },
};
export default command;
