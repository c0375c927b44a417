/**
 * Parts of the soak (bench/soak.ts) that hold no chaos: the seeded PRNG, the plan of children
 * (each with the out files it must leave), the `brig serve` process and reads of the home.
 * The plan is drawn from its own PRNG stream, so one seed gives the same children whatever the
 * timing did to the chaos.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ApiClient } from '../src/client/index.js';
import { brigPaths } from '../src/config/index.js';
import type { RunRecord, SpawnRequestInput } from '../src/runs/index.js';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const MAIN = path.join(ROOT, 'dist/cli/main.js');
export const BIG_BYTES = 50_000_000;

/** mulberry32: small, seedable, good enough to pick sleeps and victims reproducibly. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const between = (rnd: () => number, lo: number, hi: number) => Math.floor(lo + rnd() * (hi - lo + 1));
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export type Kind = 'command' | 'script' | 'waiter' | 'spawner' | 'agent';

/**
 * The soak's content: a seeded, counter-based stream (mulberry32 of seed + k·γ for word k), so
 * any byte range can be made without the ones before it. The same source runs in the jail (a
 * command's `node -e`, a script, an agent's gen.js) and here, where every materialized file is
 * compared with the stream: a file of n bytes must be exactly its first n bytes.
 */
export const SOAK_BYTES_JS = `function soakBytes(seed, from, n) {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; ) {
    const k = Math.floor((from + i) / 4);
    let t = (seed + Math.imul(k + 1, 0x6d2b79f5)) >>> 0;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const w = (t ^ (t >>> 14)) >>> 0;
    for (let b = (from + i) % 4; b < 4 && i < n; b++, i++) out[i] = (w >>> (8 * b)) & 255;
  }
  return out;
}`;
export const soakBytes = new Function(`${SOAK_BYTES_JS}; return soakBytes;`)() as (seed: number, from: number, n: number) => Uint8Array;

/**
 * A CommonJS program: `node -e WRITER seed bytes file chunk gapMs` (or saved as a file) writes
 * the stream to file, chunk bytes at a time, gapMs apart — a kill catches it part-written.
 */
export const WRITER_JS = `const fs = require('fs');
const path = require('path');
${SOAK_BYTES_JS}
const a = process.argv.slice(-5);
const seed = Number(a[0]), bytes = Number(a[1]), file = a[2], chunk = Number(a[3]), gap = Number(a[4]);
fs.mkdirSync(path.dirname(file), { recursive: true });
const fd = fs.openSync(file, 'w');
let off = 0;
function next() {
  while (off < bytes) {
    const n = Math.min(chunk, bytes - off);
    fs.writeSync(fd, soakBytes(seed, off, n));
    off += n;
    if (gap > 0 && off < bytes) return void setTimeout(next, gap);
  }
  fs.closeSync(fd);
}
next();
`;

/** Files (relative to out/), their exact sizes and content seeds, that a completed run must have left. */
export type Outputs = { path: string; bytes: number; seed: number }[];

export interface Planned {
  label: string;
  kind: Kind;
  big: boolean;
  req: SpawnRequestInput;
  outputs: Outputs;
  /** Grandchildren a spawner asks for (label → outputs). */
  kids: { label: string; outputs: Outputs }[];
  /** The steer that ends it (waiters, steered agents): the soak sends it once the run is running. */
  steerTo?: string;
  /** Submitted for the SIGTERM drain at the end. */
  tail?: boolean;
}

const seedOf = (rnd: () => number) => between(rnd, 1, 2 ** 31 - 1);

function command(label: string, rnd: () => number, big: boolean, sleepMax = 3000): Planned {
  const sleepMs = big ? between(rnd, 0, 500) : between(rnd, 0, sleepMax);
  const outputs: Outputs = [{ path: 'c.bin', bytes: between(rnd, 1, 65_536), seed: seedOf(rnd) }];
  // Each file: its stream in 8 chunks 50 ms apart (a big one: 1 MB chunks, no pause).
  const write = (o: Outputs[number], chunk: number, gap: number) => `node -e "$0" ${o.seed} ${o.bytes} /workspace/out/${o.path} ${chunk} ${gap}`;
  let sh = `mkdir -p /workspace/out && sleep ${(sleepMs / 1000).toFixed(3)} && ${write(outputs[0]!, Math.ceil(outputs[0]!.bytes / 8), 50)}`;
  if (big) {
    outputs.push({ path: 'big.bin', bytes: BIG_BYTES, seed: seedOf(rnd) });
    sh += ` && ${write(outputs[1]!, 1 << 20, 0)}`;
  }
  return {
    label,
    kind: 'command',
    big,
    req: { task: `soak ${label}: sleep ${sleepMs} ms, write ${outputs.map((o) => o.path).join(', ')}`, label, kind: 'command', argv: ['sh', '-c', sh, WRITER_JS], expected_outputs: outputs.map((o) => o.path), async: true },
    outputs,
    kids: [],
  };
}

/** A script that steps, checkpoints, appends a chunk of its file and sleeps; a steer makes it stop stepping early (the file is finished either way). */
function stepperScript(label: string, o: Outputs[number], sleeps: number[]): string {
  return `import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
${SOAK_BYTES_JS}
const SLEEPS = ${JSON.stringify(sleeps)};
const FILE = '/workspace/out/${o.path}', SEED = ${o.seed}, BYTES = ${o.bytes};
export default async function (brig) {
  mkdirSync('/workspace/out', { recursive: true });
  writeFileSync(FILE, '');
  const per = Math.ceil(BYTES / SLEEPS.length);
  let off = 0, i = 0, steered = [];
  for (; i < SLEEPS.length; i++) {
    const s = await brig.progress('step ' + i);
    if (s.length) { steered = s; break; }
    await brig.checkpoint({ i });
    const n = Math.min(per, BYTES - off);
    appendFileSync(FILE, soakBytes(SEED, off, n));
    off += n;
    await new Promise((r) => setTimeout(r, SLEEPS[i]));
  }
  if (off < BYTES) appendFileSync(FILE, soakBytes(SEED, off, BYTES - off));
  return { label: ${JSON.stringify(label)}, steps: i, steered };
}
`;
}

function stepper(label: string, rnd: () => number, file = 's.bin', steps: [number, number] = [3, 8], sleep: [number, number] = [100, 500]): { req: SpawnRequestInput; outputs: Outputs } {
  const sleeps = Array.from({ length: between(rnd, ...steps) }, () => between(rnd, ...sleep));
  const outputs = [{ path: file, bytes: between(rnd, 1, 20_000), seed: seedOf(rnd) }];
  return {
    req: { task: `soak ${label}: ${sleeps.length} steps, write ${file}`, label, kind: 'script', script: stepperScript(label, outputs[0]!, sleeps), expected_outputs: [file], async: true },
    outputs,
  };
}

/** Steps (up to 45 × 500 ms: max_steps is at most 50) until a steer says `finish <label> now`; its result names the steers it took. */
function waiter(label: string, rnd: () => number): Planned {
  const o = { path: 'w.bin', bytes: between(rnd, 1, 20_000), seed: seedOf(rnd) };
  const steerTo = `finish ${label} now`;
  const script = `import { mkdirSync, writeFileSync } from 'node:fs';
${SOAK_BYTES_JS}
export default async function (brig) {
  mkdirSync('/workspace/out', { recursive: true });
  writeFileSync('/workspace/out/${o.path}', soakBytes(${o.seed}, 0, ${o.bytes}));
  const took = [];
  let i = 0;
  for (; i < 45; i++) {
    const s = await brig.progress(took.length ? 'steered' : 'waiting ' + i);
    took.push(...s);
    if (took.includes(${JSON.stringify(steerTo)})) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return { label: ${JSON.stringify(label)}, steps: i, steers: took };
}
`;
  return { label, kind: 'waiter', big: false, req: { task: `soak ${label}: wait to be steered`, label, kind: 'script', script, expected_outputs: [o.path], max_steps: 50, async: true }, outputs: [o], kids: [], steerTo };
}

/** An agent the flaky model drives: write gen.js, run it (out/a.bin), then finish — or, when steered, step until told. */
function agent(label: string, rnd: () => number): Planned {
  const o = { path: 'a.bin', bytes: between(rnd, 1, 100_000), seed: seedOf(rnd) };
  const steered = rnd() < 0.5;
  return {
    label,
    kind: 'agent',
    big: false,
    req: { task: `SOAK-AGENT ${label}: write /workspace/out/a.bin${steered ? ', then keep working until your parent says to finish' : ''}`, label, kind: 'agent', expected_outputs: [o.path], max_steps: 50, async: true },
    outputs: [o],
    kids: [],
    ...(steered ? { steerTo: `finish ${label} now` } : {}),
  };
}

function spawnerScript(kids: SpawnRequestInput[], o: Outputs[number]): string {
  return `import { mkdirSync, writeFileSync } from 'node:fs';
${SOAK_BYTES_JS}
const KIDS = ${JSON.stringify(kids)};
export default async function (brig) {
  await brig.progress('spawning');
  const ids = [];
  const refused = [];
  for (const k of KIDS) {
    try { ids.push((await brig.spawn(k)).runId); } catch (e) { refused.push(String(e && e.code || e)); }
  }
  const ends = ids.length ? (await brig.wait(ids)).map((s) => s.endReason) : [];
  mkdirSync('/workspace/out', { recursive: true });
  writeFileSync('/workspace/out/${o.path}', soakBytes(${o.seed}, 0, ${o.bytes}));
  return { ids, ends, refused };
}
`;
}

function spawner(label: string, rnd: () => number): Planned {
  const n = between(rnd, 1, 2);
  const kids = Array.from({ length: n }, (_, j) => {
    const kl = `${label}-g${j}`;
    const k = rnd() < 0.5 ? stepper(kl, rnd, 'g.bin') : command(kl, rnd, false);
    return { label: kl, req: k.req, outputs: k.outputs };
  });
  const o = { path: 'p.bin', bytes: between(rnd, 1, 4096), seed: seedOf(rnd) };
  return {
    label,
    kind: 'spawner',
    big: false,
    req: { task: `soak ${label}: spawn ${n} async grandchildren and wait`, label, kind: 'script', script: spawnerScript(kids.map((k) => k.req), o), expected_outputs: [o.path], async: true },
    outputs: [o],
    kids: kids.map((k) => ({ label: k.label, outputs: k.outputs })),
  };
}

/**
 * n children: ~35% commands, ~32% stepping scripts, ~8% waiters (steered to finish), ~8%
 * agents (on the flaky model; half steered to finish), ~17% spawners; a few commands write a
 * 50 MB file, and the ones just before `bigBefore` all do, so that restart has a collection
 * to cut. Then the tail: `tail` long children submitted at once for the SIGTERM drain (some
 * run past the drain, the rest wait in the queue).
 */
export function makePlan(n: number, rnd: () => number, bigBefore: number, tail: number): Planned[] {
  const main = Array.from({ length: n }, (_, i) => {
    const label = `soak-${String(i).padStart(4, '0')}`;
    const forceBig = i >= bigBefore - 3 && i < bigBefore;
    const roll = rnd();
    if (forceBig) return command(label, rnd, true);
    if (roll < 0.35) return command(label, rnd, rnd() < 0.04);
    if (roll < 0.67) return { label, kind: 'script' as const, big: false, kids: [], ...stepper(label, rnd) };
    if (roll < 0.75) return waiter(label, rnd);
    if (roll < 0.83) return agent(label, rnd);
    return spawner(label, rnd);
  });
  const tailRuns = Array.from({ length: tail }, (_, j): Planned => {
    const label = `soak-t${String(j).padStart(3, '0')}`;
    const p = rnd() < 0.5 ? command(label, rnd, false, 25_000) : { label, kind: 'script' as const, big: false, kids: [], ...stepper(label, rnd, 's.bin', [5, 12], [800, 2500]) };
    return { ...p, tail: true };
  });
  return [...main, ...tailRuns];
}

// ── the daemon process ─────────────────────────────────────────────────────────────────

export interface DaemonProc {
  n: number;
  proc: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  outFile: string;
  errFile: string;
  /** From `serve --json`'s first line, printed once the start's sweeps are done (it serves before). */
  reconcile: { reattached: string[]; ghostSwept: string[]; swept: { containers: number; volumes: number } } | null;
  /** Date.now() when it first answered on its socket, and when it printed what it reconciled. */
  servedAt: number;
  reconciledAt: number | null;
}

function childEnv(home: string, extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('BRIG_') && k !== 'DOCKER_HOST') env[k] = v;
  return { ...env, ...extra, BRIG_HOME: home };
}

export interface ServeOptions {
  /** Where daemon-N.out/.err go (not the home: a full home must not cut the soak's view of the daemon). */
  logs: string;
  /** Added to the daemon's environment (DOCKER_HOST, BRIG_MODEL_*). */
  env?: NodeJS.ProcessEnv;
  extra?: string[];
}

/** Starts `brig serve --json --drain 10 [extra…]` (output to files under o.logs); resolves once it answers. */
export async function startServe(home: string, n: number, o: ServeOptions): Promise<DaemonProc> {
  const outFile = path.join(o.logs, `daemon-${n}.out`);
  const errFile = path.join(o.logs, `daemon-${n}.err`);
  const out = fs.openSync(outFile, 'a');
  const errFd = fs.openSync(errFile, 'a');
  const proc = spawn(process.execPath, [MAIN, 'serve', '--json', '--drain', '10', ...(o.extra ?? [])], { cwd: ROOT, env: childEnv(home, o.env ?? {}), stdio: ['ignore', out, errFd] });
  fs.closeSync(out);
  fs.closeSync(errFd);
  let gone = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => {
      gone = true;
      resolve({ code, signal });
    }),
  );
  const sock = brigPaths(home).socket;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (gone) throw new Error(`brig serve #${n} exited before it served; stderr: ${fs.readFileSync(errFile, 'utf8')}`);
    if (Date.now() > deadline && proc.kill('SIGKILL')) throw new Error(`brig serve #${n} did not answer within 60 s; stderr: ${fs.readFileSync(errFile, 'utf8')}`);
    if (await ApiClient.probe(sock)) break;
    await sleep(100);
  }
  const servedAt = Date.now();
  // It serves before its start-up sweeps are done; their report follows (informative only).
  let reconcile: DaemonProc['reconcile'] = null;
  let reconciledAt: number | null = null;
  while (!gone && Date.now() < deadline) {
    const out = fs.readFileSync(outFile, 'utf8');
    if (out.includes('\n')) {
      reconciledAt = Date.now();
      try {
        reconcile = (JSON.parse(out.split('\n')[0]!) as { reconcile: DaemonProc['reconcile'] }).reconcile;
      } catch {
        // the report is informative only
      }
      break;
    }
    await sleep(100);
  }
  return { n, proc, exited, outFile, errFile, reconcile, servedAt, reconciledAt };
}

/** Sends sig and waits for the exit (SIGKILL after boundMs). */
export async function stopServe(d: DaemonProc, sig: NodeJS.Signals, boundMs = 60_000): Promise<{ code: number | null; signal: NodeJS.Signals | null; forced: boolean }> {
  if (d.proc.exitCode === null && d.proc.signalCode === null) d.proc.kill(sig);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((r) => (timer = setTimeout(() => r(null), boundMs)));
  const e = await Promise.race([d.exited, late]);
  clearTimeout(timer);
  if (e) return { ...e, forced: false };
  d.proc.kill('SIGKILL');
  return { ...(await d.exited), forced: true };
}

// ── reads of the home ───────────────────────────────────────────────────────────────────

export function readRecord(home: string, id: string): RunRecord | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(brigPaths(home).runs, id, 'run.json'), 'utf8')) as RunRecord;
  } catch {
    return undefined;
  }
}

export function allRecords(home: string): RunRecord[] {
  const dir = brigPaths(home).runs;
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).flatMap((id) => {
    const r = readRecord(home, id);
    return r ? [r] : [];
  });
}

/** Unix sockets anywhere under dir. */
export function socketsUnder(dir: string): string[] {
  const found: string[] = [];
  const visit = (p: string) => {
    const st = fs.lstatSync(p, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isSocket()) found.push(p);
    if (st.isDirectory()) for (const e of fs.readdirSync(p)) visit(path.join(p, e));
  };
  visit(dir);
  return found;
}

/** `run.lifecycle_ended` lines in the ledger, per run id, with their end reasons. */
export function ledgerEnds(home: string): Map<string, string[]> {
  const dir = brigPaths(home).ledger;
  const ends = new Map<string, string[]>();
  if (!fs.existsSync(dir)) return ends;
  for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.jsonl'))) {
    for (const line of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
      if (!line.includes('run.lifecycle_ended')) continue;
      try {
        const ev = JSON.parse(line) as { type?: string; runId?: string; endReason?: string };
        if (ev.type !== 'run.lifecycle_ended' || !ev.runId) continue;
        ends.set(ev.runId, [...(ends.get(ev.runId) ?? []), String(ev.endReason)]);
      } catch {
        // audit verify judges the lines; this only counts
      }
    }
  }
  return ends;
}
