import { RUN_STATUSES, type RunRecord, type RunStatus } from '../../light.js';
import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, QUIET_FLAG, durationFlag, flag, numberFlag, parseArgs, writeJson, type Command } from '../command.js';
import { openBrig } from '../connect.js';
import { colourOn } from '../colour.js';
import { byCreatedAt, runTable } from '../run-view.js';

const withRunId = (r: RunRecord) => ({ runId: r.id, ...r });

/** Rows the table shows when neither --limit nor --all is given. */
export const TABLE_DEFAULT = 50;

const command: Command = {
  name: 'list',
  summary: 'List runs: status, end reason, depth, steps, elapsed, parent.',
  usage: 'brig list [FLAGS]',
  flags: [
    { name: 'status', value: 'STATUS', repeatable: true, choices: RUN_STATUSES, description: `only runs in this status (${RUN_STATUSES.join(', ')})` },
    { name: 'root', value: 'RUN', description: 'only the runs of the tree under this root run' },
    { name: 'parent', value: 'RUN', description: 'only the children of this run' },
    { name: 'label', value: 'LABEL', description: 'only runs spawned with this --label' },
    { name: 'limit', value: 'N', description: `only the N most recent runs (the table and --json show the newest ${TABLE_DEFAULT} unless told)` },
    { name: 'all', description: 'every run on record (the table, too)' },
    { name: 'kind', value: 'KIND', description: 'only runs of this kind (script, command, agent); repeatable', repeatable: true, choices: ['script', 'command', 'agent'] },
    { name: 'since', value: 'DURATION', description: 'only runs created in the last 30m, 24h, 7d (a bare number: minutes)' },
    QUIET_FLAG,
    JSON_FLAG,
  ],
  examples: ['brig list', 'brig list --status running --status queued', 'brig list --limit 5', 'brig list --all', 'brig list --label nightly --json', 'brig list --since 24h', 'brig list -q --status running | xargs -n1 brig kill --confirm'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const status = p.flags.get('status') ?? [];
    for (const s of status) if (!(RUN_STATUSES as readonly string[]).includes(s)) throw new BrigError('invalid_input', `unknown status ${s}`, { hint: `Known: ${RUN_STATUSES.join(', ')}` });
    for (const k of p.flags.get('kind') ?? []) if (!['script', 'command', 'agent'].includes(k)) throw new BrigError('invalid_input', `unknown kind ${k}`, { hint: 'Known: script, command, agent' });
    const limit = numberFlag(p, 'limit');
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) throw new BrigError('invalid_input', `--limit must be a whole number, got ${limit}`);
    const all = p.bools.has('all');
    if (all && limit !== undefined) throw new BrigError('invalid_input', '--all and --limit contradict each other', { hint: 'Give one of them.' });
    const json = p.bools.has('json');
    const since = durationFlag(p, 'since', 'm');
    // A page of thousands of runs helps nobody, in a table or in JSON: the newest TABLE_DEFAULT
    // unless told; the page says how many older ones were left out.
    const bound = limit ?? (all ? undefined : TABLE_DEFAULT);
    const brig = await openBrig(io);
    try {
      const page = await brig.page({
        ...(status.length ? { status: status as RunStatus[] } : {}),
        ...(flag(p, 'root') ? { rootRunId: flag(p, 'root')! } : {}),
        ...(flag(p, 'parent') ? { parentRunId: flag(p, 'parent')! } : {}),
        ...(flag(p, 'label') ? { label: flag(p, 'label')! } : {}),
        ...(p.flags.get('kind')?.length ? { kind: p.flags.get('kind') as ('script' | 'command' | 'agent')[] } : {}),
        ...(since !== undefined ? { sinceMinutes: since } : {}),
        ...(bound !== undefined ? { limit: bound } : {}),
      });
      // Oldest first, so the newest is next to the prompt.
      const runs = [...page.runs].sort(byCreatedAt);
      // Older runs left out of the default page (an explicit --limit asked for exactly that many).
      const older = limit === undefined ? page.more : 0;
      // Thousands grouped by hand: Intl's number formatting costs the thin path its first-call setup.
      const said = `${String(older).replace(/\B(?=(\d{3})+$)/g, ',')} older run${older === 1 ? '' : 's'}`;
      if (p.bools.has('quiet')) io.stdout.write(runs.map((r) => `${r.id}\n`).join(''));
      // `runId` as every other --json (spawn, wait, result) names a run; `id` is the record's own.
      else if (json) writeJson(io, older ? { runs: runs.map(withRunId), more: older, hint: `the newest ${TABLE_DEFAULT} runs; ${said} left out: --limit N or --all` } : { runs: runs.map(withRunId) });
      else if (runs.length === 0) io.stdout.write('no runs\n');
      else {
        io.stdout.write(runTable(runs, new Date(), colourOn(io)));
        if (older) io.stdout.write(`(the newest ${TABLE_DEFAULT} shown; ${said} left out: --limit N or --all)\n`);
      }
      return 0;
    } finally {
      await brig.close();
    }
  },
};
export default command;
