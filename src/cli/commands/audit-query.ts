import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, numberFlag, writeJson, type Command } from '../command.js';
import { withBrig } from '../connect.js';

const command: Command = {
  name: 'audit query',
  summary: 'Run one read-only SQL SELECT over the ledger (view `ledger`), locked down like the slicer.',
  usage: "brig audit query 'SELECT … FROM ledger …' [--max-rows N] [--json]",
  flags: [{ name: 'max-rows', value: 'N', description: 'at most N rows back (default 1000)' }, JSON_FLAG],
  examples: ["brig audit query 'SELECT type, count(*) FROM ledger GROUP BY type'"],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const sql = p.positionals.join(' ').trim();
    if (!sql) throw new BrigError('invalid_input', 'give a SELECT over the view `ledger`', { hint: command.usage });
    // Only the ledger segments are readable; the helper enforces the same lockdown as `brig ref sql`.
    // An empty ledger is refused (invalid_input) before any helper starts.
    const res = await withBrig(io, (brig) => brig.operator.audit.query(sql, numberFlag(p, 'max-rows') ?? 1000));
    if (!res.ok) {
      const e = res.error;
      // The guard speaks of "this ref" (the slicer's words); here the one readable thing is the ledger.
      if (e.code === 'query_refused') throw new BrigError('query_refused', e.message.replace(/this ref: pass its id/g, 'the ledger: query the view `ledger`'), { hint: 'Only one SELECT over the view `ledger` is allowed.' });
      throw e;
    }
    const r = res.value;
    if (p.bools.has('json')) {
      writeJson(io, { columns: r.columns, rows: r.rows, truncated: r.truncated });
      return 0;
    }
    const cells = (row: unknown[]) => row.map((v) => (v === null ? 'NULL' : typeof v === 'object' ? JSON.stringify(v) : String(v)));
    const table = [r.columns, ...r.rows.map(cells)];
    const widths = r.columns.map((_, i) => Math.min(60, Math.max(...table.map((row) => (row[i] ?? '').length))));
    for (const row of table) io.stdout.write(row.map((c, i) => c.slice(0, 60).padEnd(widths[i]!)).join('  ').trimEnd() + '\n');
    if (r.truncated) io.stdout.write(`… truncated at ${r.rows.length} rows (--max-rows)\n`);
    return 0;
  },
};
export default command;
