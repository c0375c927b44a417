/**
 * Runs the test tiers (test/tiers/tiers.ts) in order and times each against its budget; then
 * prints one summary table and every skipped test with its reason. Exits non-zero when a file
 * fails or a tier passes its budget.
 *
 *   node --import tsx test/tiers/run.ts [unit] [integration] [long] [k8s] [--area NAME] [--file-timeout S]
 *
 * Why a runner of our own and not one `node --test` over every file: node's runner has no
 * budget, no "this file runs alone", no per-file wall time, and Node 20 has no
 * --test-isolation=none to spare each unit file its start-up (tsx and the library's imports:
 * about a second of CPU a file, most of the unit tier). So:
 * - a file of its own runs in a process of its own, as `node --import tsx --test-reporter=tap`
 *   would run it (what `node --test` runs in its child anyway, without a second node that
 *   loads tsx only to spawn it); the process is started while other files run, with tsx and
 *   the file's imports already loaded (test/tiers/worker.ts --single);
 * - a shared tier's files go one at a time to `concurrency` worker processes
 *   (test/tiers/worker.ts), each file a suite of its own in the worker's TAP.
 * Integration and long files keep a process each: they start daemons, send signals, change
 * their environment, and count on a process that ends with them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { emptyCounts, parseTap, tapSummary, topLevelSections, type FileCounts, type Skip } from './tap.js';
import { filesOf, ROOT, TIERS, type Tier, type TierName } from './tiers.js';

interface FileResult {
  file: string;
  ok: boolean;
  wallS: number;
  counts: FileCounts;
  skips: Skip[];
  failed: string[];
  why?: string;
  /** Its TAP, printed whole when it failed. */
  tap: string;
}

interface TierResult {
  tier: Tier;
  files: FileResult[];
  wallS: number;
  /** The machine's 1-minute load average over the tier (sampled): how much else it was doing. */
  load: number;
}

interface Args {
  tiers: TierName[];
  area?: string;
  fileTimeoutS: number;
}

function parseArgs(argv: string[]): Args {
  const tiers: TierName[] = [];
  let area: string | undefined;
  let fileTimeoutS = 600;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--area') area = argv[++i];
    else if (a === '--file-timeout') fileTimeoutS = Number(argv[++i]);
    else if (TIERS.some((t) => t.name === a)) tiers.push(a as TierName);
    else throw new Error(`unknown argument ${a} (tiers: ${TIERS.map((t) => t.name).join(', ')}; --area NAME; --file-timeout S)`);
  }
  return { tiers: tiers.length > 0 ? tiers : TIERS.map((t) => t.name), ...(area ? { area } : {}), fileTimeoutS };
}

const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-tiers-'));
/** The TAP directories kept for reading after a run: this one and the newest few before it (one per run piled up in /tmp). */
const KEEP_LOG_DIRS = 5;
pruneLogDirs(path.dirname(logDir), KEEP_LOG_DIRS);

function pruneLogDirs(dir: string, keep: number): void {
  const old = fs
    .readdirSync(dir)
    .filter((n) => n.startsWith('brig-tiers-'))
    .map((n) => path.join(dir, n))
    .flatMap((p) => {
      try {
        return [{ p, at: fs.statSync(p).mtimeMs }];
      } catch {
        return [];
      }
    })
    .sort((a, b) => b.at - a.at)
    .slice(keep);
  for (const { p } of old) if (p !== logDir) fs.rmSync(p, { recursive: true, force: true });
}
const LOADER = ['--import', 'tsx', '--test-reporter=tap'];
const LINGER_S = 20;

function start(args: string[], ipc: boolean): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [...LOADER, ...args], {
    cwd: ROOT,
    env: process.env,
    stdio: ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: a timeout ends whatever it started too
  });
  const out: Buffer[] = [];
  child.stdout!.on('data', (d: Buffer) => out.push(d));
  child.stderr!.on('data', (d: Buffer) => out.push(d));
  return { child, output: () => Buffer.concat(out).toString('utf8') };
}

function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
}

function keep(r: FileResult): FileResult {
  fs.writeFileSync(path.join(logDir, `${r.file.replace(/\//g, '_')}.tap`), r.tap);
  const skipped = r.counts.skipped > 0 ? `, ${r.counts.skipped} skipped` : '';
  process.stdout.write(`${r.ok ? '  ok  ' : 'FAIL  '} ${r.wallS.toFixed(1).padStart(6)} s  ${r.file}  (${r.counts.tests} tests${skipped})\n`);
  if (!r.ok) {
    process.stdout.write(`----- ${r.file}: ${r.why}\n${r.failed.map((f) => `  not ok: ${f}\n`).join('')}`);
    process.stdout.write(r.tap.replace(/^/gm, '  | '));
    process.stdout.write(`\n----- end of ${r.file}\n`);
  }
  return r;
}

/** What a file's own process said: its TAP, counted, and why it failed if it did. */
function ownResult(file: string, t0: number, tap: string, code: number | null, signal: NodeJS.Signals | null, timedOut: boolean, timeoutS: number): FileResult {
  const { counts, skips, failed } = parseTap(tap);
  let why: string | undefined;
  if (timedOut) why = `killed after ${timeoutS} s (--file-timeout)`;
  else if (code !== 0) why = `exited ${code ?? signal}`;
  else if (!tapSummary(tap)) why = 'ended without its TAP summary';
  else if (counts.fail + counts.cancelled > 0) why = `${counts.fail} failed, ${counts.cancelled} cancelled`;
  return keep({ file, ok: why === undefined, wallS: (performance.now() - t0) / 1000, counts, skips, failed, tap, ...(why ? { why } : {}) });
}

function settle(child: ChildProcess, timeoutS: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; timedOut: boolean }> {
  let timedOut = false;
  const timer = setTimeout(() => ((timedOut = true), killGroup(child)), timeoutS * 1000);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, timedOut });
    });
  });
}

/** A file in a process of its own, started now. */
async function runOwn(file: string, timeoutS: number): Promise<FileResult> {
  const t0 = performance.now();
  const { child, output } = start([file], false);
  const { code, signal, timedOut } = await settle(child, timeoutS);
  return ownResult(file, t0, output(), code, signal, timedOut, timeoutS);
}

/**
 * What `file` imports (static imports, in order; `import type` left out): relative ones as
 * absolute paths (`.js` → the `.ts` beside it), packages by name. Its process loads these
 * while another file runs, so that when its turn comes only its own body is left to load.
 */
export function importsOf(file: string): string[] {
  const abs = path.join(ROOT, file);
  const text = fs.readFileSync(abs, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^import\s+(?!type\s)(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gm)) {
    const spec = m[1]!;
    if (spec.startsWith('node:')) continue;
    if (!spec.startsWith('.')) {
      out.push(spec);
      continue;
    }
    const target = path.resolve(path.dirname(abs), spec);
    const ts = target.replace(/\.js$/, '.ts');
    out.push(fs.existsSync(ts) ? ts : target);
  }
  return out;
}

/** A process for one file (test/tiers/worker.ts --single), started ahead: ready once it has loaded the file's imports. */
interface Prepared {
  file: string;
  child: ChildProcess;
  output: () => string;
  ready: Promise<boolean>;
}

function prepare(file: string): Prepared {
  const { child, output } = start([path.join(ROOT, 'test/tiers/worker.ts'), '--single', ...importsOf(file).flatMap((m) => ['--preload', m])], true);
  const ready = new Promise<boolean>((resolve) => {
    child.once('message', () => resolve(true));
    child.once('close', () => resolve(false));
  });
  return { file, child, output, ready };
}

/** Runs a prepared file (one whose process died preparing runs cold instead, and says why itself). */
async function runPrepared(p: Prepared, timeoutS: number): Promise<FileResult> {
  const t0 = performance.now();
  if (!(await p.ready)) return runOwn(p.file, timeoutS);
  const settled = settle(p.child, timeoutS);
  p.child.send({ file: p.file });
  const { code, signal, timedOut } = await settled;
  return ownResult(p.file, t0, p.output(), code, signal, timedOut, timeoutS);
}

/**
 * Files a process each. Up to `ahead` of them are prepared while others run; a free slot
 * takes the next prepared one (or prepares one now), then tops the prepared ones up again.
 */
async function drainOwn(queue: string[], prepared: Prepared[], ahead: number, timeoutS: number, results: FileResult[]): Promise<void> {
  for (;;) {
    const next = prepared.shift() ?? (queue.length > 0 ? prepare(queue.shift()!) : undefined);
    if (!next) return;
    while (prepared.length < ahead && queue.length > 0) prepared.push(prepare(queue.shift()!));
    results.push(await runPrepared(next, timeoutS));
  }
}

/**
 * One shared worker draining the queue a file at a time. When it dies or a file passes the
 * timeout, that file fails and a fresh worker takes the rest of the queue.
 */
async function drainShared(queue: string[], timeoutS: number, results: FileResult[]): Promise<void> {
  while (queue.length > 0) {
    const { child, output } = start([path.join(ROOT, 'test/tiers/worker.ts')], true);
    const sent = new Map<string, number>();
    const walls = new Map<string, number>();
    let current: string | undefined;
    let timer: NodeJS.Timeout | undefined;
    let timedOut: string | undefined;
    const next = () => {
      clearTimeout(timer);
      current = queue.shift();
      if (current === undefined) {
        // Its files are done; a handle one of them left open must not hold the tier.
        timer = setTimeout(() => {
          process.stdout.write(`   (a shared process was still up ${LINGER_S} s after its last file: a test left a handle open; ended)\n`);
          killGroup(child);
        }, LINGER_S * 1000);
        return void child.send({ end: true });
      }
      sent.set(current, performance.now());
      const f = current;
      timer = setTimeout(() => ((timedOut = f), killGroup(child)), timeoutS * 1000);
      child.send({ file: current });
    };
    child.on('message', (m: { ready?: true; done?: string }) => {
      if (m.done) walls.set(m.done, (performance.now() - sent.get(m.done)!) / 1000);
      next();
    });
    const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (c, s) => resolve({ code: c, signal: s })));
    clearTimeout(timer);
    const tap = output();
    if (sent.size === 0) {
      // It never took a file: whatever stopped it would stop the next one too.
      for (const file of queue.splice(0)) results.push(keep({ file, ok: false, wallS: 0, counts: emptyCounts(), skips: [], failed: [], tap, why: `the shared process did not start (${code ?? signal})` }));
      return;
    }
    const sections = new Map(topLevelSections(tap).map((s) => [s.name, s]));
    for (const [file, t0] of sent) {
      const s = sections.get(file);
      const done = walls.has(file);
      const { counts, skips, failed } = s ? parseTap(s.body) : { counts: emptyCounts(), skips: [], failed: [] };
      let why: string | undefined;
      if (timedOut === file) why = `killed after ${timeoutS} s (--file-timeout)`;
      else if (!done) why = `its shared process ended (${code ?? signal}) while it ran`;
      else if (!s) why = 'no TAP section of its own in the shared process';
      else if (!s.ok) why = failed.length > 0 ? `${counts.fail} failed, ${counts.cancelled} cancelled` : `its suite failed: ${s.tail.split('\n').find((l) => /^\s+error:/.test(l))?.trim() ?? 'see TAP'}`;
      const wallS = walls.get(file) ?? (performance.now() - t0) / 1000;
      results.push(keep({ file, ok: why === undefined, wallS, counts, skips, failed, tap: s ? `${s.body}\n${s.tail}` : tap, ...(why ? { why } : {}) }));
    }
  }
}

/** `alone` files one by one, then the rest `concurrency` at a time, startFirst ones first. */
async function runTier(tier: Tier, files: string[], timeoutS: number): Promise<TierResult> {
  const how = tier.shared ? `${tier.concurrency} shared processes` : `${tier.concurrency} at a time, a process each`;
  process.stdout.write(`\n== ${tier.name}: ${files.length} files, ${how}, budget ${tier.budgetS} s — ${tier.what}\n`);
  const t0 = performance.now();
  const loads = [os.loadavg()[0]!];
  const sampler = setInterval(() => loads.push(os.loadavg()[0]!), 5000).unref();
  const results: FileResult[] = [];
  const alone = files.filter((f) => f in tier.alone);
  for (const f of alone) {
    process.stdout.write(`   (alone: ${f} — ${tier.alone[f]})\n`);
    results.push(await runOwn(f, timeoutS));
  }
  const first = tier.startFirst.filter((f) => files.includes(f) && !alone.includes(f));
  const rest = [...first, ...files.filter((f) => !alone.includes(f) && !first.includes(f))];
  const own = tier.shared ? rest.filter((f) => f in tier.ownProcess) : rest;
  const shared = tier.shared ? rest.filter((f) => !(f in tier.ownProcess)) : [];
  // Own-process files first (in a shared tier they are few), then the shared queue; a slot
  // that is free takes whichever is next.
  const prepared: Prepared[] = [];
  const slot = async () => {
    await drainOwn(own, prepared, tier.concurrency, timeoutS, results);
    await drainShared(shared, timeoutS, results);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(tier.concurrency, rest.length)) }, slot));
  clearInterval(sampler);
  results.sort((a, b) => a.file.localeCompare(b.file));
  return { tier, files: results, wallS: (performance.now() - t0) / 1000, load: loads.reduce((a, b) => a + b, 0) / loads.length };
}

function sum(rs: FileResult[], k: keyof FileCounts): number {
  return rs.reduce((n, r) => n + r.counts[k], 0);
}

function row(name: string, files: FileResult[], wallS: number, budgetS: number, status: string): string[] {
  return [name, files.length, sum(files, 'tests'), sum(files, 'pass'), sum(files, 'fail') + sum(files, 'cancelled'), sum(files, 'skipped'), wallS.toFixed(1), budgetS, status].map(String);
}

function summary(results: TierResult[]): boolean {
  const cores = os.availableParallelism();
  // The suite itself keeps the load near 2× the cores (files, their jails, the engine); well
  // past that, something else ran too: a tier over its budget then says so and does not fail.
  const busy = (r: TierResult) => r.load > cores * 3;
  const status = (r: TierResult) => {
    const failedFiles = r.files.filter((f) => !f.ok).length;
    if (failedFiles > 0) return `FAIL (${failedFiles} file${failedFiles > 1 ? 's' : ''})`;
    if (r.wallS <= r.tier.budgetS) return 'ok';
    return busy(r) ? 'over budget (busy machine)' : 'OVER BUDGET';
  };
  const all = results.flatMap((r) => r.files);
  const ok = results.every((r) => ['ok', 'over budget (busy machine)'].includes(status(r)));
  const total = row('total', all, results.reduce((n, r) => n + r.wallS, 0), results.reduce((n, r) => n + r.tier.budgetS, 0), ok ? 'ok' : 'FAIL');
  const table = [['tier', 'files', 'tests', 'pass', 'fail', 'skipped', 'wall s', 'budget s', ''], ...results.map((r) => row(r.tier.name, r.files, r.wallS, r.tier.budgetS, status(r))), total];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((cells) => cells[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 || i === cells.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  const out: string[] = [`\n== summary (the TAP of every file: ${logDir})`, line(table[0]!), widths.map((w) => '-'.repeat(w)).join('  ').trimEnd()];
  for (const cells of table.slice(1)) out.push(line(cells));
  const skips = all.flatMap((f) => f.skips.map((s) => ({ file: f.file, ...s })));
  if (skips.length > 0) {
    out.push('', `skipped (${skips.length}), each with the reason it gave:`);
    for (const s of skips) out.push(`  ${s.file}: ${s.name}`, `      # SKIP ${s.reason}`);
  }
  out.push('', `load average while each tier ran (${cores} cores): ${results.map((r) => `${r.tier.name} ${r.load.toFixed(1)}`).join(', ')}`);
  for (const r of results) {
    if (r.wallS <= r.tier.budgetS) continue;
    out.push('', `tier ${r.tier.name} took ${r.wallS.toFixed(1)} s, over its budget of ${r.tier.budgetS} s (test/tiers/tiers.ts)`);
    if (busy(r)) out.push(`  (load ${r.load.toFixed(1)} on ${cores} cores: the machine was busy with other work too, so this does not fail the run — run it again on a quiet one to tell a slower suite from a busy machine)`);
    else out.push(`  (load ${r.load.toFixed(1)} on ${cores} cores: the suite's own; a file grew slower, or the tier needs a new budget)`);
  }
  const failed = all.filter((f) => !f.ok);
  if (failed.length > 0) out.push('', 'failed files:', ...failed.flatMap((f) => [`  ${f.file}: ${f.why}`, ...f.failed.map((t) => `      not ok: ${t}`)]));
  process.stdout.write(`${out.join('\n')}\n`);
  return ok;
}

const args = parseArgs(process.argv.slice(2));
const results: TierResult[] = [];
for (const name of args.tiers) {
  const tier = TIERS.find((t) => t.name === name)!;
  const files = filesOf(name).filter((f) => !args.area || f.split('/')[2] === args.area);
  if (files.length === 0) continue;
  results.push(await runTier(tier, files, args.fileTimeoutS));
}
process.exitCode = summary(results) ? 0 : 1;
