import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { withBrig } from '../connect.js';

const command: Command = {
  name: 'audit verify',
  summary: 'Check the hash chain of every ledger segment; names the first bad line.',
  usage: 'brig audit verify [--json]',
  flags: [JSON_FLAG],
  examples: ['brig audit verify', 'brig audit verify --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const { dir, ...r } = await withBrig(io, (brig) => brig.operator.audit.verify());
    if (!r.ok && r.bad) {
      throw new BrigError('ledger_corrupt', `ledger broken at ${r.bad.file}:${r.bad.line}: ${r.bad.why}`, {
        data: { file: r.bad.file, line: r.bad.line, why: r.bad.why },
      });
    }
    if (p.bools.has('json')) writeJson(io, r);
    else {
      io.stdout.write(`ledger ok: ${r.lines} line(s) in ${r.files} segment(s) under ${dir}\n`);
      const past = r.anchor.behind.reduce((n, b) => n + b.lines, 0);
      io.stdout.write(`  anchor: ${r.anchor.file} (${r.anchor.segments} segment head(s) recorded${past > 0 ? `; ${past} newer line(s) on open segments not yet anchored` : ''})\n`);
      for (const f of r.open) io.stdout.write(`  open (being written, or its writer crashed): ${f}\n`);
      for (const f of r.torn) io.stdout.write(`  last line cut mid-write (a crash), not counted: ${f}\n`);
    }
    return 0;
  },
};
export default command;
