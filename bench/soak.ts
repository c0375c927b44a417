/**
 * Soak: a real `brig serve` daemon under mixed load, kills, steers and SIGKILL restarts, then
 * a check that every run ended exactly once and nothing leaked or was lost (INV-8).
 *
 *   node --import tsx bench/soak.ts [--runs 200] [--restarts 3] [--seed S] [--timeout-min 20] [--warm N] [--keep]
 *
 * Talks only to the daemon's unix socket (and reads its home). Children: ~40% `sh -c` commands
 * (sleep, write out/c.bin; a few also a 50 MB out/big.bin), ~40% stepping scripts (progress,
 * checkpoint, sleep; out/s.txt), ~20% scripts that spawn 1–2 async grandchildren and wait on
 * them (out/p.txt). One restart waits for a run to be `materializing` and SIGKILLs then.
 * Checks afterwards: every run.json ended with one end reason (and one ledger end), no run
 * failed, no container/volume/broker socket left, `brig audit verify` passes, every completed
 * run has each out file its task wrote, at its size, and every ghost_sweep was `starting` when
 * the daemon died. Not part of `make test`: `make soak`. Exits 1 when a check fails (the home
 * is kept then, with each daemon's output in daemon-N.out/.err).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApiClient } from '../src/client/index.js';
import { brigPaths } from '../src/config/index.js';
import { DockerJailDriver, ownerForHome } from '../src/jail/index.js';
import { END_REASONS, type RunRecord, type RunStatus } from '../src/runs/index.js';
import { allRecords, between, BIG_BYTES, ledgerEnds, MAIN, makePlan, prng, readRecord, ROOT, sleep, socketsUnder, startServe, stopServe, type DaemonProc, type Outputs, type Planned } from './soak-lib.js';

const LIVE: RunStatus[] = ['queued', 'starting', 'running', 'materializing'];

function flag(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : dflt;
  if (!Number.isFinite(v)) throw new Error(`--${name} needs a number`);
  return v;
}

const N = flag('runs', 200);
const RESTARTS = flag('restarts', 3);
const SEED = flag('seed', Date.now() % 2 ** 31);
const BOUND_MS = flag('timeout-min', 20) * 60_000;
const KEEP = process.argv.includes('--keep');
/** `--warm N`: every daemon keeps a warm pool (its slots must be swept after each SIGKILL too). */
const WARM = flag('warm', 0);

interface Restart {
  k: number;
  wanted: 'materializing' | 'any';
  /** The run seen `materializing` when the daemon was SIGKILLed, and the end it was collecting for. */
  caught: { id: string; pendingEnd: string } | null;
  snapshot: Map<string, RunStatus>;
  downMs: number;
  reconcile: DaemonProc['reconcile'];
}

const tally = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
const fmt = (m: Map<string, number>) => [...m].sort().map(([k, v]) => `${k} ${v}`).join(', ') || '-';

class Soak {
  readonly paths;
  readonly api;
  /** Victims and their delays; submission gaps and downtimes draw from their own stream. */
  readonly chaos = prng(SEED ^ 0x5bd1e995);
  readonly pace = prng(SEED ^ 0x27d4eb2f);
  daemon!: DaemonProc;
  daemons: DaemonProc[] = [];
  up = false;
  #upWaiters: (() => void)[] = [];
  readonly submitted = new Map<string, string[]>(); // label → run ids the daemon returned
  readonly submitErrors: { label: string; code: string; message: string }[] = [];
  queueFull = 0;
  unavailable = 0;
  readonly bigIds = new Set<string>();
  readonly kills = new Map<string, number>();
  readonly steers = new Map<string, number>();
  readonly restarts: Restart[] = [];
  readonly #rolled = new Set<string>();
  #scheduled: { at: number; id: string; what: 'kill' | 'steer' }[] = [];
  readonly #inflight = new Set<Promise<unknown>>();

  constructor(readonly home: string) {
    this.paths = brigPaths(home);
    this.api = new ApiClient(this.paths.socket);
  }

  async boot(): Promise<void> {
    this.daemon = await startServe(this.home, this.daemons.length, WARM > 0 ? ['--warm', String(WARM)] : []);
    this.daemons.push(this.daemon);
    this.up = true;
    for (const w of this.#upWaiters.splice(0)) w();
  }

  whenUp(): Promise<void> {
    return this.up ? Promise.resolve() : new Promise((r) => this.#upWaiters.push(r));
  }

  /** Submits one child; queue_full and a down daemon are retried, anything else is recorded. */
  async submit(p: Planned): Promise<void> {
    for (;;) {
      await this.whenUp();
      const r = await this.api.spawn(p.req).catch((e: unknown) => ({ ok: false as const, error: { code: 'daemon_unavailable', message: String(e) } }));
      if (r.ok) {
        this.submitted.set(p.label, [...(this.submitted.get(p.label) ?? []), r.value.id]);
        if (p.big) this.bigIds.add(r.value.id);
        return;
      }
      if (r.error.code === 'queue_full') {
        this.queueFull++;
        await sleep(between(this.pace, 400, 1500));
      } else if (r.error.code === 'daemon_unavailable' || r.error.code === 'shutting_down') {
        this.unavailable++;
        await sleep(200);
      } else {
        this.submitErrors.push({ label: p.label, code: r.error.code, message: r.error.message });
        return;
      }
    }
  }

  async live(): Promise<RunRecord[] | null> {
    if (!this.up) return null;
    return this.api.list({ status: LIVE }).catch(() => null);
  }

  /** One chaos tick: every run first seen live is rolled once: ~10% killed, ~5% steered, 0–2.5 s later. */
  async chaosTick(): Promise<void> {
    const live = await this.live();
    const now = Date.now();
    for (const r of live ?? []) {
      if (this.#rolled.has(r.id)) continue;
      this.#rolled.add(r.id);
      const x = this.chaos();
      const at = now + between(this.chaos, 0, 2500);
      if (x < 0.1) this.#scheduled.push({ at, id: r.id, what: 'kill' });
      else if (x < 0.15) this.#scheduled.push({ at, id: r.id, what: 'steer' });
    }
    if (!this.up) return; // due ones wait for the daemon
    const due = this.#scheduled.filter((s) => s.at <= now);
    this.#scheduled = this.#scheduled.filter((s) => s.at > now);
    for (const s of due) {
      const m = s.what === 'kill' ? this.kills : this.steers;
      tally(m, 'sent');
      const call = s.what === 'kill' ? this.api.kill(s.id, { confirm: true }) : this.api.steer(s.id, `soak steer for ${s.id}`);
      const p = call
        .then((r) => tally(m, r.ok ? 'ok' : r.error.code))
        .catch(() => tally(m, 'daemon_unavailable'))
        .finally(() => this.#inflight.delete(p));
      this.#inflight.add(p);
    }
  }

  quiet(): boolean {
    return this.#inflight.size === 0 && this.#scheduled.length === 0;
  }

  /** Waits for a big run to be `materializing` (up to 90 s) when asked, then SIGKILLs the daemon and starts another. */
  async restart(k: number, wanted: Restart['wanted']): Promise<void> {
    let caught: Restart['caught'] = null;
    const deadline = Date.now() + 90_000;
    const ended = new Set<string>();
    while (wanted === 'materializing' && !caught && Date.now() < deadline) {
      for (const id of this.bigIds) {
        if (ended.has(id)) continue;
        const r = readRecord(this.home, id);
        if (r?.status === 'ended') ended.add(id);
        if (r?.status === 'materializing') {
          caught = { id, pendingEnd: r.pendingEnd?.reason ?? '?' };
          break;
        }
      }
      if (!caught) await sleep(10);
    }
    this.up = false;
    const t0 = Date.now();
    await stopServe(this.daemon, 'SIGKILL');
    const snapshot = new Map(allRecords(this.home).map((r) => [r.id, r.status] as const));
    if (caught && snapshot.get(caught.id) !== 'materializing') caught = null; // it finished before the kill landed
    const live = [...snapshot.values()].filter((s) => s !== 'ended');
    console.log(`  restart ${k + 1}: SIGKILL daemon #${this.daemon.n}${caught ? ` with ${caught.id} materializing (pendingEnd ${caught.pendingEnd})` : wanted === 'materializing' ? ' (no run caught materializing)' : ''}; ${live.length} live: ${fmtStatuses(live)}`);
    await sleep(between(this.pace, 500, 3000));
    await this.boot();
    const rec = this.daemon.reconcile;
    const served = `serving after ${this.daemon.servedAt - t0} ms, reconciled after ${this.daemon.reconciledAt === null ? '?' : this.daemon.reconciledAt - t0} ms`;
    this.restarts.push({ k, wanted, caught, snapshot, downMs: Date.now() - t0, reconcile: rec });
    console.log(`  restart ${k + 1}: daemon #${this.daemon.n} ${served}; reconciled ${rec?.reattached.length ?? '?'} reattached, ${rec?.ghostSwept.length ?? '?'} ghost-swept, ${rec?.swept.containers ?? '?'} containers swept`);
  }
}

function fmtStatuses(ss: string[]): string {
  const m = new Map<string, number>();
  for (const s of ss) tally(m, s);
  return fmt(m);
}

/** R submission indices in the middle 70% of the run, one in each of R equal stretches of it. */
function restartPoints(rnd: () => number, n: number, r: number): number[] {
  const lo = Math.max(4, Math.floor(n * 0.15));
  const span = Math.max(r, Math.floor(n * 0.85) - lo) / Math.max(r, 1);
  return Array.from({ length: r }, (_, k) => lo + Math.floor(k * span) + between(rnd, 0, Math.max(0, Math.floor(span) - 1)));
}

async function drive(s: Soak, plan: Planned[], points: number[]): Promise<boolean> {
  const t0 = Date.now();
  let submitting = true;
  let chain = Promise.resolve();
  const matAt = points[0];
  const chaosLoop = (async () => {
    while (submitting || !s.quiet() || (await s.live().then((l) => l === null || l.length > 0))) {
      await s.chaosTick();
      if (Date.now() - t0 > BOUND_MS) return false;
      await sleep(700);
    }
    return true;
  })();
  const ticker = setInterval(() => {
    void s.live().then((l) => console.log(`  … ${Math.round((Date.now() - t0) / 1000)} s: ${[...s.submitted.keys()].length}/${plan.length} submitted, ${l ? `${l.length} live (${fmtStatuses(l.map((r) => r.status))})` : 'daemon down'}, ${s.restarts.length} restart(s), queue_full ${s.queueFull}`));
  }, 20_000);
  let burst = 0;
  for (let i = 0; i < plan.length; i++) {
    const k = points.indexOf(i);
    if (k >= 0) chain = chain.then(() => s.restart(k, i === matAt ? 'materializing' : 'any'));
    await s.submit(plan[i]!);
    // Mostly paced below the daemon's throughput; now and then a burst that fills the queue.
    if (burst > 0) burst--;
    else if (s.pace() < 0.06) burst = between(s.pace, 10, 18);
    else await sleep(between(s.pace, 150, 600));
    if (Date.now() - t0 > BOUND_MS) break;
  }
  await chain;
  submitting = false;
  const done = await chaosLoop;
  clearInterval(ticker);
  return done;
}

interface Verdict {
  name: string;
  ok: boolean;
  detail: string;
}

/** Whatever the soak knows about one run, for a defect report. */
function describe(s: Soak, r: RunRecord): string {
  const { stdoutTail, stderrTail, ...rest } = r;
  const lines = s.daemons.flatMap((d) => [d.outFile, d.errFile]).flatMap((f) => fs.readFileSync(f, 'utf8').split('\n').filter((l) => l.includes(r.id)).map((l) => `${path.basename(f)}: ${l.slice(0, 300)}`));
  const seen = s.restarts.map((x) => `restart ${x.k + 1}: ${x.snapshot.get(r.id) ?? 'absent'}`).join(', ');
  return `    ${r.id} ${JSON.stringify({ ...rest, stdoutTail: stdoutTail.slice(-300), stderrTail: stderrTail.slice(-300) })}\n    status at the SIGKILLs: ${seen}\n${lines.map((l) => `    ${l}`).join('\n')}`;
}

async function check(s: Soak, plan: Planned[], finished: boolean, stop: Awaited<ReturnType<typeof stopServe>>): Promise<Verdict[]> {
  const v: Verdict[] = [];
  const add = (name: string, ok: boolean, detail = '') => v.push({ name, ok, detail });
  const recs = allRecords(s.home);
  add('all runs ended within the time bound', finished, finished ? '' : `bound ${BOUND_MS / 60_000} min`);
  add('daemon exited 0 on SIGTERM', stop.code === 0 && !stop.forced, `code ${stop.code} signal ${stop.signal}${stop.forced ? ' (had to SIGKILL)' : ''}`);

  const bad = recs.filter((r) => r.status !== 'ended' || !r.endReason || !END_REASONS.includes(r.endReason) || !r.endedAt || (r.endReason === 'killed') !== (r.killedBy !== null));
  add('every run.json ended with exactly one end reason', bad.length === 0, bad.map((r) => describe(s, r)).join('\n'));
  const ends = ledgerEnds(s.home);
  const twice = recs.filter((r) => (ends.get(r.id)?.length ?? 0) > 1 || (ends.get(r.id) ?? [r.endReason])[0] !== r.endReason);
  add('ledger: no run ended twice or differently', twice.length === 0, twice.map((r) => `    ${r.id}: record ${r.endReason}, ledger ${ends.get(r.id)?.join('/')}`).join('\n'));
  const unledgered = recs.filter((r) => !ends.has(r.id)).map((r) => r.id);
  if (unledgered.length) console.log(`  note: ${unledgered.length} ended run(s) have no run.lifecycle_ended line: ${unledgered.join(' ')}`);

  const left = await new DockerJailDriver({ owner: ownerForHome(s.home) }).listLabelled().catch((e: unknown) => [{ kind: 'error', runId: String(e) }]);
  add('no container, volume or workspace disk left for this home', left.length === 0, left.map((l) => `${l.kind}:${l.runId}`).join(' '));
  const disksDir = new DockerJailDriver({ owner: ownerForHome(s.home) }).disks.dir;
  const loops = await promisify(execFile)('/usr/sbin/losetup', ['--list', '--noheadings', '--output', 'BACK-FILE']).then(
    (r) => r.stdout.split('\n').filter((l) => l.startsWith(disksDir)),
    () => [] as string[],
  );
  add('no loop device left on this home\'s disks', loops.length === 0, loops.join(' '));
  const socks = socketsUnder(s.paths.brokers);
  add('no broker socket left (brigPaths().brokers)', socks.length === 0, socks.join(' '));
  const audit = await promisify(execFile)(process.execPath, [MAIN, 'audit', 'verify'], { cwd: ROOT, env: { ...process.env, BRIG_HOME: s.home } }).then(
    (r) => ({ code: 0, out: r.stdout.split('\n')[0] ?? '' }),
    (e: { code?: number; stderr?: string }) => ({ code: e.code ?? 1, out: e.stderr ?? '' }),
  );
  add('brig audit verify exits 0', audit.code === 0, audit.out.trim());

  // Outputs: every completed run has each file its task wrote, with its size, in resultDir.
  const want = new Map<string, Outputs>();
  for (const p of plan) {
    want.set(p.label, p.outputs);
    for (const k of p.kids) want.set(k.label, k.outputs);
  }
  const lost: string[] = [];
  for (const r of recs.filter((x) => x.endReason === 'completed')) {
    const outs = r.label ? want.get(r.label) : undefined;
    if (!outs) {
      lost.push(`    ${r.id}: completed with label ${r.label}, which the plan does not know`);
      continue;
    }
    for (const o of outs) {
      const listed = r.outputs.find((x) => x.path === o.path);
      const size = r.resultDir ? fs.statSync(path.join(r.resultDir, o.path), { throwIfNoEntry: false })?.size : undefined;
      if (listed?.bytes !== o.bytes || size !== o.bytes) lost.push(`    ${r.id} (${r.label}) ${o.path}: want ${o.bytes} B, record ${listed?.bytes ?? 'absent'}, on disk ${size ?? 'absent'} (resultDir ${r.resultDir})\n${describe(s, r)}`);
    }
  }
  add('no completed run lost an output', lost.length === 0, lost.join('\n'));

  // Accounting: every submission is on disk; every grandchild a completed spawner names exists.
  const byId = new Map(recs.map((r) => [r.id, r]));
  const missing = [...s.submitted].flatMap(([label, ids]) => ids.filter((id) => !byId.has(id)).map((id) => `${label}:${id}`));
  const kidsGone = recs.filter((r) => r.endReason === 'completed' && Array.isArray((r.result as { ids?: unknown })?.ids)).flatMap((r) => ((r.result as { ids: string[] }).ids).filter((id) => byId.get(id)?.parentRunId !== r.id).map((id) => `${r.id}→${id}`));
  add('every spawn answered is on disk (grandchildren too)', missing.length === 0 && kidsGone.length === 0 && s.submitErrors.length === 0, [...missing, ...kidsGone, ...s.submitErrors.map((e) => `${e.label}: ${e.code} ${e.message}`)].join(' '));

  const failed = recs.filter((r) => r.endReason === 'failed');
  add('no run failed', failed.length === 0, failed.map((r) => describe(s, r)).join('\n'));

  // ghost_sweep is a lost run unless the run was `starting` when the daemon died.
  const ghosts = recs.filter((r) => r.endReason === 'ghost_sweep').map((r) => {
    const said = /the run was (\w+)/.exec(r.error?.message ?? '')?.[1];
    const snap = [...s.restarts].reverse().find((x) => x.snapshot.has(r.id) && x.snapshot.get(r.id) !== 'ended')?.snapshot.get(r.id);
    return { r, last: said ?? snap ?? 'unknown' };
  });
  const lostGhosts = ghosts.filter((g) => g.last !== 'starting');
  add('every ghost_sweep was `starting` at a SIGKILL', lostGhosts.length === 0, lostGhosts.map((g) => `    last status ${g.last}\n${describe(s, g.r)}`).join('\n'));
  if (ghosts.length) console.log(`  ghost_sweep: ${ghosts.map((g) => `${g.r.id} (${g.r.label}, was ${g.last})`).join(', ')}`);
  return v;
}

function summary(s: Soak, recs: RunRecord[], ms: number): void {
  const byEnd = new Map<string, number>();
  const byKiller = new Map<string, number>();
  const byKind = new Map<string, number>();
  for (const r of recs) {
    tally(byEnd, r.endReason ?? `non-ended:${r.status}`);
    if (r.killedBy) tally(byKiller, r.killedBy);
    tally(byKind, `${r.kind}${r.depth > 1 ? '(grandchild)' : ''}`);
  }
  const dups = [...s.submitted.values()].filter((ids) => ids.length > 1).length;
  const retried = recs.filter((r) => r.label && !s.submitted.get(r.label)?.includes(r.id) && r.depth === 1).length;
  const rows: [string, string][] = [
    ['seed', String(SEED)],
    ['duration', `${Math.round(ms / 1000)} s`],
    ['runs (all, on disk)', `${recs.length} (${fmt(byKind)})`],
    ['end reasons', fmt(byEnd)],
    ['killedBy', fmt(byKiller)],
    ['kills', fmt(s.kills)],
    ['steers', fmt(s.steers)],
    ['restarts', `${s.restarts.length} (${s.restarts.map((x) => `${Math.round(x.downMs / 100) / 10} s down${x.caught ? `, cut ${x.caught.id} materializing` : ''}`).join('; ')})`],
    ['spawn retries', `queue_full ${s.queueFull}, daemon down ${s.unavailable}; labels spawned twice ${dups}, unanswered spawns that made a run ${retried}`],
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  console.log('\n== soak summary');
  for (const [k, val] of rows) console.log(`  ${k.padEnd(w)}  ${val}`);
}

async function main(): Promise<number> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'bsk-'));
  const rnd = prng(SEED);
  const points = restartPoints(rnd, N, RESTARTS);
  const plan = makePlan(N, rnd, RESTARTS > 0 ? points[0]! : -1);
  const kinds = new Map<string, number>();
  for (const p of plan) tally(kinds, p.kind);
  console.log(`soak: seed ${SEED}, ${N} runs (${fmt(kinds)}; ${plan.filter((p) => p.big).length} write ${BIG_BYTES / 1e6} MB; ${plan.reduce((n, p) => n + p.kids.length, 0)} grandchildren planned), restarts before submissions ${points.join(', ')}, home ${home}`);
  const s = new Soak(home);
  const t0 = Date.now();
  let code = 1;
  try {
    await s.boot();
    const finished = await drive(s, plan, points);
    const stop = await stopServe(s.daemon, 'SIGTERM');
    s.up = false;
    const ms = Date.now() - t0;
    const verdicts = await check(s, plan, finished, stop);
    summary(s, allRecords(home), ms);
    console.log('\n== checks');
    for (const x of verdicts) console.log(`  ${x.ok ? 'ok  ' : 'FAIL'} ${x.name}${!x.ok && x.detail ? `\n${x.detail}` : ''}`);
    code = verdicts.every((x) => x.ok) ? 0 : 1;
  } finally {
    await s.api.close();
    if (s.daemon && s.daemon.proc.exitCode === null && s.daemon.proc.signalCode === null) await stopServe(s.daemon, 'SIGKILL');
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    if (code === 0 && !KEEP) fs.rmSync(home, { recursive: true, force: true });
    else console.log(`\nhome kept: ${home} (daemon output: daemon-N.out/.err)`);
  }
  return code;
}

process.exit(await main());
