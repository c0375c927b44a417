/**
 * bench/slice: brig's slicing and materialization against their raw floors, in one run.
 *
 *   sql     Slicer.sql (warm helper pool, guard + fresh locked instance)  vs  DuckDB in-process
 *   grep    Slicer.grep                                                    vs  GNU grep
 *   jq      Slicer.jq                                                      vs  Debian jq
 *   read    line 2,500,000 via the sparse line index (ms)
 *   write   materializing a 1 GB output (hash + line index + kind)         vs  cp
 *   RSS     peak of this (supervisor) process while materializing, and of the helper
 *
 * The data (300 MB / 3 M lines of JSONL, and 1 GB for materialization) is generated
 * deterministically and cached under bench/out/ (gitignored).
 * Run: node --import tsx bench/slice.bench.ts   (or `make bench`)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { FsResultStore } from '../src/results/index.js';
import { DuckdbHelperPool, Slicer } from '../src/slice/index.js';

const OUT = path.resolve(import.meta.dirname, 'out');
const DATA = path.join(OUT, 'events-3m.jsonl');
const BIG = path.join(OUT, 'big-1g.jsonl');
const LINES = 3_000_000;

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function generate(): Promise<void> {
  await fsp.mkdir(OUT, { recursive: true });
  if (!fs.existsSync(DATA) || fs.statSync(DATA).size < 250e6) {
    const r = rng(42);
    const w = fs.createWriteStream(DATA);
    const kinds = ['click', 'view', 'purchase', 'error', 'signup', 'logout', 'search'];
    let buf = '';
    for (let i = 0; i < LINES; i++) {
      const kind = kinds[Math.floor(r() * kinds.length)]!;
      const value = Math.round(r() * 100000) / 100;
      const user = `u${String(Math.floor(r() * 5000)).padStart(5, '0')}`;
      buf += `{"id":${i},"ts":"2026-01-${String((i % 28) + 1).padStart(2, '0')}T00:00:00Z","kind":"${kind}","user":"${user}","value":${value},"msg":"event ${i} from ${user} ${'x'.repeat(i % 11)}"}\n`;
      if (buf.length > 1 << 20) {
        if (!w.write(buf)) await new Promise<void>((res) => w.once('drain', () => res()));
        buf = '';
      }
    }
    w.write(buf);
    await new Promise<void>((res) => w.end(res));
  }
  if (!fs.existsSync(BIG) || fs.statSync(BIG).size < 1e9) {
    const w = fs.createWriteStream(BIG);
    let n = 0;
    while (n < 1e9) {
      for await (const chunk of fs.createReadStream(DATA, { highWaterMark: 1 << 20 })) {
        if (!w.write(chunk)) await new Promise<void>((res) => w.once('drain', () => res()));
        n += (chunk as Buffer).length;
        if (n >= 1e9) break;
      }
    }
    await new Promise<void>((res) => w.end(res));
  }
}

async function time<T>(fn: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

async function best<T>(n: number, fn: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  let out: { ms: number; value: T } | undefined;
  for (let i = 0; i < n; i++) {
    const r = await time(fn);
    if (!out || r.ms < out.ms) out = r;
  }
  return out!;
}

function vmHwmKb(pid: number | 'self'): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

function cmdMs(cmd: string, args: string[], input?: string): number {
  let bestMs = Infinity;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    // stdout must be a pipe: GNU grep stops at the first match when it sees /dev/null.
    const r = spawnSync(cmd, args, { stdio: [input ? fs.openSync(input, 'r') : 'ignore', 'pipe', 'ignore'], env: {}, maxBuffer: 1 << 30 });
    if (r.status !== 0 && r.status !== 1) throw new Error(`${cmd} exited ${r.status}`);
    bestMs = Math.min(bestMs, performance.now() - t0);
  }
  return bestMs;
}

const fmt = (ms: number) => `${ms.toFixed(1)} ms`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;

async function main(): Promise<void> {
  console.log('generating / reusing data under bench/out …');
  await generate();
  const home = path.join(OUT, 'home');
  await fsp.rm(home, { recursive: true, force: true });
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const rows: string[][] = [];

  // 1. Materialization in a fresh process that does nothing else (our "supervisor"), so its
  //    peak RSS is the cost of materializing and not of generating the data.
  const cpDst = path.join(OUT, 'cp-copy.jsonl');
  fs.rmSync(cpDst, { force: true });
  execFileSync('cat', [BIG], { stdio: ['ignore', 'ignore', 'ignore'] }); // warm the page cache for both
  const cp = await time(() => execFileSync('cp', [BIG, cpDst]));
  fs.rmSync(cpDst, { force: true });
  const probe = spawnSync(process.execPath, [...process.execArgv, import.meta.filename, '--probe', BIG, path.join(home, 'probe')], { encoding: 'utf8' });
  if (probe.status !== 0) throw new Error(probe.stderr);
  const m = JSON.parse(probe.stdout.trim().split('\n').at(-1)!) as { ms: number; before: number; peak: number; hwm: number; lines: number };
  rows.push(['materialize 1 GB', fmt(m.ms), `cp ${fmt(cp.ms)}`, `speed ${(cp.ms / m.ms).toFixed(2)}× cp (target ≥ 0.5×)`]);
  rows.push(['supervisor RSS while materializing', `${m.peak} MB`, `before ${m.before} MB, VmHWM ${m.hwm} MB`, 'target ≤ 150 MB']);
  console.log(`materialized ${(fs.statSync(BIG).size / 1e9).toFixed(2)} GB: ${m.lines} lines`);

  // 2. The 300 MB ref.
  const ref = await store.writeStream('bench-run', 'bench', 'events.jsonl', fs.createReadStream(DATA, { highWaterMark: 1 << 20 }));
  const file = store.resolvePath(ref);
  const pool = new DuckdbHelperPool({ size: 1 });
  await pool.warm();
  const slicer = new Slicer(store, { pool, limits: { timeoutMs: 120_000 } });

  // read line 2,500,000
  const line = await best(5, () => slicer.read(ref.ref, { line: 2_500_000, lines: 1 }));
  if (!line.value.ok || !line.value.value.text?.includes('"id":2499999,')) throw new Error('read returned the wrong line');
  rows.push(['read line 2,500,000', fmt(line.ms), '', 'target ≤ 20 ms']);

  // sql
  const sql = "SELECT kind, count(*) AS n, avg(value) AS v FROM ref WHERE value > 500 GROUP BY 1 ORDER BY 1";
  // Interleaved with the floor (one warm in-process instance) so both see the same machine.
  // Loaded here, not at the top: the materialization probe (this same file) must not carry DuckDB.
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const inst = await DuckDBInstance.create(':memory:');
  const conn = await inst.connect();
  await conn.run(`CREATE VIEW ref AS SELECT * FROM read_ndjson('${file.replaceAll("'", "''")}')`);
  let oursMs = Infinity;
  let duck = Infinity;
  for (let i = 0; i < 5; i++) {
    const o = await time(() => slicer.sql(ref.ref, sql));
    if (!o.value.ok) throw new Error(`sql failed: ${o.value.error.message}`);
    oursMs = Math.min(oursMs, o.ms);
    duck = Math.min(duck, (await time(() => conn.runAndReadAll(sql))).ms);
  }
  conn.closeSync();
  inst.closeSync();
  rows.push(['sql filter+aggregate', fmt(oursMs), `DuckDB in-process ${fmt(duck)}`, `${ratio(oursMs, duck)} (target ≤ 1.3×)`]);
  const helperHwm = Math.max(...pool.nodePids().map((p) => vmHwmKb(p)));
  await pool.close();

  // grep: a selective pattern (not cut) and a cut one (pays a counting pass for "N more")
  const rare = '"user":"u04242","value":99';
  const g1 = await best(3, () => slicer.grep(ref.ref, rare, { maxMatches: 200, fixed: true }));
  if (!g1.value.ok) throw new Error('grep failed');
  const gFloor = cmdMs('/usr/bin/grep', ['-n', '-a', '-F', '--', rare, file]);
  rows.push([`grep (${g1.value.value.returned} matches)`, fmt(g1.ms), `GNU grep ${fmt(gFloor)}`, `${ratio(g1.ms, gFloor)} (target ≤ 1.5×)`]);
  const common = '"kind":"error"';
  const g2 = await best(3, () => slicer.grep(ref.ref, common, { maxMatches: 50, fixed: true }));
  if (!g2.value.ok) throw new Error('grep failed');
  const g2Floor = cmdMs('/usr/bin/grep', ['-c', '-a', '-F', '--', common, file]);
  rows.push([`grep cut at 50 (+${g2.value.value.more} counted)`, fmt(g2.ms), `grep -c ${fmt(g2Floor)}`, `${ratio(g2.ms, g2Floor)}`]);

  // jq: alternate ours and the floor twice and keep the best of each (Debian jq takes seconds here).
  const jqExpr = 'select(.kind == "purchase" and .value > 999) | .id';
  let jMs = Infinity;
  let jFloor = Infinity;
  for (let i = 0; i < 2; i++) {
    const j = await time(() => slicer.jq(ref.ref, jqExpr));
    if (!j.value.ok) throw new Error(`jq failed: ${j.value.error.message}`);
    jMs = Math.min(jMs, j.ms);
    const t0 = performance.now();
    spawnSync('/usr/bin/jq', ['-c', jqExpr, file], { stdio: ['ignore', 'pipe', 'ignore'], env: {}, maxBuffer: 1 << 30 });
    jFloor = Math.min(jFloor, performance.now() - t0);
  }
  const j = { ms: jMs };
  rows.push(['jq select', fmt(j.ms), `jq ${fmt(jFloor)}`, `${ratio(j.ms, jFloor)} (target ≤ 1.1×)`]);
  rows.push(['DuckDB helper peak RSS', Number.isFinite(helperHwm) ? `${(helperHwm / 1024).toFixed(0)} MB` : 'n/a', pool.isolated ? 'isolated (own netns, read-only /)' : 'not isolated', '']);

  console.log(`\nbench/slice (${os.availableParallelism()} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; ratios are brig / floor, measured in this run)\n`);
  const w = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  for (const r of rows) console.log(r.map((c, i) => c.padEnd(w[i]!)).join('  '));
  console.log(
    '\nsql: brig opens a FRESH locked instance per query (INV-5); the floor reuses one warm in-process instance.\n' +
      'The helper caches the sniffed JSON-lines schema per file, so the first query on a ref pays ≈ 2 × 50 ms more.',
  );
  await fsp.rm(home, { recursive: true, force: true });
}

/** `--probe SRC HOME`: materialize SRC into a fresh store and report time and memory as JSON. */
async function probe(src: string, home: string): Promise<void> {
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const r = await time(() => store.writeStream('bench-big', 'bench', 'big.jsonl', fs.createReadStream(src, { highWaterMark: 1 << 18 })));
  clearInterval(sampler);
  const mb = (b: number) => Math.round(b / 2 ** 20);
  console.log(JSON.stringify({ ms: r.ms, before: mb(before), peak: mb(peak), hwm: Math.round(vmHwmKb('self') / 1024), lines: r.value.lines }));
  await fsp.rm(home, { recursive: true, force: true });
}

(process.argv[2] === '--probe' ? probe(process.argv[3]!, process.argv[4]!) : main()).catch((e) => {
  console.error(e);
  process.exit(1);
});
