import { BrigError } from '../../util/errors.js';
import type { AdmissionState } from '../../protocol/index.js';
import { JSON_FLAG, flag, parseArgs, writeJson, type CliIO, type Command } from '../command.js';
import { withBrig } from '../connect.js';
import { operatorName } from './graph-shared.js';

/** One line: open or paused, since when, by whom, and the queue (when a daemon counted it). */
export function admissionLine(a: AdmissionState): string {
  const state = a.paused ? 'paused' : 'open';
  const since = a.since ? ` since ${a.since}${a.by ? ` (by ${a.by})` : ''}` : '';
  const queued = a.queued === null ? ' (no daemon: the queue is not counted)' : `, ${a.queued} queued`;
  return `admission ${state}${since}${queued}\n`;
}

function print(io: CliIO, json: boolean, a: AdmissionState): void {
  if (json) writeJson(io, { admission: a });
  else io.stdout.write(admissionLine(a));
}

/** `brig admission pause|resume [--reason]`: one command each, the new state their only difference. */
export function admissionChangeCommand(verb: 'pause' | 'resume'): Command {
  const command: Command = {
    name: `admission ${verb}`,
    summary:
      verb === 'pause'
        ? 'Pause admission: running children go on, new spawns wait in the queue (refused `admission_paused` when it is full); kept across a daemon restart, ledgered with who, when and the reason\'s hash.'
        : 'Resume admission: the runs queued while paused start in order; ledgered with who, when and the reason\'s hash.',
    usage: `brig admission ${verb} [--reason TEXT] [--json]`,
    flags: [{ name: 'reason', value: 'TEXT', description: 'why (≤ 4096 characters; only its sha256 is kept)' }, JSON_FLAG],
    examples: verb === 'pause' ? ["brig admission pause --reason 'engine upgrade'"] : ['brig admission resume'],
    async run(args, io) {
      const p = parseArgs(args, command.flags);
      if (p.positionals.length > 0) throw new BrigError('invalid_input', `admission ${verb} takes no arguments`, { hint: `Usage: ${command.usage}` });
      const reason = flag(p, 'reason');
      const r = await withBrig(io, (brig) => brig.operator.admission[verb]({ by: operatorName(), ...(reason !== undefined ? { reason } : {}) }));
      if (!r.ok) throw r.error;
      print(io, p.bools.has('json'), r.value);
      return 0;
    },
  };
  return command;
}

export const statusCommand: Command = {
  name: 'admission status',
  summary: 'Whether admission is paused, since when and by whom, and how many spawns wait in the queue.',
  usage: 'brig admission status [--json]',
  flags: [JSON_FLAG],
  examples: ['brig admission status'],
  async run(args, io) {
    const p = parseArgs(args, statusCommand.flags);
    if (p.positionals.length > 0) throw new BrigError('invalid_input', 'admission status takes no arguments', { hint: `Usage: ${statusCommand.usage}` });
    print(io, p.bools.has('json'), await withBrig(io, (brig) => brig.operator.admission.status()));
    return 0;
  },
};
