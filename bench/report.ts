/**
 * One report per bench run. Each bench keeps its figures in a `BenchReport` (name, unit, median,
 * p95, samples, spread, the floor it is measured against and its ratio to that floor, the goal)
 * and prints them as it always did; under `bench/run.ts` (`make bench`) they are also written to
 * `$BRIG_BENCH_OUT/<bench>.json`, which the runner gathers into one JSON file for the run with
 * the machine it ran on. A phase with no samples is a figure with `n: 0` and the reason, never a
 * crash; a phase that could not run at all is a `failure` beside the figures it did get.
 *
 * Pure parts (summarize, the table, compare) are unit-tested in test/unit/bench/report.test.ts.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The shape of a sample set; every field null when there were no samples. */
export interface Summary {
  n: number;
  median: number | null;
  p95: number | null;
  p99: number | null;
  min: number | null;
  max: number | null;
  /** The interquartile range (p75 − p25): the spread a run-to-run change is judged against. */
  iqr: number | null;
}

/** A goal on a figure: a bound on its ratio to its floor, or on its own value. */
export interface Goal {
  /** ratio ≤ this */
  ratioMax?: number;
  /** median ≤ this, in the figure's unit */
  max?: number;
  /** median ≥ this, in the figure's unit (a throughput) */
  min?: number;
}

export interface Figure extends Summary {
  bench: string;
  name: string;
  unit: string;
  /** The floor figure's name in the same bench (measured in the same run), if any. */
  floor?: string;
  /** median / the floor's median; null without a floor or when either had no samples. */
  ratio?: number | null;
  goal?: Goal;
  /** Among the headline figures `make bench-quick` runs for. */
  headline?: boolean;
  /** Why a figure has no samples, or what it needs to be read right. */
  note?: string;
}

export interface Failure {
  bench: string;
  /** The phase that failed, or null when the bench could not run at all. */
  phase: string | null;
  why: string;
  /** What the phase had gathered before it failed. */
  had?: string;
}

export interface BenchFile {
  bench: string;
  figures: Figure[];
  failures: Failure[];
}

export interface Machine {
  cores: number;
  loadAtStart: number;
  kernel: string;
  engine: string | null;
  node: string;
  commit: string | null;
  /** Load average above the core count at start: the figures are noisy and the report says so. */
  busy: boolean;
}

export interface BenchStatus {
  bench: string;
  status: 'ok' | 'failed' | 'timeout';
  exitCode: number | null;
  seconds: number;
  /** The end of its stderr when it failed. */
  stderrTail?: string;
}

export interface RunReport {
  format: 'brig-bench/v1';
  startedAt: string;
  endedAt: string;
  quick: boolean;
  machine: Machine;
  benches: BenchStatus[];
  figures: Figure[];
  failures: Failure[];
}

/** The q-quantile of xs (nearest rank), null when empty. */
export function quantile(xs: readonly number[], q: number): number | null {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return null;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(s.length * q) - 1))]!;
}

export function summarize(xs: readonly number[]): Summary {
  const ok = xs.filter((x) => Number.isFinite(x));
  if (ok.length === 0) return { n: 0, median: null, p95: null, p99: null, min: null, max: null, iqr: null };
  const p25 = quantile(ok, 0.25)!;
  const p75 = quantile(ok, 0.75)!;
  return {
    n: ok.length,
    median: quantile(ok, 0.5),
    p95: quantile(ok, 0.95),
    p99: quantile(ok, 0.99),
    min: Math.min(...ok),
    max: Math.max(...ok),
    iqr: p75 - p25,
  };
}

export interface FigureOptions {
  unit?: string;
  floor?: string;
  goal?: Goal;
  headline?: boolean;
  note?: string;
}

/** The figures of one bench process; written for the runner when `BRIG_BENCH_OUT` is set. */
export class BenchReport {
  readonly figures: Figure[] = [];
  readonly failures: Failure[] = [];
  #written = false;

  constructor(readonly bench: string) {
    // Whatever ends the process — the end of main, an uncaught error — the figures gathered so
    // far reach the runner.
    process.once('exit', () => this.write());
  }

  /** A figure from its samples. An empty set is kept (n 0) with `note` saying why. */
  samples(name: string, xs: readonly number[], o: FigureOptions = {}): Figure {
    const f: Figure = { bench: this.bench, name, unit: o.unit ?? 'ms', ...summarize(xs) };
    if (o.floor !== undefined) f.floor = o.floor;
    if (o.goal !== undefined) f.goal = o.goal;
    if (o.headline) f.headline = true;
    if (o.note !== undefined) f.note = o.note;
    else if (f.n === 0) f.note = 'no samples';
    const at = this.figures.findIndex((g) => g.name === name);
    if (at >= 0) this.figures[at] = f;
    else this.figures.push(f);
    return f;
  }

  /** A figure measured once (a total, a throughput, a size). */
  value(name: string, v: number | null, o: FigureOptions = {}): Figure {
    return this.samples(name, v === null ? [] : [v], o);
  }

  /** A phase that could not finish: the other figures and benches still count. */
  failed(phase: string | null, why: unknown, had?: string): void {
    const f: Failure = { bench: this.bench, phase, why: why instanceof Error ? why.message : String(why) };
    if (had !== undefined) f.had = had;
    this.failures.push(f);
    process.stderr.write(`${this.bench}${phase ? ` / ${phase}` : ''}: failed — ${f.why}${had ? ` (had: ${had})` : ''}\n`);
  }

  /** Runs one phase; an error in it is recorded as a failure of that phase and the bench goes on. */
  async phase<T>(name: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (e) {
      this.failed(name, e);
      return undefined;
    }
  }

  /** The figure by name (its median), for a bench that prints its own lines. */
  median(name: string): number | null {
    return this.figures.find((f) => f.name === name)?.median ?? null;
  }

  file(): BenchFile {
    return { bench: this.bench, figures: withRatios(this.figures), failures: this.failures };
  }

  write(): void {
    const dir = process.env.BRIG_BENCH_OUT;
    if (!dir || this.#written) return;
    this.#written = true;
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `${this.bench}.json`), `${JSON.stringify(this.file(), null, 1)}\n`);
  }
}

/** Each figure's ratio to its floor's median (same bench), null when either has none. */
export function withRatios(figures: readonly Figure[]): Figure[] {
  return figures.map((f) => {
    if (f.floor === undefined) return f;
    const floor = figures.find((g) => g.bench === f.bench && g.name === f.floor);
    const ratio = floor?.median && f.median !== null ? f.median / floor.median : null;
    return { ...f, ratio };
  });
}

/** Met, missed, or unknown (no goal, or no figure to judge). */
export function judge(f: Figure): 'met' | 'missed' | null {
  const g = f.goal;
  if (!g) return null;
  const checks: boolean[] = [];
  if (g.ratioMax !== undefined) {
    if (f.ratio === null || f.ratio === undefined) return null;
    checks.push(f.ratio <= g.ratioMax);
  }
  if (g.max !== undefined || g.min !== undefined) {
    if (f.median === null) return null;
    if (g.max !== undefined) checks.push(f.median <= g.max);
    if (g.min !== undefined) checks.push(f.median >= g.min);
  }
  if (checks.length === 0) return null;
  return checks.every(Boolean) ? 'met' : 'missed';
}

export function goalText(g: Goal | undefined, unit: string): string {
  if (!g) return '';
  const parts: string[] = [];
  if (g.ratioMax !== undefined) parts.push(`≤ ×${g.ratioMax}`);
  if (g.max !== undefined) parts.push(`≤ ${g.max} ${unit}`);
  if (g.min !== undefined) parts.push(`≥ ${g.min} ${unit}`);
  return parts.join(', ');
}

const num = (v: number | null | undefined): string => {
  if (v === null || v === undefined) return '—';
  const a = Math.abs(v);
  return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
};

/** The machine this process runs on, read now. */
export function machineNow(): Machine {
  const cores = os.availableParallelism();
  const loadAtStart = os.loadavg()[0]!;
  const tryRun = (cmd: string, args: string[]): string | null => {
    try {
      return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim() || null;
    } catch {
      return null;
    }
  };
  return {
    cores,
    loadAtStart: Math.round(loadAtStart * 100) / 100,
    kernel: os.release(),
    engine: tryRun('docker', ['version', '--format', '{{.Server.Version}}']),
    node: process.version,
    commit: tryRun('git', ['-C', path.resolve(import.meta.dirname, '..'), 'rev-parse', '--short', 'HEAD']),
    busy: loadAtStart > cores,
  };
}

/** Rows of text, columns padded. */
function columns(rows: string[][]): string {
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i]!))).join('  ').trimEnd()).join('\n');
}

/** The report's header line: when, where, how loaded. */
export function headerLine(r: RunReport): string {
  const m = r.machine;
  const busy = m.busy ? ` — BUSY: load ${m.loadAtStart} above ${m.cores} cores at start, figures are noisy` : '';
  return `bench ${r.quick ? 'quick ' : ''}run ${r.startedAt} · ${m.cores} cores, load ${m.loadAtStart} at start, kernel ${m.kernel}, engine ${m.engine ?? 'none'}, node ${m.node}${m.commit ? `, commit ${m.commit}` : ''}${busy}`;
}

/** The closing table: every figure with a floor or a goal, beside its goal (plain text). */
export function ratioTable(r: RunReport): string {
  const rows: string[][] = [['bench', 'figure', 'median', 'p95', 'n', 'iqr', 'floor', 'ratio', 'goal', '']];
  for (const f of r.figures) {
    if (f.floor === undefined && f.goal === undefined) continue;
    const j = judge(f);
    rows.push([
      f.bench,
      f.name,
      `${num(f.median)} ${f.unit}`,
      num(f.p95),
      String(f.n),
      num(f.iqr),
      f.floor ?? '',
      f.ratio === undefined ? '' : f.ratio === null ? '—' : `×${f.ratio.toFixed(2)}`,
      goalText(f.goal, f.unit),
      j === 'met' ? 'ok' : j === 'missed' ? 'MISSED' : f.n === 0 ? (f.note ?? 'no samples') : '',
    ]);
  }
  const lines = [headerLine(r), '', columns(rows)];
  const bad = r.benches.filter((b) => b.status !== 'ok');
  for (const b of bad) lines.push(`${b.bench}: ${b.status === 'timeout' ? 'timed out' : `could not run (exit ${b.exitCode})`} after ${b.seconds.toFixed(0)} s`);
  for (const f of r.failures) lines.push(`${f.bench}${f.phase ? ` / ${f.phase}` : ''}: ${f.why}${f.had ? ` (had: ${f.had})` : ''}`);
  return lines.join('\n');
}

/** The same table as Markdown, for docs/performance.md. */
export function markdownTable(r: RunReport): string {
  const m = r.machine;
  const out = [
    `Generated by \`make bench-doc\` from \`bench/last-quiet.json\` (run ${r.startedAt}${r.quick ? ', quick' : ''}; ${m.cores} cores, load ${m.loadAtStart} at start, kernel ${m.kernel}, engine ${m.engine ?? 'none'}${m.commit ? `, commit ${m.commit}` : ''}).`,
    '',
    '| bench | figure | median | p95 | n | ratio | floor | goal | |',
    '|---|---|---:|---:|---:|---:|---|---|---|',
  ];
  for (const f of r.figures) {
    if (f.floor === undefined && f.goal === undefined) continue;
    const j = judge(f);
    out.push(
      `| ${f.bench} | ${f.name} | ${num(f.median)} ${f.unit} | ${num(f.p95)} | ${f.n} | ${f.ratio === undefined ? '' : f.ratio === null ? '—' : `×${f.ratio.toFixed(2)}`} | ${f.floor ?? ''} | ${goalText(f.goal, f.unit)} | ${j === 'met' ? 'met' : j === 'missed' ? '**missed**' : ''} |`,
    );
  }
  return out.join('\n');
}

export interface Change {
  bench: string;
  name: string;
  unit: string;
  before: number | null;
  after: number | null;
  /** (after − before) / before, null when either is missing. */
  change: number | null;
  /** The change is larger than the figures' own spread (the larger of the two IQRs). */
  moved: boolean;
  /** Only in one of the reports. */
  only?: 'before' | 'after';
}

/** Per figure, the change from a to b, marking those that moved past their own spread. */
export function compareReports(a: Pick<RunReport, 'figures'>, b: Pick<RunReport, 'figures'>): Change[] {
  const key = (f: Figure) => `${f.bench}\u0000${f.name}`;
  const bs = new Map(b.figures.map((f) => [key(f), f]));
  const out: Change[] = [];
  for (const fa of a.figures) {
    const fb = bs.get(key(fa));
    bs.delete(key(fa));
    if (!fb) {
      out.push({ bench: fa.bench, name: fa.name, unit: fa.unit, before: fa.median, after: null, change: null, moved: false, only: 'before' });
      continue;
    }
    const before = fa.median;
    const after = fb.median;
    const change = before !== null && after !== null && before !== 0 ? (after - before) / before : null;
    const spread = Math.max(fa.iqr ?? 0, fb.iqr ?? 0);
    // One sample each has no spread of its own: a change of a tenth is the least we call a move.
    const moved = before !== null && after !== null && Math.abs(after - before) > Math.max(spread, (fa.n < 2 || fb.n < 2 ? 0.1 : 0) * Math.abs(before));
    out.push({ bench: fa.bench, name: fa.name, unit: fa.unit, before, after, change, moved });
  }
  for (const fb of bs.values()) out.push({ bench: fb.bench, name: fb.name, unit: fb.unit, before: null, after: fb.median, change: null, moved: false, only: 'after' });
  return out;
}

export function compareTable(changes: readonly Change[]): string {
  const rows: string[][] = [['bench', 'figure', 'before', 'after', 'change', '']];
  for (const c of changes) {
    rows.push([
      c.bench,
      c.name,
      `${num(c.before)} ${c.unit}`,
      `${num(c.after)} ${c.unit}`,
      c.change === null ? '' : `${c.change >= 0 ? '+' : ''}${(c.change * 100).toFixed(1)}%`,
      c.only ? `only ${c.only}` : c.moved ? 'MOVED (past its spread)' : '',
    ]);
  }
  return columns(rows);
}

export function parseRunReport(text: string, where: string): RunReport {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`${where}: not JSON (${(e as Error).message}); pass a report written by \`make bench\` (bench/reports/*.json)`);
  }
  const r = v as Partial<RunReport>;
  if (r?.format !== 'brig-bench/v1' || !Array.isArray(r.figures)) throw new Error(`${where}: not a brig bench report (format brig-bench/v1 with figures); pass a report written by \`make bench\` (bench/reports/*.json)`);
  return r as RunReport;
}
