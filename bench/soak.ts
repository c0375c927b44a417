/**
 * Soak: a real `brig serve` daemon under mixed load and the faults production brings — kills,
 * steers, SIGKILL restarts, an engine blip, a full home, a flaky model and a SIGTERM drain —
 * then a check that every run ended exactly once, every byte it materialized is the byte its
 * task wrote, and nothing leaked or was lost (INV-8). docs/performance.md "Soak" says what
 * each check means.
 *
 *   node --import tsx bench/soak.ts [--runs 200] [--restarts 3] [--seed S] [--timeout-min 20]
 *        [--warm N] [--tail 12] [--no-blip] [--no-full] [--keep]
 *
 * Children (bench/soak-lib.ts): commands, stepping scripts, waiters (step until a steer says
 * finish), agents on a flaky scripted model (bench/soak-faults.ts), spawners of async
 * grandchildren; every output is a seeded stream the soak recomputes. The daemon's engine is
 * reached through a unix-socket proxy (test/helpers/engine-proxy.ts) the soak cuts and
 * freezes; its home is a loop-mounted ext4 the soak fills for a few seconds. GET /v1/health
 * latency and the daemon's RSS are sampled throughout. Exits 1 when a check fails (the home is
 * kept then, with each daemon's output in logs/daemon-N.out/.err beside it).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApiClient } from '../src/client/index.js';
import { brigPaths } from '../src/config/index.js';
import { DockerJailDriver, ownerForHome } from '../src/jail/index.js';
import type { RunRecord, RunStatus } from '../src/runs/index.js';
import { startEngineProxy, type EngineProxy } from '../test/helpers/engine-proxy.js';
import { check, type Verdict } from './soak-check.js';
import { flakyModel, healthOnce, loopHome, quantile, rssKiB, type FlakyModel, type LoopHome } from './soak-faults.js';
import { allRecords, between, BIG_BYTES, makePlan, prng, readRecord, sleep, startServe, stopServe, type DaemonProc, type Planned } from './soak-lib.js';

const LIVE: RunStatus[] = ['queued', 'starting', 'running', 'materializing'];

function flag(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : dflt;
  if (!Number.isFinite(v)) throw new Error(`--${name} needs a number`);
  return v;
}

export const N = flag('runs', 200);
const RESTARTS = flag('restarts', 3);
export const SEED = flag('seed', Date.now() % 2 ** 31);
export const BOUND_MS = flag('timeout-min', 20) * 60_000;
const KEEP = process.argv.includes('--keep');
/** `--warm N`: every daemon keeps a warm pool (its slots must be swept after each SIGKILL too). */
const WARM = flag('warm', 0);
const TAIL = flag('tail', 12);
const BLIP = !process.argv.includes('--no-blip');
const FULL = !process.argv.includes('--no-full');
/** The drain `serve --drain 10` gets, plus the kill window (agentStopGraceMs + 10 s) and slack. */
export const DRAIN_BOUND_MS = 45_000;

export type Event = 'restart-materializing' | 'restart' | 'engine-cut' | 'engine-freeze' | 'full-home';

export interface Restart {
  k: number;
  wanted: 'materializing' | 'any';
  /** The run seen `materializing` when the daemon was SIGKILLed, and the end it was collecting for. */
  caught: { id: string; pendingEnd: string } | null;
  snapshot: Map<string, RunStatus>;
  downMs: number;
  reconcile: DaemonProc['reconcile'];
}

/** A fault window: from its start until the soak undid it. */
export interface Window {
  what: Event;
  from: number;
  to: number;
  note: string;
}

export interface Drain {
  ms: number;
  stop: Awaited<ReturnType<typeof stopServe>>;
  /** Tail runs' statuses when SIGTERM was sent, and after the drain. */
  before: Map<string, number>;
  after: Map<string, number>;
}

export const tally = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
export const fmt = (m: Map<string, number>) => [...m].sort().map(([k, v]) => `${k} ${v}`).join(', ') || '-';

export class Soak {
  readonly paths;
  readonly api;
  /** Victims and their delays; submission gaps and downtimes draw from their own stream. */
  readonly chaos = prng(SEED ^ 0x5bd1e995);
  readonly pace = prng(SEED ^ 0x27d4eb2f);
  daemon!: DaemonProc;
  daemons: DaemonProc[] = [];
  up = false;
  #upWaiters: (() => void)[] = [];
  /** Daemons the soak stopped itself; any other exit is a defect. */
  readonly #stopping = new Set<DaemonProc>();
  readonly unexpectedExits: string[] = [];
  readonly submitted = new Map<string, string[]>(); // label → run ids the daemon returned
  readonly submitErrors: { label: string; code: string; message: string }[] = [];
  queueFull = 0;
  unavailable = 0;
  storageFull = 0;
  readonly bigIds = new Set<string>();
  readonly kills = new Map<string, number>();
  readonly steers = new Map<string, number>();
  /** Run id → when its planned steer was last sent. */
  readonly aimed = new Map<string, number>();
  readonly aimedSteers = new Map<string, number>();
  readonly restarts: Restart[] = [];
  readonly windows: Window[] = [];
  /** Full-home probes: what POST /v1/runs answered while the home was full. */
  readonly fullProbes = new Map<string, number>();
  readonly byLabel: Map<string, Planned>;
  readonly health: number[] = [];
  readonly healthErrors = new Map<string, number>();
  readonly rss: { n: number; at: number; kib: number }[] = [];
  drain: Drain | null = null;
  /** Failed runs by error code and the fault they ended in (soak-check.ts). */
  readonly failures = new Map<string, number>();
  readonly #rolled = new Set<string>();
  #scheduled: { at: number; id: string; what: 'kill' | 'steer' }[] = [];
  readonly #inflight = new Set<Promise<unknown>>();
  #meters: NodeJS.Timeout[] = [];

  constructor(readonly home: string, readonly logs: string, readonly plan: Planned[], readonly proxy: EngineProxy | null, readonly model: FlakyModel, readonly disk: LoopHome | null) {
    this.paths = brigPaths(home);
    this.api = new ApiClient(this.paths.socket);
    this.byLabel = new Map(plan.map((p) => [p.label, p]));
  }

  async boot(): Promise<void> {
    const env = { ...this.model.env, ...(this.proxy ? { DOCKER_HOST: this.proxy.dockerHost } : {}) };
    const d = await startServe(this.home, this.daemons.length, { logs: this.logs, env, extra: WARM > 0 ? ['--warm', String(WARM)] : [] });
    this.daemon = d;
    this.daemons.push(d);
    void d.exited.then((e) => {
      if (this.#stopping.has(d)) return;
      this.unexpectedExits.push(`daemon #${d.n} exited by itself (code ${e.code}, signal ${e.signal}); stderr tail: ${fs.readFileSync(d.errFile, 'utf8').slice(-600)}`);
      console.log(`  ! daemon #${d.n} exited by itself (code ${e.code}, signal ${e.signal}): starting another`);
      if (this.daemon === d) {
        this.up = false;
        void this.#bootAgain();
      }
    });
    this.up = true;
    for (const w of this.#upWaiters.splice(0)) w();
  }

  /** After a daemon died by itself: start another, every 2 s until one serves (a full home may refuse a start). */
  async #bootAgain(): Promise<void> {
    for (let i = 0; ; i++) {
      await sleep(i === 0 ? 1000 : 2000);
      try {
        return await this.boot();
      } catch (e) {
        this.unexpectedExits.push(`a start after it failed: ${String(e).slice(0, 300)}`);
        console.log(`  ! a start after daemon #${this.daemon.n} died failed; trying again`);
      }
    }
  }

  async stop(sig: NodeJS.Signals, boundMs?: number): Promise<Awaited<ReturnType<typeof stopServe>>> {
    this.up = false;
    this.#stopping.add(this.daemon);
    return stopServe(this.daemon, sig, boundMs);
  }

  whenUp(): Promise<void> {
    return this.up ? Promise.resolve() : new Promise((r) => this.#upWaiters.push(r));
  }

  /** Health every 500 ms and RSS every 2 s, while a daemon is up. */
  startMeters(): void {
    let busy = false;
    this.#meters.push(
      setInterval(() => {
        if (!this.up || busy) return;
        busy = true;
        void healthOnce(this.paths.socket).then((r) => {
          busy = false;
          if (!this.up) return; // a probe cut by a stop the soak made
          if (typeof r === 'number') this.health.push(r);
          else tally(this.healthErrors, r);
        });
      }, 500),
      setInterval(() => {
        const kib = this.up ? rssKiB(this.daemon.proc.pid) : undefined;
        if (kib !== undefined) this.rss.push({ n: this.daemon.n, at: Date.now(), kib });
      }, 2000),
    );
  }

  stopMeters(): void {
    for (const t of this.#meters.splice(0)) clearInterval(t);
  }

  /** Submits one child; queue_full, storage_full and a down daemon are retried, anything else is recorded. */
  async submit(p: Planned, retryQueueFull = true): Promise<void> {
    for (;;) {
      await this.whenUp();
      const r = await this.api.spawn(p.req).catch((e: unknown) => ({ ok: false as const, error: { code: 'daemon_unavailable', message: String(e) } }));
      if (r.ok) {
        this.submitted.set(p.label, [...(this.submitted.get(p.label) ?? []), r.value.id]);
        if (p.big) this.bigIds.add(r.value.id);
        return;
      }
      if (r.error.code === 'queue_full' && retryQueueFull) {
        this.queueFull++;
        await sleep(between(this.pace, 400, 1500));
      } else if (r.error.code === 'storage_full') {
        this.storageFull++;
        await sleep(1000);
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

  #send(what: 'kill' | 'steer' | 'aimed', id: string, message = ''): void {
    const m = what === 'kill' ? this.kills : what === 'steer' ? this.steers : this.aimedSteers;
    tally(m, 'sent');
    const call = what === 'kill' ? this.api.kill(id, { confirm: true }) : this.api.steer(id, message);
    const p = call
      .then((r) => tally(m, r.ok ? 'ok' : r.error.code))
      .catch(() => tally(m, 'daemon_unavailable'))
      .finally(() => this.#inflight.delete(p));
    this.#inflight.add(p);
  }

  /**
   * One chaos tick. A run the plan steers gets its steer once it is `running` (again 8 s later
   * while it still runs: a steer held in memory dies with a SIGKILLed daemon). Every other run
   * first seen live is rolled once: ~10% killed, ~5% steered, 0–2.5 s later.
   */
  async chaosTick(): Promise<void> {
    const live = await this.live();
    const now = Date.now();
    for (const r of live ?? []) {
      const steerTo = r.label ? this.byLabel.get(r.label)?.steerTo : undefined;
      if (steerTo && r.status === 'running' && now - (this.aimed.get(r.id) ?? 0) > 8000 && (r.stepsExecuted > 0 || this.aimed.has(r.id))) {
        if (this.aimed.has(r.id)) tally(this.aimedSteers, 'resent');
        this.aimed.set(r.id, now);
        this.#send('aimed', r.id, steerTo);
      }
      if (this.#rolled.has(r.id)) continue;
      this.#rolled.add(r.id);
      const x = this.chaos();
      const at = now + between(this.chaos, 0, 2500);
      if (x < 0.1) this.#scheduled.push({ at, id: r.id, what: 'kill' });
      else if (x < 0.15 && !steerTo) this.#scheduled.push({ at, id: r.id, what: 'steer' });
    }
    if (!this.up) return; // due ones wait for the daemon
    const due = this.#scheduled.filter((s) => s.at <= now);
    this.#scheduled = this.#scheduled.filter((s) => s.at > now);
    for (const s of due) this.#send(s.what, s.id, `soak steer for ${s.id}`);
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
    const t0 = Date.now();
    await this.stop('SIGKILL');
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

  /** The engine goes away for 3–5 s: every connection cut and new ones refused, or everything frozen. */
  async engineBlip(how: 'engine-cut' | 'engine-freeze'): Promise<void> {
    if (!this.proxy) return;
    const ms = between(this.pace, 3000, 5000);
    const live = (await this.live())?.length ?? '?';
    const from = Date.now();
    if (how === 'engine-cut') this.proxy.refuse(ms);
    else this.proxy.freeze();
    await sleep(ms);
    if (how === 'engine-freeze') this.proxy.thaw();
    this.windows.push({ what: how, from, to: Date.now(), note: `${ms} ms, ${live} live` });
    console.log(`  ${how}: ${ms} ms with ${live} live run(s)`);
  }

  /** The home fills (not by brig) for 6–10 s: spawns are probed while it is full, then the space returns. */
  async fullHome(): Promise<void> {
    if (!this.disk) return;
    const ms = between(this.pace, 6000, 10_000);
    const live = (await this.live())?.length ?? '?';
    const from = Date.now();
    const left = this.disk.fill();
    const probe = this.plan.find((p) => p.label === 'soak-probe')!;
    for (let i = 0; Date.now() - from < ms; i++) {
      if (this.up && i < 5) {
        const r = await this.api.spawn(probe.req).catch((e: unknown) => ({ ok: false as const, error: { code: `transport: ${String(e)}`, message: '' } }));
        if (r.ok) this.submitted.set(probe.label, [...(this.submitted.get(probe.label) ?? []), r.value.id]);
        tally(this.fullProbes, r.ok ? 'admitted' : r.error.code);
      }
      await sleep(1000);
    }
    this.disk.unfill();
    this.windows.push({ what: 'full-home', from, to: Date.now(), note: `${Date.now() - from} ms at ${left} B free, ${live} live; spawns answered: ${fmt(this.fullProbes)}` });
    console.log(`  full home: ${Date.now() - from} ms at ${left} B free with ${live} live run(s); spawns answered: ${fmt(this.fullProbes)}`);
  }

  async event(k: number, what: Event): Promise<void> {
    if (what === 'restart-materializing' || what === 'restart') return this.restart(this.restarts.length, what === 'restart' ? 'any' : 'materializing');
    if (what === 'full-home') return this.fullHome();
    return this.engineBlip(what);
  }

  /**
   * The tail, all at once, then SIGTERM once some run and some wait in the queue: the drain
   * must end in its bound with exit 0, and each run end (or, kept, end at the next start).
   */
  async drainWithWork(tail: Planned[]): Promise<void> {
    await Promise.all(tail.map((p) => this.submit(p, false)));
    const ids = new Set(tail.flatMap((p) => this.submitted.get(p.label) ?? []));
    const statuses = () => {
      const m = new Map<string, number>();
      for (const id of ids) tally(m, readRecord(this.home, id)?.status ?? 'absent');
      return m;
    };
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && !((statuses().get('running') ?? 0) > 0 && (statuses().get('queued') ?? 0) > 0)) await sleep(200);
    const before = statuses();
    const t0 = Date.now();
    const stop = await this.stop('SIGTERM', 120_000);
    this.drain = { ms: Date.now() - t0, stop, before, after: statuses() };
    console.log(`  drain: SIGTERM with tail ${fmt(before)} → exit ${stop.code}${stop.forced ? ' (forced)' : ''} after ${this.drain.ms} ms; tail then ${fmt(this.drain.after)}`);
  }
}

export function fmtStatuses(ss: string[]): string {
  const m = new Map<string, number>();
  for (const s of ss) tally(m, s);
  return fmt(m);
}

/** One submission index per event in the middle 70% of the run, one in each of equal stretches of it. */
function eventPoints(rnd: () => number, n: number, r: number): number[] {
  const lo = Math.max(4, Math.floor(n * 0.15));
  const span = Math.max(r, Math.floor(n * 0.85) - lo) / Math.max(r, 1);
  return Array.from({ length: r }, (_, k) => lo + Math.floor(k * span) + between(rnd, 0, Math.max(0, Math.floor(span) - 1)));
}

/** The restart that cuts a collection first (the plan makes big runs just before it), the rest shuffled. */
function eventOrder(rnd: () => number): Event[] {
  const rest: Event[] = [...Array.from({ length: Math.max(0, RESTARTS - 1) }, () => 'restart' as const), ...(BLIP ? (['engine-cut', 'engine-freeze'] as const) : []), ...(FULL ? (['full-home'] as const) : [])];
  for (let i = rest.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [rest[i], rest[j]] = [rest[j]!, rest[i]!];
  }
  return RESTARTS > 0 ? ['restart-materializing', ...rest] : rest;
}

async function drive(s: Soak, plan: Planned[], points: number[], events: Event[]): Promise<boolean> {
  const t0 = Date.now();
  let submitting = true;
  let chain = Promise.resolve();
  const chaosLoop = (async () => {
    while (submitting || !s.quiet() || (await s.live().then((l) => l === null || l.length > 0))) {
      await s.chaosTick();
      if (Date.now() - t0 > BOUND_MS) return false;
      await sleep(700);
    }
    return true;
  })();
  const ticker = setInterval(() => {
    void s.live().then((l) => console.log(`  … ${Math.round((Date.now() - t0) / 1000)} s: ${[...s.submitted.keys()].length}/${plan.length} submitted, ${l ? `${l.length} live (${fmtStatuses(l.map((r) => r.status))})` : 'daemon down'}, ${s.restarts.length} restart(s), ${s.windows.length} fault window(s), queue_full ${s.queueFull}`));
  }, 20_000);
  let burst = 0;
  for (let i = 0; i < plan.length; i++) {
    const k = points.indexOf(i);
    if (k >= 0) chain = chain.then(() => s.event(k, events[k]!));
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

/** Waits (chaos off) until no run is live, up to ms. */
async function settle(s: Soak, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const l = await s.live();
    if (l && l.length === 0) return true;
    await sleep(500);
  }
  return false;
}

function summary(s: Soak, recs: RunRecord[], ms: number, bytes: { full: number; partial: number; files: number; partialFiles: number }): void {
  const byEnd = new Map<string, number>();
  const byKiller = new Map<string, number>();
  const byKind = new Map<string, number>();
  for (const r of recs) {
    tally(byEnd, r.endReason ?? `non-ended:${r.status}`);
    if (r.killedBy) tally(byKiller, r.killedBy);
    const kind = r.label ? s.byLabel.get(r.label)?.kind : undefined;
    tally(byKind, `${kind ?? r.kind}${r.depth > 1 ? '(grandchild)' : ''}`);
  }
  const dups = [...s.submitted.values()].filter((ids) => ids.length > 1).length;
  const retried = recs.filter((r) => r.label && !s.submitted.get(r.label)?.includes(r.id) && r.depth === 1).length;
  const mb = (kib: number) => `${Math.round(kib / 1024)} MB`;
  const rss = s.rss.map((x) => x.kib);
  const first = s.rss[0];
  const last = s.rss[s.rss.length - 1];
  const hp = (q: number) => `${quantile(s.health, q).toFixed(1)} ms`;
  const rows: [string, string][] = [
    ['seed', String(SEED)],
    ['duration', `${Math.round(ms / 1000)} s`],
    ['runs (all, on disk)', `${recs.length} (${fmt(byKind)})`],
    ['end reasons', fmt(byEnd)],
    ['killedBy', fmt(byKiller)],
    ['failed (code, during)', fmt(s.failures)],
    ['outputs verified', `${bytes.files} files, ${bytes.full + bytes.partial} B (${bytes.full} B whole; ${bytes.partialFiles} partial files of killed/cut runs, ${bytes.partial} B, each a prefix of its stream)`],
    ['kills', fmt(s.kills)],
    ['steers (random)', fmt(s.steers)],
    ['steers (aimed)', fmt(s.aimedSteers)],
    ['restarts', `${s.restarts.length} (${s.restarts.map((x) => `${Math.round(x.downMs / 100) / 10} s down${x.caught ? `, cut ${x.caught.id} materializing` : ''}`).join('; ')})`],
    ['fault windows', s.windows.map((w) => `${w.what} ${w.note}`).join('; ') || '-'],
    ['model calls', fmt(s.model.stats)],
    ['drain', s.drain ? `${s.drain.ms} ms, exit ${s.drain.stop.code}${s.drain.stop.forced ? ' forced' : ''}; tail at SIGTERM ${fmt(s.drain.before)}, after ${fmt(s.drain.after)}` : '-'],
    ['daemon RSS', first && last ? `start ${mb(first.kib)} (#${first.n}), peak ${mb(Math.max(...rss))} (#${s.rss.find((x) => x.kib === Math.max(...rss))!.n}), end ${mb(last.kib)} (#${last.n}); ${rss.length} samples` : '-'],
    ['GET /v1/health', s.health.length ? `p50 ${hp(0.5)}, p99 ${hp(0.99)}, max ${Math.max(...s.health).toFixed(1)} ms; ${s.health.length} samples, failed while up: ${fmt(s.healthErrors)}` : '-'],
    ['spawn retries', `queue_full ${s.queueFull}, storage_full ${s.storageFull}, daemon down ${s.unavailable}; labels spawned twice ${dups}, unanswered spawns that made a run ${retried}`],
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  console.log('\n== soak summary');
  for (const [k, val] of rows) console.log(`  ${k.padEnd(w)}  ${val}`);
}

async function main(): Promise<number> {
  const disk = FULL ? loopHome(16_384) : 'off (--no-full)';
  const fallback = typeof disk === 'string' ? fs.mkdtempSync(path.join(os.tmpdir(), 'bsk-')) : null;
  const home = typeof disk === 'string' ? path.join(fallback!, 'h') : disk.home;
  const logs = typeof disk === 'string' ? path.join(fallback!, 'logs') : disk.logs;
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  fs.mkdirSync(logs, { recursive: true });
  if (typeof disk === 'string') console.log(`soak: no full-home phase: ${disk}`);
  const rnd = prng(SEED);
  const events = eventOrder(rnd);
  const points = eventPoints(rnd, N, events.length);
  const plan = makePlan(N, rnd, events[0] === 'restart-materializing' ? points[0]! : -1, TAIL);
  plan.push({ label: 'soak-probe', kind: 'command', big: false, req: { task: 'soak probe: spawned while the home is full', label: 'soak-probe', kind: 'command', argv: ['true'], async: true }, outputs: [], kids: [] });
  const main = plan.filter((p) => !p.tail && p.label !== 'soak-probe');
  const tail = plan.filter((p) => p.tail);
  const kinds = new Map<string, number>();
  for (const p of main) tally(kinds, p.kind);
  console.log(`soak: seed ${SEED}, ${N} runs (${fmt(kinds)}; ${main.filter((p) => p.big).length} write ${BIG_BYTES / 1e6} MB; ${main.reduce((n, p) => n + p.kids.length, 0)} grandchildren planned) + ${tail.length} for the drain; events ${events.map((e, k) => `${e}@${points[k]}`).join(', ')}; home ${home}`);
  const proxy = BLIP ? await startEngineProxy({ after: () => {} }) : null;
  const model = await flakyModel(plan, prng(SEED ^ 0x85ebca6b));
  const s = new Soak(home, logs, plan, proxy, model, typeof disk === 'string' ? null : disk);
  const t0 = Date.now();
  let code = 1;
  try {
    await s.boot();
    s.startMeters();
    const finished = await drive(s, main, points, events);
    await s.drainWithWork(tail);
    // The next start finishes what the drain kept (or has nothing to do); then an idle SIGTERM.
    await s.boot();
    const settled = await settle(s, 5 * 60_000);
    s.stopMeters();
    const stop = await s.stop('SIGTERM');
    const ms = Date.now() - t0;
    const { verdicts, bytes } = await check(s, plan, finished && settled, stop, DRAIN_BOUND_MS);
    summary(s, allRecords(home), ms, bytes);
    console.log('\n== checks');
    for (const x of verdicts as Verdict[]) console.log(`  ${x.ok ? 'ok  ' : 'FAIL'} ${x.name}${!x.ok && x.detail ? `\n${x.detail}` : ''}`);
    code = verdicts.every((x) => x.ok) ? 0 : 1;
  } finally {
    s.stopMeters();
    await s.api.close();
    if (s.daemon && s.daemon.proc.exitCode === null && s.daemon.proc.signalCode === null) await s.stop('SIGKILL');
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    await model.server.close();
    await proxy?.close();
    const keep = code !== 0 || KEEP;
    if (keep) console.log(`\nhome kept: ${home} (daemon output: ${logs}/daemon-N.out/.err)${typeof disk !== 'string' ? `; a loop mount: umount -l ${home} when done` : ''}`);
    else if (typeof disk !== 'string') disk.close(false);
    else fs.rmSync(fallback!, { recursive: true, force: true });
  }
  return code;
}

process.exit(await main());
