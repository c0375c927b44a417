/**
 * CLI start-up: a thin command through a running daemon against `node -e 0` (the floor: Node
 * starting and exiting) and curl on the same socket (the HTTP floor), measured in the same
 * run, round-robin, N runs each (default 20), medians and p95 in ms.
 *
 *   node -e 0           the floor
 *   curl list           curl --unix-socket … /v1/runs (no Node at all)
 *   brig --version      the CLI's own start-up
 *   brig list           one run on record
 *   brig ref read       a 100-byte slice of a real run's output
 *   brig wait           an ended run
 *   … then 3,000 run records: brig list (through the daemon), brig list --limit 20, and
 *     brig list with no daemon (the records on disk, read-only);
 *   … and a one-shot `brig spawn -- true` with no daemon against `docker run --rm --network
 *     none IMAGE true` of the same child image (issue 34: ≤ 1.0×).
 *
 * Needs `make build`: `brig` is what package.json's bin names (dist/cli/brig.cjs, the thin
 * commands' bundle, which hands every other command to dist/cli/main.js). Prints figures;
 * never asserted.
 *
 *   node --import tsx bench/cli.bench.ts [N] [--thin] [--baseline OTHER/brig.cjs]
 *
 * --thin: only the thin commands and the 3,000 records (no spawn rows, no image build).
 * --baseline: another build's brig.cjs (a copy of the old dist/cli/brig.cjs), timed in the same
 * rounds beside each thin command, for a before/after under the same load.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { BenchReport, quantile, type Goal } from './report.js';

const run = promisify(execFile);
const ARGS = process.argv.slice(2);
const N = Math.max(5, Number(ARGS.find((a) => /^\d+$/.test(a)) ?? 20));
/** --thin: the thin commands and the 3,000 records only (no spawn rows, no image build): the quick loop when only the CLI's start-up changed. */
const THIN_ONLY = ARGS.includes('--thin');
/** --baseline FILE: another build's brig.cjs, timed in the same rounds as each thin command (a before/after under the same load). */
const BASELINE = ARGS.includes('--baseline') ? path.resolve(ARGS[ARGS.indexOf('--baseline') + 1] ?? '') : undefined;
const PKG = path.resolve(import.meta.dirname, '..');
/** What a user's `brig` runs: package.json's bin. */
const MAIN = path.join(PKG, (JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8')) as { bin: { brig: string } }).bin.brig);
const NODE = process.execPath;

/** The report's own quantiles (nearest rank): the printed p50 is the figure the report keeps. */
const stats = (xs: number[]) => ({ p50: quantile(xs, 0.5) ?? NaN, p95: quantile(xs, 0.95) ?? NaN });

async function rounds(variants: [string, () => Promise<unknown>][]): Promise<Map<string, number[]>> {
  for (const [, fn] of variants) await fn(); // warm-up (page cache, the daemon's first answers)
  const out = new Map(variants.map(([k]) => [k, [] as number[]]));
  for (let i = 0; i < N; i++) {
    for (const [k, fn] of variants) {
      const t0 = performance.now();
      await fn();
      out.get(k)!.push(performance.now() - t0);
    }
  }
  return out;
}

const report = new BenchReport('cli');
/** Goals on ratios to `node -e 0` (issue 34: the thin CLI through the daemon ≤ 1.3× node). */
const GOALS: Record<string, Goal> = {
  'brig --version': { ratioMax: 1.3 },
  'brig list': { ratioMax: 1.3 },
  'brig ref read': { ratioMax: 1.3 },
  'brig wait (ended run)': { ratioMax: 1.3 },
  // issue 34: over 3,000 runs, paged by default
  'brig list --json (3,000) [3,000]': { ratioMax: 2 },
  // issue 34 item 1: request → envelope printed, no daemon, the image already built
  'brig spawn -- true, no daemon [one-shot]': { ratioMax: 1 },
};

function print(title: string, res: Map<string, number[]>, floorKey: string, group: string): void {
  const floor = stats(res.get(floorKey)!).p50;
  console.log(title);
  const name = (k: string) => (group ? `${k} [${group}]` : k);
  for (const [k, xs] of res) report.samples(name(k), xs, k === floorKey ? {} : { floor: name(floorKey), ...(GOALS[name(k)] ? { goal: GOALS[name(k)]! } : {}), ...(k.startsWith('brig spawn') ? { headline: true } : {}) });
  for (const [k, xs] of res) {
    const { p50, p95 } = stats(xs);
    console.log(`  ${k.padEnd(30)} p50 ${p50.toFixed(1).padStart(7)} ms  p95 ${p95.toFixed(1).padStart(7)} ms  ×${(p50 / floor).toFixed(2)} of ${floorKey}`);
  }
}

async function daemon(home: string, args: string[] = []): Promise<ChildProcess> {
  const d = spawn(NODE, [MAIN, 'serve', ...args], { env: { ...process.env, BRIG_HOME: home }, stdio: ['ignore', 'ignore', 'pipe'] });
  const sock = path.join(home, 'brig.sock');
  for (let i = 0; i < 200; i++) {
    if (fs.existsSync(sock)) {
      const ok = await run('curl', ['-sf', '--unix-socket', sock, 'http://brig/v1/health']).then(() => true, () => false);
      if (ok) return d;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the daemon did not start');
}

async function stop(d: ChildProcess): Promise<void> {
  const exited = new Promise((r) => d.once('exit', r));
  d.kill('SIGTERM');
  await exited;
}

/** `brig spawn -- true` through a daemon (cold and warm) and one-shot without one, against `docker run --rm`. */
async function spawnRows(brig: (...args: string[]) => Promise<unknown>): Promise<void> {
  // `brig spawn -- true` end to end (the CLI, the daemon, the jail, the envelope printed),
  // through this daemon (each jail made at spawn) and one with a warm pool.
  const warmHome = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-cliw-'));
  await fs.promises.chmod(warmHome, 0o700);
  const dw = await daemon(warmHome, ['--warm', '2']);
  try {
    const warmEnv = { ...process.env, BRIG_HOME: warmHome };
    await new Promise((r) => setTimeout(r, 3000)); // the pool fills
    const spawns = await rounds([
      ['node -e 0', () => run(NODE, ['-e', '0'])],
      ['brig spawn -- true (cold)', () => brig('spawn', '--', 'true')],
      // One slot is taken per round; the cold row's ~0.4 s in between lets it refill.
      ['brig spawn -- true (--warm 2)', () => run(NODE, [MAIN, 'spawn', '--', 'true'], { env: warmEnv })],
    ]);
    print(`brig spawn -- true through a daemon (${N} runs each, round-robin)`, spawns, 'node -e 0', 'spawn');
  } finally {
    await stop(dw);
    await fs.promises.rm(warmHome, { recursive: true, force: true });
  }

  // A one-shot spawn: a home with no daemon (each spawn composes a supervisor for itself),
  // against docker run --rm of the very image the jail runs.
  const oneHome = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-cli1-'));
  await fs.promises.chmod(oneHome, 0o700);
  try {
    const oneEnv = { ...process.env, BRIG_HOME: oneHome };
    const image = (JSON.parse((await run(NODE, [MAIN, 'image', 'build', '--json'], { env: oneEnv })).stdout) as { tag: string }).tag;
    const oneShot = await rounds([
      ['docker run --rm', () => run('docker', ['run', '--rm', '--network', 'none', image, 'true'])],
      ['brig spawn -- true, no daemon', () => run(NODE, [MAIN, 'spawn', '--', 'true'], { env: oneEnv })],
    ]);
    print(`a one-shot spawn without a daemon (${N} runs each, round-robin)`, oneShot, 'docker run --rm', 'one-shot');
  } finally {
    await fs.promises.rm(oneHome, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (!fs.existsSync(MAIN)) throw new Error(`${path.relative(PKG, MAIN)} is missing: run \`make build\` first`);
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-clib-'));
  await fs.promises.chmod(home, 0o700);
  const env = { ...process.env, BRIG_HOME: home };
  const brig = (...args: string[]) => run(NODE, [MAIN, ...args], { env, maxBuffer: 64 << 20 });
  const sock = path.join(home, 'brig.sock');
  let d = await daemon(home);
  try {
    const spawned = JSON.parse((await brig('spawn', '--json', '--', 'sh', '-c', 'seq 1 100000 > out/n.txt')).stdout) as { runId: string };
    const refs = JSON.parse((await brig('ref', 'list', spawned.runId, '--json')).stdout) as { refs: { ref: string; path?: string }[] };
    const ref = refs.refs.find((r) => r.path === 'out/n.txt')?.ref ?? refs.refs[0]!.ref;
    /** Each row as `brig ARGS`, and beside it the same through --baseline's brig.cjs when given. */
    const withBaseline = (rows: [string, string[]][]): [string, () => Promise<unknown>][] =>
      rows.flatMap(([name, args]): [string, () => Promise<unknown>][] => [
        [name, () => brig(...args)],
        ...(BASELINE ? [[`${name} (baseline)`, () => run(NODE, [BASELINE, ...args], { env, maxBuffer: 64 << 20 })] as [string, () => Promise<unknown>]] : []),
      ]);
    const thinRows: [string, string[]][] = [
      ['brig --version', ['--version']],
      ['brig list', ['list']],
      ['brig ref read', ['ref', 'read', ref, '--length', '100']],
      ['brig wait (ended run)', ['wait', spawned.runId]],
    ];
    const thin = await rounds([
      ['node -e 0', () => run(NODE, ['-e', '0'])],
      ['curl list', () => run('curl', ['-sf', '--unix-socket', sock, 'http://brig/v1/runs'])],
      ...withBaseline(thinRows),
    ]);
    print(`thin commands through a daemon (${N} runs each, round-robin)`, thin, 'node -e 0', '');
    if (!THIN_ONLY) await spawnRows(brig);

    // 3,000 records: copies of the real run's directory under fresh ids, oldest first.
    await stop(d);
    const runsDir = path.join(home, 'runs');
    const src = path.join(runsDir, spawned.runId);
    const rec = JSON.parse(await fs.promises.readFile(path.join(src, 'run.json'), 'utf8')) as Record<string, unknown>;
    const t0 = Date.parse(String(rec.createdAt)) - 3_000_000;
    for (let i = 0; i < 2999; i++) {
      const id = `r-${(0x1000000000000000n + BigInt(i)).toString(16)}`;
      await fs.promises.mkdir(path.join(runsDir, id), { mode: 0o700 });
      const at = new Date(t0 + i * 1000).toISOString();
      await fs.promises.writeFile(path.join(runsDir, id, 'run.json'), JSON.stringify({ ...rec, id, rootRunId: id, path: [id], createdAt: at, startedAt: at, endedAt: at }), { mode: 0o600 });
    }
    d = await daemon(home);
    // A record the store refuses (its shape moved on) is left out of the list: count what the daemon holds
    // (the copies, the first run, and the spawn rows' runs).
    const held = (JSON.parse((await run('curl', ['-sf', '--unix-socket', sock, 'http://brig/v1/runs'], { maxBuffer: 256 << 20 })).stdout) as { runs: unknown[] }).runs.length;
    if (held < 3000) throw new Error(`the daemon holds ${held} runs, not 3,000: the copies' records no longer pass the store's check`);
    console.log(`(the daemon holds ${held} runs)`);
    const many = await rounds([
      ['node -e 0', () => run(NODE, ['-e', '0'])],
      ['curl list (3,000)', () => run('curl', ['-sf', '--unix-socket', sock, 'http://brig/v1/runs'], { maxBuffer: 256 << 20 })],
      ...withBaseline([
        ['brig list (3,000)', ['list']],
        ['brig list --limit 20', ['list', '--limit', '20']],
        ['brig list --json (3,000)', ['list', '--json']],
      ]),
      ['brig list --json --all (3,000)', () => brig('list', '--json', '--all')],
    ]);
    await stop(d);
    const noDaemon = await rounds([
      ['node -e 0', () => run(NODE, ['-e', '0'])],
      ['brig list, no daemon (3,000)', () => brig('list')],
    ]);
    print('3,000 run records', many, 'node -e 0', '3,000');
    print('3,000 run records, no daemon (read from disk)', noDaemon, 'node -e 0', '3,000 no daemon');
  } finally {
    if (d.exitCode === null) await stop(d).catch(() => {});
    await fs.promises.rm(home, { recursive: true, force: true });
  }
}

await main();
