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

export type Kind = 'command' | 'script' | 'spawner';

/** Files (relative to out/) and their exact sizes that a completed run must have left. */
export type Outputs = { path: string; bytes: number }[];

export interface Planned {
  label: string;
  kind: Kind;
  big: boolean;
  req: SpawnRequestInput;
  outputs: Outputs;
  /** Grandchildren a spawner asks for (label → outputs). */
  kids: { label: string; outputs: Outputs }[];
}

function command(label: string, rnd: () => number, big: boolean): Planned {
  const sleepMs = big ? between(rnd, 0, 500) : between(rnd, 0, 3000);
  const bytes = between(rnd, 1, 65_536);
  const outputs: Outputs = [{ path: 'c.bin', bytes }];
  let sh = `mkdir -p /workspace/out && sleep ${(sleepMs / 1000).toFixed(3)} && head -c ${bytes} /dev/urandom > /workspace/out/c.bin`;
  if (big) {
    sh += ` && head -c ${BIG_BYTES} /dev/zero > /workspace/out/big.bin`;
    outputs.push({ path: 'big.bin', bytes: BIG_BYTES });
  }
  return {
    label,
    kind: 'command',
    big,
    req: { task: `soak ${label}: sleep ${sleepMs} ms, write ${outputs.map((o) => o.path).join(', ')}`, label, kind: 'command', argv: ['sh', '-c', sh], expected_outputs: outputs.map((o) => o.path), async: true },
    outputs,
    kids: [],
  };
}

/** A script that steps, checkpoints and sleeps; a steer makes it stop stepping early. */
function stepperScript(label: string, file: string, bytes: number, sleeps: number[]): string {
  return `import { mkdirSync, writeFileSync } from 'node:fs';
const SLEEPS = ${JSON.stringify(sleeps)};
export default async function (brig) {
  let i = 0;
  let steered = 0;
  for (; i < SLEEPS.length; i++) {
    const s = await brig.progress('step ' + i);
    if (s.length) { steered = s.length; break; }
    await brig.checkpoint({ i });
    await new Promise((r) => setTimeout(r, SLEEPS[i]));
  }
  mkdirSync('/workspace/out', { recursive: true });
  writeFileSync('/workspace/out/${file}', 'x'.repeat(${bytes}));
  return { label: ${JSON.stringify(label)}, steps: i, steered };
}
`;
}

function stepper(label: string, rnd: () => number, file = 's.txt'): { req: SpawnRequestInput; outputs: Outputs } {
  const sleeps = Array.from({ length: between(rnd, 3, 8) }, () => between(rnd, 100, 500));
  const bytes = between(rnd, 1, 20_000);
  const outputs = [{ path: file, bytes }];
  return {
    req: { task: `soak ${label}: ${sleeps.length} steps, write ${file}`, label, kind: 'script', script: stepperScript(label, file, bytes, sleeps), expected_outputs: [file], async: true },
    outputs,
  };
}

function spawnerScript(kids: SpawnRequestInput[], bytes: number): string {
  return `import { mkdirSync, writeFileSync } from 'node:fs';
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
  writeFileSync('/workspace/out/p.txt', 'y'.repeat(${bytes}));
  return { ids, ends, refused };
}
`;
}

function spawner(label: string, rnd: () => number): Planned {
  const n = between(rnd, 1, 2);
  const kids = Array.from({ length: n }, (_, j) => {
    const kl = `${label}-g${j}`;
    const k = rnd() < 0.5 ? stepper(kl, rnd, 'g.txt') : command(kl, rnd, false);
    return { label: kl, req: k.req, outputs: k.outputs };
  });
  const bytes = between(rnd, 1, 4096);
  const outputs = [{ path: 'p.txt', bytes }];
  return {
    label,
    kind: 'spawner',
    big: false,
    req: { task: `soak ${label}: spawn ${n} async grandchildren and wait`, label, kind: 'script', script: spawnerScript(kids.map((k) => k.req), bytes), expected_outputs: ['p.txt'], async: true },
    outputs,
    kids: kids.map((k) => ({ label: k.label, outputs: k.outputs })),
  };
}

/**
 * n children: ~40% commands, ~40% stepping scripts, ~20% spawners; a few commands write a
 * 50 MB file, and the ones just before `bigBefore` all do, so that restart has a collection
 * to cut.
 */
export function makePlan(n: number, rnd: () => number, bigBefore: number): Planned[] {
  return Array.from({ length: n }, (_, i) => {
    const label = `soak-${String(i).padStart(3, '0')}`;
    const forceBig = i >= bigBefore - 3 && i < bigBefore;
    const roll = rnd();
    if (forceBig) return command(label, rnd, true);
    if (roll < 0.4) return command(label, rnd, rnd() < 0.04);
    if (roll < 0.8) return { label, kind: 'script', big: false, kids: [], ...stepper(label, rnd) };
    return spawner(label, rnd);
  });
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

function childEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('BRIG_')) env[k] = v;
  return { ...env, BRIG_HOME: home };
}

/** Starts `brig serve --json --drain 10 [extra…]` (output to files under the home); resolves once it answers. */
export async function startServe(home: string, n: number, extra: string[] = []): Promise<DaemonProc> {
  const outFile = path.join(home, `daemon-${n}.out`);
  const errFile = path.join(home, `daemon-${n}.err`);
  const out = fs.openSync(outFile, 'a');
  const errFd = fs.openSync(errFile, 'a');
  const proc = spawn(process.execPath, [MAIN, 'serve', '--json', '--drain', '10', ...extra], { cwd: ROOT, env: childEnv(home), stdio: ['ignore', out, errFd] });
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
    if (Date.now() > deadline) throw new Error(`brig serve #${n} did not answer within 60 s; stderr: ${fs.readFileSync(errFile, 'utf8')}`);
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
