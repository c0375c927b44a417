/**
 * Real `brig` processes for the daemon lifecycle tests: `node dist/cli/main.js serve` (and
 * other commands) on a fresh BRIG_HOME, killed with real signals. dist/ must be built
 * (`npx tsc -p tsconfig.json`). One t.after per home kills every process still alive first,
 * then sweeps the home's labelled jails and removes it, in that order.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ApiClient } from '../../../src/client/index.js';
import { brigPaths } from '../../../src/config/index.js';
import type { ReconcileReport, RunRecord, SpawnRequestInput } from '../../../src/runs/index.js';
import { sweepOwner, until } from '../runs/fixture.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const MAIN = path.join(ROOT, 'dist/cli/main.js');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Date.now() when the process exited. */
  at: number;
}

export interface BrigProc {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<Exit>;
  /** Resolves once the process has exited (immediately if it has). */
  signal(sig: NodeJS.Signals): Promise<void>;
}

export interface Serve extends BrigProc {
  socket: string;
  /** From `serve --json`: what the start reconciled. */
  report: ReconcileReport;
}

export interface DaemonHome {
  home: string;
  paths: ReturnType<typeof brigPaths>;
  /** Starts `brig serve --json …`; resolves once it answers on the socket and printed what it reconciled. */
  serve(args?: string[], env?: NodeJS.ProcessEnv): Promise<Serve>;
  /** Starts any brig command (env: set on top of the test's, e.g. DOCKER_HOST); does not wait for it. */
  start(args: string[], env?: NodeJS.ProcessEnv): BrigProc;
  /** Runs a brig command to its end. */
  run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
}

function childEnv(home: string, extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('BRIG_')) env[k] = v;
  return { ...env, ...extra, BRIG_HOME: home };
}

function startProc(home: string, args: string[], all: Set<ChildProcess>, extra: NodeJS.ProcessEnv = {}): BrigProc {
  const proc = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: childEnv(home, extra), stdio: ['ignore', 'pipe', 'pipe'] });
  all.add(proc);
  let out = '';
  let err = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<Exit>((resolve) =>
    proc.once('exit', (code, signal) => {
      all.delete(proc);
      resolve({ code, signal, at: Date.now() });
    }),
  );
  return {
    proc,
    stdout: () => out,
    stderr: () => err,
    exited,
    async signal(sig) {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(sig);
      await exited;
    },
  };
}

/** The process's exit, or null when it is still running after ms (the timer does not hold the test up). */
export async function exitWithin(p: BrigProc, ms: number): Promise<Exit | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p.exited, new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A fresh, short BRIG_HOME (its socket path must stay under 107 bytes), or `o.home`, a directory
 * the test made (a small file system's mount point): emptied at the end, not removed.
 */
export async function daemonHome(t: { after: (fn: () => Promise<void>) => void }, o: { home?: string } = {}): Promise<DaemonHome> {
  const home = o.home ?? (await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-d-')));
  const all = new Set<ChildProcess>();
  t.after(async () => {
    await Promise.all([...all].map((p) => new Promise((r) => (p.once('exit', r), p.kill('SIGKILL')))));
    await sweepOwner(home);
    if (!o.home) await fs.promises.rm(home, { recursive: true, force: true });
  });
  const paths = brigPaths(home);
  return {
    home,
    paths,
    start: (args, env) => startProc(home, args, all, env),
    async run(args) {
      const p = startProc(home, args, all);
      const e = await p.exited;
      return { code: e.code, stdout: p.stdout(), stderr: p.stderr() };
    },
    async serve(args = [], env = {}) {
      const p = startProc(home, ['serve', '--json', ...args], all, env);
      let gone = false;
      void p.exited.then(() => (gone = true));
      await until(async () => {
        if (gone) throw new Error(`brig serve exited before it served: ${p.stderr()}${p.stdout()}`);
        return p.stdout().includes('\n') && (await ApiClient.probe(paths.socket));
      }, `brig serve up (stderr: ${p.stderr()})`, 300);
      const first = JSON.parse(p.stdout().split('\n')[0]!) as { socket: string; reconcile: ReconcileReport };
      return { ...p, socket: first.socket, report: first.reconcile };
    },
  };
}

/** The run's record as the last writer left it on disk. */
export function recordOnDisk(home: string, runId: string): RunRecord | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(brigPaths(home).runs, runId, 'run.json'), 'utf8')) as RunRecord;
  } catch {
    return undefined;
  }
}

/** Every run record on disk. */
export function recordsOnDisk(home: string): RunRecord[] {
  const dir = brigPaths(home).runs;
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).flatMap((id) => {
    const r = recordOnDisk(home, id);
    return r ? [r] : [];
  });
}

/** Paths (relative to root) of everything under root that `keep` selects; [] when root is absent. */
function walk(root: string, keep: (rel: string, st: fs.Stats) => boolean): string[] {
  const found: string[] = [];
  const visit = (rel: string) => {
    const abs = path.join(root, rel);
    const st = fs.lstatSync(abs, { throwIfNoEntry: false });
    if (!st) return;
    if (rel !== '' && keep(rel, st)) found.push(rel);
    if (st.isDirectory()) for (const name of fs.readdirSync(abs)) visit(path.join(rel, name));
  };
  visit('');
  return found;
}

/** Unix sockets left under the home's broker runtime directory (brigPaths().brokers, outside the home). */
export function brokerSockets(home: string): string[] {
  return walk(brigPaths(home).brokers, (_rel, st) => st.isSocket());
}

/** Paths under $BRIG_HOME/results whose name carries a temp marker. */
export function resultTemps(home: string): string[] {
  return walk(brigPaths(home).results, (rel) => path.basename(rel).includes('.tmp-'));
}

/** The daemon's own count of ready warm jails (GET /v1/metrics, brig_warm_jails{state="ready"}). */
export async function warmReady(socket: string, state: 'ready' | 'filling' = 'ready'): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    http.get({ socketPath: socket, path: '/v1/metrics' }, (res) => {
      let b = '';
      res.setEncoding('utf8').on('data', (c: string) => (b += c)).on('end', () => resolve(b));
    }).on('error', reject);
  });
  const m = new RegExp(`^brig_warm_jails\\{state="${state}"\\} (\\d+)$`, 'm').exec(text);
  if (!m) throw new Error('the daemon exposes no brig_warm_jails gauge');
  return Number(m[1]);
}

/** A spawn through the daemon's API, followed to its end (it fails the test, with serve's stderr, when refused or not ended). */
export async function spawnToEnd(serve: Serve, req: SpawnRequestInput): Promise<RunRecord> {
  const api = new ApiClient(serve.socket);
  try {
    const r = await api.spawn(req);
    assert.ok(r.ok, r.ok ? '' : `${r.error.code}: ${r.error.message}\nserve stderr: ${serve.stderr()}`);
    if (r.value.status === 'ended') return r.value;
    const w = await api.wait(r.value.id, { timeoutMs: 60_000 });
    assert.ok(w.ok && w.value.status === 'ended', `run did not end: ${JSON.stringify(w)}`);
    return w.value;
  } finally {
    await api.close();
  }
}
