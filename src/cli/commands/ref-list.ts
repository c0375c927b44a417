import { JSON_FLAG, QUIET_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { needPositionals, withBrig } from './ref-shared.js';

const command: Command = {
  name: 'ref list',
  summary: 'List the ResultRefs of a run: id, kind, size, rows, path.',
  usage: 'brig ref list RUN [-q] [--json]',
  flags: [QUIET_FLAG, JSON_FLAG],
  examples: ['brig ref list r-0123456789abcdef'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [run] = needPositionals(p, 1, command.usage);
    const got = await withBrig(io, (brig) => brig.refs.manifest(run!));
    if (!got.ok) throw got.error;
    const m = got.value;
    if (p.bools.has('quiet')) {
      io.stdout.write(m.refs.map((r) => `${r.ref}\n`).join(''));
      return 0;
    }
    if (p.bools.has('json')) {
      writeJson(io, { runId: m.runId, rootRunId: m.rootRunId, refs: m.refs.map(({ preview: _preview, ...r }) => r), skipped: m.skipped });
      return 0;
    }
    for (const r of m.refs) {
      io.stdout.write(`${r.ref}  ${r.kind.padEnd(6)} ${String(r.bytes).padStart(12)}B  ${r.rows !== undefined ? `${r.rows} rows  ` : ''}${r.path}\n`);
    }
    for (const s of m.skipped) io.stdout.write(`(skipped ${s.path}: ${s.reason})\n`);
    if (m.refs.length === 0) io.stderr.write('no refs for this run\n');
    return 0;
  },
};
export default command;
