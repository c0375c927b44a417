/**
 * bench/report.ts and bench/run.ts's pure parts: a phase with no samples is a figure, never a
 * crash (health-under-flood died on one); a bench that throws still leaves what it measured;
 * compare marks what moved past its own spread; docs/performance.md's table is the kept report's.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { BenchReport, compareReports, compareTable, judge, markdownTable, parseRunReport, quantile, ratioTable, summarize, withRatios, type Figure, type RunReport } from '../../../bench/report.js';
import { DOC, docBlock, docWithTable, LAST_QUIET, NONE_KEPT } from '../../../bench/run.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../../..');

function reportOf(figures: Figure[], over: Partial<RunReport> = {}): RunReport {
  return {
    format: 'brig-bench/v1',
    startedAt: '2026-12-02T10:00:00.000Z',
    endedAt: '2026-12-02T10:05:00.000Z',
    quick: false,
    machine: { cores: 2, loadAtStart: 0.5, kernel: '6.18', engine: '20.10.24', node: 'v20', commit: 'abc1234', busy: false },
    benches: [{ bench: 'x', status: 'ok', exitCode: 0, seconds: 3 }],
    figures,
    failures: [],
    ...over,
  };
}

test('quantiles are nearest-rank and summarize keeps the spread', () => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(quantile(xs, 0.5), 50);
  assert.equal(quantile(xs, 0.95), 95);
  assert.equal(quantile(xs, 1), 100);
  const s = summarize([5, 1, 3, Number.NaN]);
  assert.deepEqual([s.n, s.median, s.min, s.max], [3, 3, 1, 5]);
  assert.equal(s.iqr, 5 - 1);
});

test('a phase with no samples is a figure with n 0 and a reason, its ratio null, the table still printed', () => {
  const r = new BenchReport('health-under-flood');
  r.samples('quiet', [1, 2, 3]);
  const empty = r.samples('flooding', [], { floor: 'quiet', goal: { ratioMax: 2 }, note: 'no samples: the flooder ended before the first' });
  assert.equal(empty.n, 0);
  assert.equal(empty.median, null);
  assert.equal(r.samples('other', []).note, 'no samples');
  const figures = r.file().figures;
  const flooding = figures.find((f) => f.name === 'flooding')!;
  assert.equal(flooding.ratio, null);
  assert.equal(judge(flooding), null, 'no figure: neither met nor missed');
  const table = ratioTable(reportOf(figures));
  assert.match(table, /flooding .*— .*no samples: the flooder ended/);
  assert.match(markdownTable(reportOf(figures)), /\| health-under-flood \| flooding \| — ms \|/);
});

test('ratios are against the floor of the same bench, and goals are judged on them', () => {
  const f = withRatios([
    { bench: 'a', name: 'floor', unit: 'ms', ...summarize([100, 100, 100]) },
    { bench: 'a', name: 'ours', unit: 'ms', floor: 'floor', goal: { ratioMax: 1.15 }, ...summarize([110, 110, 110]) },
    { bench: 'a', name: 'slow', unit: 'ms', floor: 'floor', goal: { ratioMax: 1.15 }, ...summarize([200]) },
    { bench: 'b', name: 'abs', unit: 'ms', goal: { max: 30 }, ...summarize([31]) },
    { bench: 'b', name: 'rate', unit: 'tokens/s', goal: { min: 10 }, ...summarize([12]) },
  ]);
  assert.equal(f[1]!.ratio, 1.1);
  assert.equal(judge(f[1]!), 'met');
  assert.equal(judge(f[2]!), 'missed');
  assert.equal(judge(f[3]!), 'missed');
  assert.equal(judge(f[4]!), 'met');
  const table = ratioTable(reportOf(f));
  assert.match(table, /ours .*×1\.10 .*≤ ×1\.15 +ok/);
  assert.match(table, /slow .*×2\.00 .*MISSED/);
});

test('a busy machine says so in the header; a bench that could not run is listed with the others', () => {
  const busy = reportOf([], {
    machine: { cores: 2, loadAtStart: 5.2, kernel: '6.18', engine: null, node: 'v20', commit: null, busy: true },
    benches: [{ bench: 'spawn', status: 'failed', exitCode: 1, seconds: 4 }, { bench: 'cli', status: 'timeout', exitCode: null, seconds: 180 }],
    failures: [{ bench: 'engine-outage', phase: 'drain', why: 'serve did not exit' }],
  });
  const t = ratioTable(busy);
  assert.match(t, /BUSY: load 5\.2 above 2 cores/);
  assert.match(t, /spawn: could not run \(exit 1\)/);
  assert.match(t, /cli: timed out/);
  assert.match(t, /engine-outage \/ drain: serve did not exit/);
});

test('a bench that throws after measuring still leaves its figures for the runner', async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-bench-unit-'));
  try {
    const script = `import { BenchReport } from ${JSON.stringify(path.join(ROOT, 'bench/report.ts'))};
const r = new BenchReport('dies');
r.samples('measured', [1, 2, 3]);
await r.phase('bad phase', async () => { throw new Error('engine gone'); });
throw new Error('the bench died');`;
    const file = path.join(out, 'dies.mts');
    fs.writeFileSync(file, script);
    const err = await run(process.execPath, ['--import', 'tsx', file], { env: { ...process.env, BRIG_BENCH_OUT: out } }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    assert.ok(err, 'the bench process fails');
    assert.match(err.stderr, /the bench died/);
    const got = JSON.parse(fs.readFileSync(path.join(out, 'dies.json'), 'utf8')) as { figures: Figure[]; failures: { phase: string; why: string }[] };
    assert.deepEqual(got.figures.map((f) => [f.name, f.n, f.median]), [['measured', 3, 2]]);
    assert.deepEqual(got.failures, [{ bench: 'dies', phase: 'bad phase', why: 'engine gone' }]);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

test('compare marks the figures that moved past their own spread, and those only in one run', () => {
  const a = reportOf([
    { bench: 'w', name: 'steady', unit: 'ms', ...summarize([90, 100, 110, 100]) },
    { bench: 'w', name: 'faster', unit: 'ms', ...summarize([99, 100, 101, 100]) },
    { bench: 'w', name: 'gone', unit: 'ms', ...summarize([1]) },
    { bench: 'w', name: 'once', unit: 'ms', ...summarize([100]) },
  ]);
  const b = reportOf([
    { bench: 'w', name: 'steady', unit: 'ms', ...summarize([95, 105, 112, 104]) },
    { bench: 'w', name: 'faster', unit: 'ms', ...summarize([59, 60, 61, 60]) },
    { bench: 'w', name: 'once', unit: 'ms', ...summarize([105]) },
    { bench: 'w', name: 'new', unit: 'ms', ...summarize([7]) },
  ]);
  const c = compareReports(a, b);
  const by = (n: string) => c.find((x) => x.name === n)!;
  assert.equal(by('steady').moved, false, 'within its IQR');
  assert.equal(by('faster').moved, true);
  assert.ok(Math.abs(by('faster').change! + 0.4) < 1e-9);
  assert.equal(by('once').moved, false, 'one sample: 5 % is under the tenth we call a move');
  assert.equal(by('gone').only, 'before');
  assert.equal(by('new').only, 'after');
  const t = compareTable(c);
  assert.match(t, /faster .*-40\.0% +MOVED/);
  assert.match(t, /new .*only after/);
});

test('compare refuses a file that is not a report, saying what to pass', () => {
  assert.throws(() => parseRunReport('{"x":1}', 'a.json'), /a\.json: not a brig bench report.*make bench/);
  assert.throws(() => parseRunReport('nope', 'b.json'), /b\.json: not JSON/);
});

test("docs/performance.md's table is the kept quiet run's, generated, not typed", () => {
  const doc = fs.readFileSync(DOC, 'utf8');
  const block = docBlock(doc);
  assert.ok(block !== null, 'docs/performance.md has the generated block');
  const kept = fs.existsSync(LAST_QUIET) ? parseRunReport(fs.readFileSync(LAST_QUIET, 'utf8'), LAST_QUIET) : null;
  assert.equal(block, kept ? markdownTable(kept) : NONE_KEPT, 'run `make bench-doc` after keeping a run');
  if (kept) assert.equal(kept.machine.busy, false, 'the kept run is a quiet one');
  // The writer round-trips: what it writes is what the check reads back.
  const r = reportOf([{ bench: 'a', name: 'x', unit: 'ms', goal: { max: 1 }, ...summarize([2]) }]);
  assert.equal(docBlock(docWithTable(doc, r)), markdownTable(r));
});
