import { RUN_STATUSES, type RunStatus } from '../../index.js';
import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, flag, numberFlag, parseArgs, writeJson, type Command } from '../command.js';
import { openBrig } from '../connect.js';
import { runTable } from '../run-view.js';

const command: Command = {
  name: 'list',
  summary: 'List runs: status, end reason, depth, steps, elapsed, parent.',
  usage: 'brig list [FLAGS]',
  flags: [
    { name: 'status', value: 'STATUS', repeatable: true, choices: RUN_STATUSES, description: `only runs in this status (${RUN_STATUSES.join(', ')})` },
    { name: 'root', value: 'RUN', description: 'only the runs of the tree under this root run' },
    { name: 'parent', value: 'RUN', description: 'only the children of this run' },
    { name: 'label', value: 'LABEL', description: 'only runs spawned with this --label' },
    { name: 'limit', value: 'N', description: 'only the N most recent runs' },
    { name: 'kind', value: 'KIND', description: 'only runs of this kind (script, command, agent); repeatable', repeatable: true, choices: ['script', 'command', 'agent'] },
    { name: 'since', value: 'MINUTES', description: 'only runs created in the last MINUTES' },
    JSON_FLAG,
  ],
  examples: ['brig list', 'brig list --status running --status queued', 'brig list --limit 5', 'brig list --label nightly --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const status = p.flags.get('status') ?? [];
    for (const s of status) if (!(RUN_STATUSES as readonly string[]).includes(s)) throw new BrigError('invalid_input', `unknown status ${s}`, { hint: `Known: ${RUN_STATUSES.join(', ')}` });
    for (const k of p.flags.get('kind') ?? []) if (!['script', 'command', 'agent'].includes(k)) throw new BrigError('invalid_input', `unknown kind ${k}`, { hint: 'Known: script, command, agent' });
    const limit = numberFlag(p, 'limit');
    if (limit !== undefined && !Number.isSafeInteger(limit)) throw new BrigError('invalid_input', `--limit must be a whole number, got ${limit}`);
    const brig = await openBrig(io);
    try {
      const all = await brig.list({
        ...(status.length ? { status: status as RunStatus[] } : {}),
        ...(flag(p, 'root') ? { rootRunId: flag(p, 'root')! } : {}),
        ...(flag(p, 'parent') ? { parentRunId: flag(p, 'parent')! } : {}),
        ...(flag(p, 'label') ? { label: flag(p, 'label')! } : {}),
        ...(p.flags.get('kind')?.length ? { kind: p.flags.get('kind') as ('script' | 'command' | 'agent')[] } : {}),
        ...(numberFlag(p, 'since') !== undefined ? { sinceMinutes: numberFlag(p, 'since')! } : {}),
      });
      // Oldest first, so the newest is next to the prompt; --limit keeps the newest N.
      const sorted = [...all].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
      const runs = limit !== undefined ? sorted.slice(-limit) : sorted;
      if (p.bools.has('json')) writeJson(io, { runs });
      else if (runs.length === 0) io.stdout.write('no runs\n');
      else io.stdout.write(runTable(runs));
      return 0;
    } finally {
      await brig.close();
    }
  },
};
export default command;
