/**
 * A warm pool slot's life (pool.ts): made as a cold jail is, waiting, destroyed.
 *
 * Guarantees: a slot is `create()`d by the same driver with the same hardened body as a cold
 * jail (verify-after-create, its own fresh capped workspace and broker socket directory) and is
 * handed over only once its waiter said it is ready. As root its FIFO is root's, readable by
 * the jail's group only (0640: the jail may read its assignment, no jail may write one) in a
 * directory root owns (0750, the jail's group may enter); not root, 0666 in a 0711 directory
 * inside brig's private brokers directory, as a run's socket is. Each slot has a random nonce
 * in its waiter (pool-waiter.ts) and a recorded FIFO identity; `intact()` says whether its
 * PID 1 is still that waiter and its FIFO still that FIFO — the pool hands out nothing else.
 * An agent-ready slot (issue 26) also holds its pre-started agent runtime: its host pid and
 * start time are recorded once it said it waits, and `intact()` says yes only while the jail's
 * pids cgroup holds exactly the waiter and that runtime — alive, not a zombie, the waiter's
 * child, its argv the pre-start argv — so a runtime that died, was replaced, or started
 * anything before its run is discarded with its slot and the run goes on without it.
 * Threat: a slot that is not what a cold jail would be, one taken over by something that
 * wrote to its FIFO, or one that leaves its container, disk or directory behind. Trusts: the
 * driver's create and verify, the engine's inspect (the waiter's host pid), /proc, the
 * kernel's permission checks. Fails closed: anything that fails while making a slot destroys
 * what was made and throws; destroying never throws; `intact()` says no on any doubt.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BrigError } from '../../util/errors.js';
import { execInHelper } from '../../util/spawner.js';
import { POOL_KEY_PREFIX, type JailLimits, type JailSpec } from '../types.js';
import type { DockerJail } from './docker-jail.js';
import type { DockerJailDriver } from './docker-jail-driver.js';
import { EXIT_FIFO, FIFO, PRESTART_ARGV, SLOT_ENV, waiterReady, waiterScript } from './pool-waiter.js';
import { JAIL_USER, renderCreateBody, type CreateBody } from './profile.js';
import { RUNTIME_BUSYBOX } from './runtime-bundle.js';
import { REAPER_SLEEPS, cgroupFilesOf, type ReaperTerms } from './reaper.js';

/** Through the command helper (util/spawner.ts): a fork from the daemon blocks its event loop. */
const run = execInHelper;
/** coreutils' mkfifo, by absolute path (Node has no mkfifo); found once. */
const MKFIFO = ['/usr/bin/mkfifo', '/bin/mkfifo'].find((p) => fs.existsSync(p));
const JAIL_IDS = JAIL_USER.split(':').map(Number) as [number, number];

export interface Slot {
  key: string;
  dir: string;
  jail: DockerJail;
  body: CreateBody;
  shape: string;
  readyAt: string;
  /** The waiter's nonce: the assignment must carry it. */
  nonce: string;
  /** The waiter's argv: PID 1 of the slot must still be exactly this. */
  argv: string[];
  /** The FIFO's device and inode when it was made. */
  fifo: { dev: number; ino: number };
  /** The reaper's: its exit FIFO's identity, the waiter's host pid and its cgroups (null: no reaper, the engine says the end). */
  reaper: SlotReaper | null;
  /** Set once a run took it: from then on its run's ender destroys it. */
  taken: boolean;
  /** A foreign image's slot: the image ENV names its waiter holds (unset by the assignment). */
  imageEnvKeys?: string[];
  /** An agent-ready slot's pre-started runtime: its host pid and its start time (clock ticks after boot, /proc/PID/stat). */
  agent?: { pid: number; startTime: string };
}

/** What the host needs to believe a slot's reaper (reaper.ts), and the sleep it execs once it reported. */
export interface SlotReaper extends ReaperTerms {
  sleep: string[];
  /** The waiter's start time (clock ticks after boot, /proc/PID/stat): with its pid, that very process. */
  startTime?: string;
}

/** A fresh slot key: `pool-` and 12 hex (the sweep knows a slot by its prefix). */
export function newSlotKey(): string {
  return `${POOL_KEY_PREFIX}${crypto.randomBytes(6).toString('hex')}`;
}

export interface MakeSlot {
  driver: DockerJailDriver;
  /** The supervisor's brokers directory: the slot's directory is made in it. */
  brokersDir: string;
  key: string;
  shape: string;
  image: string;
  limits: JailLimits;
  /** Agent-ready: the waiter pre-starts the agent runtime (brig's own image, with a reaper only). */
  agent?: boolean;
}

/** Makes, starts and waits for one slot; on any failure what was made is gone before it throws. */
export async function makeSlot(o: MakeSlot): Promise<Slot> {
  const dir = path.join(o.brokersDir, o.key);
  let jail: DockerJail | undefined;
  try {
    const { fifo, exitFifo } = await slotDir(dir);
    const nonce = crypto.randomBytes(16).toString('hex');
    // A foreign image's waiter is brig's own busybox from the runtime bind: nothing of the image runs before the run.
    const foreign = await o.driver.imageTermsFor(o.image, { env: { ...SLOT_ENV } });
    // A pre-started runtime is reaped like any child: without the reaper's FIFO (not root) or in a foreign image there is none.
    const agent = o.agent === true;
    if (agent && (foreign || !exitFifo)) throw new BrigError('jail_failed', 'an agent-ready slot needs brig\'s own image and the reaper (brig as root)');
    const sleep = [...REAPER_SLEEPS[foreign ? 1 : 0]!];
    const argv = [foreign ? RUNTIME_BUSYBOX : '/bin/sh', ...(foreign ? ['sh'] : []), '-c', waiterScript(nonce, agent ? { sleep } : undefined)];
    const spec: JailSpec = { runId: o.key, leaseId: 'pool', rootRunId: o.key, argv, env: { ...SLOT_ENV }, limits: o.limits, artifacts: [], brokerDir: dir, inputs: [], image: o.image };
    const rendered = renderCreateBody(spec, o.image, o.driver.owner, foreign);
    if (!rendered.ok) throw rendered.error;
    jail = (await o.driver.create(spec)) as DockerJail;
    await jail.start();
    if (!(await waiterReady(jail, agent ? 30_000 : 15_000, agent))) throw new BrigError('jail_failed', agent ? 'the pooled jail\'s waiter or its pre-started agent runtime did not start' : 'the pooled jail\'s waiter did not start');
    jail.clearTails();
    const reaper = exitFifo ? await reaperOf(jail, dir, exitFifo, sleep) : null;
    const runtime = agent ? await prestartedOf(reaper) : undefined;
    if (agent && !runtime) throw new BrigError('jail_failed', 'the pooled jail\'s pre-started agent runtime was not found alone beside its waiter');
    const slot: Slot = { key: o.key, dir, jail, body: rendered.value, shape: o.shape, readyAt: new Date().toISOString(), taken: false, nonce, argv, fifo, reaper, ...(foreign ? { imageEnvKeys: Object.keys(foreign.terms.env) } : {}), ...(runtime ? { agent: runtime } : {}) };
    return slot;
  } catch (e) {
    await jail?.destroy().catch(() => {});
    await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => {});
    throw e;
  }
}

/** Removes the slot's container, volume and directory (best effort; never throws). */
export async function destroySlot(slot: Slot): Promise<void> {
  slot.taken = true; // its waiter's exit is this destroy, not a discard
  await slot.jail.destroy().catch(() => {});
  await fs.promises.rm(slot.dir, { recursive: true, force: true }).catch(() => {});
}

/**
 * The reaper's terms: the waiter's host pid and the cgroup files the host reads to believe a
 * report (reaper.ts). Null — the engine alone says the end — when any is not found: a doubt
 * costs speed, never a wrong end.
 */
async function reaperOf(jail: DockerJail, dir: string, fifo: { dev: number; ino: number }, sleep: string[]): Promise<SlotReaper | null> {
  const pid = ((await jail.inspect().catch(() => null)) as { State?: { Pid?: number } } | null)?.State?.Pid;
  if (!pid) return null;
  const files = await cgroupFilesOf(pid);
  const startTime = statOf(pid)?.[19];
  return files ? { fifoPath: path.join(dir, EXIT_FIFO), fifo, pid, ...files, sleep, ...(startTime ? { startTime } : {}) } : null;
}

/** /proc/PID/stat's fields after the command (state is [0], ppid [1], starttime [19]); null when gone. */
function statOf(pid: number): string[] | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
}

/** The pids in the jail's pids cgroup (cgroup.procs: processes, not threads); null when unreadable. */
function procsOf(procs: string): number[] | null {
  try {
    return fs.readFileSync(procs, 'utf8').split('\n').filter((l) => l !== '').map(Number);
  } catch {
    return null;
  }
}

/** Whether `pid` is the waiter's live child running the pre-start argv. */
function isPrestarted(pid: number, waiter: number): boolean {
  const st = statOf(pid);
  if (!st || st[0] === 'Z' || Number(st[1]) !== waiter) return false;
  const cmdline = (() => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return null;
    }
  })();
  return cmdline === `${PRESTART_ARGV.join('\0')}\0`;
}

/**
 * The pre-started runtime of a slot whose waiter and runtime both said they are ready: the one
 * other process of the jail's pids cgroup, the waiter's child with the pre-start argv. Undefined
 * when the jail holds anything else (or no reaper terms to find it by).
 */
async function prestartedOf(reaper: SlotReaper | null): Promise<{ pid: number; startTime: string } | undefined> {
  if (!reaper) return undefined;
  const others = procsOf(reaper.procs)?.filter((p) => p !== reaper.pid);
  if (!others || others.length !== 1 || !isPrestarted(others[0]!, reaper.pid)) return undefined;
  const startTime = statOf(others[0]!)?.[19];
  return startTime ? { pid: others[0]!, startTime } : undefined;
}

/** Whether an agent-ready slot's jail still holds exactly its waiter and its pre-started runtime, that runtime alive. */
function prestartIntact(slot: Slot): boolean {
  if (!slot.agent || !slot.reaper) return !slot.agent;
  const procs = procsOf(slot.reaper.procs);
  if (!procs || procs.length !== 2 || !procs.includes(slot.reaper.pid) || !procs.includes(slot.agent.pid)) return false;
  return isPrestarted(slot.agent.pid, slot.reaper.pid) && statOf(slot.agent.pid)?.[19] === slot.agent.startTime;
}

/**
 * The slot's socket directory with its FIFOs (see the header for the modes); their
 * identities, to know them again. The exit FIFO is the jail's to write and root's alone to
 * read (0620, the jail's group); not root, there is none (no reaper: the engine says the end).
 */
async function slotDir(dir: string): Promise<{ fifo: { dev: number; ino: number }; exitFifo: { dev: number; ino: number } | null }> {
  await fs.promises.mkdir(dir, { mode: 0o700 });
  const fifo = path.join(dir, FIFO);
  if (!MKFIFO) throw new BrigError('jail_failed', "the warm pool needs coreutils' mkfifo (/usr/bin/mkfifo); install coreutils or run without --warm");
  await run(MKFIFO, ['-m', '0600', fifo], { env: {} }).catch((e: unknown) => {
    throw new BrigError('jail_failed', `making the pooled jail's FIFO failed: ${(e as Error).message}`);
  });
  let exitFifo: { dev: number; ino: number } | null = null;
  if (process.getuid?.() === 0) {
    // The jail reads its assignment through its group; only root writes one.
    await fs.promises.chown(fifo, 0, JAIL_IDS[1]);
    await fs.promises.chmod(fifo, 0o640);
    // The reaper writes its report through its group; only root reads one.
    const exit = path.join(dir, EXIT_FIFO);
    await run(MKFIFO, ['-m', '0600', exit], { env: {} }).catch((e: unknown) => {
      throw new BrigError('jail_failed', `making the pooled jail's exit FIFO failed: ${(e as Error).message}`);
    });
    await fs.promises.chown(exit, 0, JAIL_IDS[1]);
    await fs.promises.chmod(exit, 0o620);
    const est = await fs.promises.lstat(exit);
    exitFifo = { dev: est.dev, ino: est.ino };
    await fs.promises.chown(dir, 0, JAIL_IDS[1]);
    await fs.promises.chmod(dir, 0o750);
  } else {
    // Not root: the jail's uid cannot be given the files; the private brokers parent (0700) keeps others out.
    await fs.promises.chmod(fifo, 0o666);
    await fs.promises.chmod(dir, 0o711);
  }
  const st = await fs.promises.lstat(fifo);
  return { fifo: { dev: st.dev, ino: st.ino }, exitFifo };
}

/**
 * Whether the slot is still what was made: running, its PID 1 (the engine's host pid) exactly
 * its waiter's argv, its FIFO the same FIFO with the same owner and mode. Any doubt is no.
 * With a reaper the host knows its waiter already — pid and start time, read at make — and
 * finds it alive in /proc without asking the engine (a round trip off the run's path); the
 * engine's account is still read before the child exists (pool.ts, the recheck).
 */
export async function intact(slot: Slot): Promise<{ ok: true } | { ok: false; why: string }> {
  const pid = slot.reaper?.startTime ? waiterAlive(slot.reaper.pid, slot.reaper.startTime) : await enginePid(slot);
  if (!pid) return { ok: false, why: 'not_running' };
  const cmdline = await fs.promises.readFile(`/proc/${pid}/cmdline`).catch(() => null);
  if (!cmdline || cmdline.toString('utf8') !== `${slot.argv.join('\0')}\0`) return { ok: false, why: 'not_its_waiter' };
  const st = await fs.promises.lstat(path.join(slot.dir, FIFO)).catch(() => null);
  if (!st || !st.isFIFO() || st.dev !== slot.fifo.dev || st.ino !== slot.fifo.ino) return { ok: false, why: 'fifo_changed' };
  if (process.getuid?.() === 0 && (st.uid !== 0 || (st.mode & 0o777) !== 0o640)) return { ok: false, why: 'fifo_changed' };
  if (slot.reaper) {
    const ex = await fs.promises.lstat(path.join(slot.dir, EXIT_FIFO)).catch(() => null);
    if (!ex || !ex.isFIFO() || ex.dev !== slot.reaper.fifo.dev || ex.ino !== slot.reaper.fifo.ino || ex.uid !== 0 || (ex.mode & 0o777) !== 0o620) return { ok: false, why: 'fifo_changed' };
    if (pid !== slot.reaper.pid) return { ok: false, why: 'not_its_waiter' };
  }
  if (!prestartIntact(slot)) return { ok: false, why: 'runtime_gone' };
  return { ok: true };
}

/** The waiter's pid while that very process (its start time) lives; undefined once it is gone or a zombie. */
function waiterAlive(pid: number, startTime: string): number | undefined {
  const st = statOf(pid);
  return st && st[0] !== 'Z' && st[19] === startTime ? pid : undefined;
}

/** PID 1's host pid as the engine says it, while the container runs. */
async function enginePid(slot: Slot): Promise<number | undefined> {
  const inspect = (await slot.jail.inspect().catch(() => null)) as { State?: { Running?: boolean; Pid?: number } } | null;
  return inspect?.State?.Running && inspect.State.Pid ? inspect.State.Pid : undefined;
}
