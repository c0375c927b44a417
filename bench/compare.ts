/**
 * `node --import tsx bench/compare.ts A.json B.json`: the change of every figure from run A to
 * run B (reports written by `make bench`), marking those that moved past their own spread (the
 * larger interquartile range of the two runs). Exit 0; 2 when a file is not a report.
 */
import fs from 'node:fs';
import path from 'node:path';
import { compareReports, compareTable, headerLine, parseRunReport } from './report.js';

if (import.meta.filename === path.resolve(process.argv[1] ?? '')) {
  const [a, b] = process.argv.slice(2);
  try {
    if (!a || !b) throw new Error('usage: bench/compare.ts A.json B.json (reports written by `make bench` under bench/reports/)');
    const ra = parseRunReport(fs.readFileSync(a, 'utf8'), a);
    const rb = parseRunReport(fs.readFileSync(b, 'utf8'), b);
    console.log(`A: ${headerLine(ra)}\nB: ${headerLine(rb)}\n`);
    const changes = compareReports(ra, rb);
    console.log(compareTable(changes));
    const moved = changes.filter((c) => c.moved).length;
    console.log(`\n${moved} of ${changes.length} figures moved past their own spread`);
  } catch (e) {
    console.error(`compare: ${(e as Error).message}`);
    process.exitCode = 2;
  }
}
