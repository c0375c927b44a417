import type { SliceOutput } from '../../light.js';
import { BrigError, type Result } from '../../util/errors.js';
import { type CliIO, type ParsedArgs, writeJson } from '../command.js';

export { withBrig } from '../connect.js';

/** Prints a slice (text, or a table for rows) and its "N more" note; throws a refusal. */
export function printSlice(io: CliIO, p: ParsedArgs, res: Result<SliceOutput>): number {
  if (!res.ok) throw res.error;
  const s = res.value;
  if (p.bools.has('json')) {
    writeJson(io, s);
    return 0;
  }
  if (s.rows && s.columns) {
    const cell = (v: unknown) => (v === null ? 'NULL' : typeof v === 'object' ? JSON.stringify(v) : String(v));
    const table = [s.columns, ...s.rows.map((r) => r.map(cell))];
    const widths = s.columns.map((_, i) => Math.min(60, Math.max(...table.map((row) => (row[i] ?? '').length))));
    for (const row of table) io.stdout.write(`${row.map((c, i) => c.slice(0, 60).padEnd(widths[i]!)).join('  ').trimEnd()}\n`);
  } else if (s.text !== undefined) {
    io.stdout.write(s.text.endsWith('\n') || s.text.length === 0 ? s.text : `${s.text}\n`);
  }
  if (s.note) io.stderr.write(`… ${s.note}\n`);
  return 0;
}

export function needPositionals(p: ParsedArgs, n: number, usage: string): string[] {
  if (p.positionals.length < n) {
    throw new BrigError('invalid_input', 'missing arguments', { hint: `Usage: ${usage}` });
  }
  return p.positionals;
}
