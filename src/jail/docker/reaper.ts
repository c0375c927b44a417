/**
 * The host's side of a pooled jail's reaper (pool-waiter.ts): when to believe that the child
 * ended, and with which status, without waiting for the engine's exit handling (issue 26).
 *
 * Guarantees: an end is taken only when the jail's pids cgroup holds its PID 1 (the reaper,
 * whose host pid the engine gave when the slot was made) alone — every other pid gone or a
 * zombie — so nothing of the child runs when its outputs are read; with the run's marker, only
 * once both streams carried it (all the child wrote has arrived), within a bound. The status
 * is the last report read: the child's to say either way (it may write the FIFO too, but not
 * while it runs and be believed). After a restart the reaper's status is read back from its
 * PID 1's argv (the sleep it exec'd carries it), or its report from the FIFO it still waits
 * to write. Threat: a child forging an early end to have its outputs read while it still
 * writes, or to end its run with a status it did not exit with while it keeps running.
 * Trusts: the kernel's cgroup membership and /proc (read as root), the engine's State.Pid.
 * Fails: to the engine — a watch that cannot open or trust its FIFO says nothing, and the
 * engine's exit (or the run's watchdog) ends the run as before.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { CollectCaps, CollectOptions, CollectReport, Jail, JailExit, StreamTails } from '../types.js';
import type { DockerJail } from './docker-jail.js';
import { EXIT_FIFO } from './pool-waiter.js';
import { BROKER_DIR } from './profile.js';
import { RUNTIME_BUSYBOX } from './runtime-bundle.js';

/** The largest report line read (a status is at most 3 digits): more is junk, dropped. */
const REPORT_MAX = 64;

/** The sleep a reaper execs once it reported (the child's status is appended): brig's busybox either way. */
export const REAPER_SLEEPS: readonly (readonly string[])[] = [['/bin/sleep', '2147483647'], [RUNTIME_BUSYBOX, 'sleep', '2147483647']];

/** What the host reads to believe a reaper: its FIFO, its host pid, its cgroup files. */
export interface ReaperTerms {
  /** The exit FIFO's host path and identity (dev, ino) when it was made. */
  fifoPath: string;
  fifo: { dev: number; ino: number };
  pid: number;
  /** The pids cgroup's `cgroup.procs`; the memory cgroup's `memory.oom_control` (v1) or `memory.events` (v2), when there is one. */
  procs: string;
  oomControl: string | null;
}

/** The cgroup files of a host pid (cgroup v1's pids and memory hierarchies, or v2's one); null when not found. */
export async function cgroupFilesOf(pid: number): Promise<{ procs: string; oomControl: string | null } | null> {
  const lines = (await fs.promises.readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '')).split('\n').map((l) => l.split(':'));
  const at = (controller: string) => lines.find((f) => f.length >= 3 && f[1]!.split(',').includes(controller))?.slice(2).join(':');
  const unified = lines.find((f) => f[0] === '0' && f[1] === '')?.slice(2).join(':');
  const pids = at('pids');
  const memory = at('memory');
  const procs = pids !== undefined ? `/sys/fs/cgroup/pids${pids}/cgroup.procs` : unified !== undefined ? `/sys/fs/cgroup${unified}/cgroup.procs` : null;
  if (!procs || !(await pidsIn(procs))?.includes(pid)) return null;
  const oom = memory !== undefined ? `/sys/fs/cgroup/memory${memory}/memory.oom_control` : unified !== undefined ? `/sys/fs/cgroup${unified}/memory.events` : null;
  return { procs, oomControl: oom && (await fs.promises.access(oom).then(() => true, () => false)) ? oom : null };
}

/**
 * A small kernel file (cgroup.procs, /proc/PID/stat, an oom counter), read synchronously: a
 * few microseconds in the kernel against four hops through the thread pool (open, stat, read,
 * close), on the path from a child's exit to its envelope. null when unreadable.
 */
function readSmall(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

async function pidsIn(procs: string): Promise<number[] | null> {
  const text = readSmall(procs);
  return text === null ? null : text.split('\n').filter((l) => l !== '').map(Number);
}

/** The `oom_kill` count of a memory cgroup; null when unreadable. */
export async function oomKills(file: string | null): Promise<number | null> {
  if (!file) return null;
  const m = /^oom_kill (\d+)$/m.exec(readSmall(file) ?? '');
  return m ? Number(m[1]) : null;
}

/** Whether the jail holds its reaper alone: every other pid gone or a zombie. Any doubt is no. */
export async function reaperAlone(procs: string, pid: number): Promise<boolean> {
  const pids = await pidsIn(procs);
  if (!pids?.includes(pid)) return false;
  for (const other of pids) {
    if (other === pid) continue;
    const stat = readSmall(`/proc/${other}/stat`);
    // Gone since the read: fine. Otherwise its state, after the command's closing parenthesis.
    if (stat !== null && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') return false;
  }
  return true;
}

/** The status a reaper that already reported carries in its sleep's argv (PID 1's cmdline); undefined while it has not. */
export async function reportedStatus(pid: number): Promise<number | undefined> {
  const argv = (await fs.promises.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0').slice(0, -1);
  for (const sleep of REAPER_SLEEPS) {
    if (argv.length === sleep.length + 1 && sleep.every((a, i) => argv[i] === a) && /^\d{1,3}$/.test(argv[sleep.length]!)) return Number(argv[sleep.length]);
  }
  return undefined;
}

/**
 * Watches one reaper: holds its exit FIFO's reading end (O_RDWR, so it never sees an end of
 * file while writers come and go) and turns the claims read there into one believed end.
 */
export class ReaperWatch {
  readonly ended: Promise<JailExit>;
  #confirmed: JailExit | undefined;
  #resolve!: (e: JailExit) => void;
  #sock: net.Socket | undefined;
  #latest: number | undefined;
  #checking = false;
  #dirty = false;
  #oomBefore: number | null = null;

  private constructor(
    private readonly jail: DockerJail,
    private readonly t: ReaperTerms,
    private readonly marker: string | undefined,
  ) {
    this.ended = new Promise((r) => (this.#resolve = r));
  }

  /** The believed end, once there is one. */
  get confirmed(): JailExit | undefined {
    return this.#confirmed;
  }

  /**
   * Opens the FIFO (it must still be the slot's: same device and inode, root's, 0620) and
   * starts reading; null when it cannot be trusted (the engine says the end). `marker`: the
   * run's, when this supervisor assigned it (after a restart it is not known: the tails are
   * what arrives from the reattach on).
   */
  static async open(jail: DockerJail, t: ReaperTerms, marker?: string): Promise<ReaperWatch | null> {
    let fd: number;
    try {
      fd = fs.openSync(t.fifoPath, fs.constants.O_RDWR | fs.constants.O_NONBLOCK | fs.constants.O_NOFOLLOW);
    } catch {
      return null;
    }
    const st = fs.fstatSync(fd);
    if (!st.isFIFO() || st.dev !== t.fifo.dev || st.ino !== t.fifo.ino || (process.getuid?.() === 0 && (st.uid !== 0 || (st.mode & 0o777) !== 0o620))) {
      fs.closeSync(fd);
      return null;
    }
    const w = new ReaperWatch(jail, t, marker);
    w.#oomBefore = await oomKills(t.oomControl);
    const sock = new net.Socket({ fd, readable: true, writable: false });
    w.#sock = sock;
    let buf = '';
    sock.on('data', (c: Buffer) => {
      buf += c.toString('latin1');
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        w.claim(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
      if (buf.length > REPORT_MAX) buf = '';
    });
    sock.on('error', () => {});
    return w;
  }

  /** A status said by the reaper (or forged by its child): checked from the host before it counts. */
  claim(line: string): void {
    if (!/^\d{1,3}$/.test(line) || this.#confirmed) return;
    this.#latest = Number(line);
    this.#dirty = true;
    void this.#check();
  }

  /**
   * One check at a time, on the latest claim; a claim not believed costs a few reads with
   * backoff (what the reaper killed may take a moment to be gone), then is dropped; a claim
   * that came while a check ran is checked again once that one gave up.
   */
  async #check(): Promise<void> {
    if (this.#checking || this.#confirmed) return;
    this.#checking = true;
    try {
      while (this.#dirty && !this.#confirmed) {
        this.#dirty = false;
        for (let delay = 1; delay <= 512 && !this.#confirmed; delay *= 2) {
          if (await reaperAlone(this.t.procs, this.t.pid)) {
            const oom = await oomKills(this.t.oomControl);
            if (this.marker) await this.jail.drained(this.marker, 2000);
            this.#confirmed = { exitCode: this.#latest!, oomKilled: oom !== null && this.#oomBefore !== null && oom > this.#oomBefore, by: 'reaper' };
            this.#resolve(this.#confirmed);
            return;
          }
          await new Promise((res) => setTimeout(res, delay));
        }
      }
    } finally {
      this.#checking = false;
    }
  }

  close(): void {
    this.#sock?.destroy();
  }
}

/**
 * A pooled run's jail found again after a restart (pool.ts attach): the engine's jail, whose
 * end its reaper says — read back from PID 1's argv when it reported before the restart (the
 * sleep it exec'd carries the status), else from the FIFO it waits to write (this watch is its
 * reader now). Believed only as reaper.ts believes a report: the jail's pids cgroup holding
 * PID 1 alone. Without a trusted FIFO or cgroup the engine alone says the end, as before.
 */
export class ReattachedPooledJail implements Jail {
  constructor(
    private readonly jail: DockerJail,
    private readonly pid: number,
    private readonly procs: string,
    private readonly watch: ReaperWatch | null,
  ) {}

  get runId(): string {
    return this.jail.runId;
  }
  get id(): string {
    return this.jail.id;
  }
  get key(): string {
    return this.jail.key;
  }
  start(): Promise<void> {
    return this.jail.start();
  }

  /** The end the reaper already carries in its argv, when it is believed. */
  async #already(): Promise<JailExit | undefined> {
    const status = await reportedStatus(this.pid);
    if (status === undefined || !(await reaperAlone(this.procs, this.pid))) return undefined;
    return { exitCode: status, oomKilled: false, by: 'reaper' };
  }

  async wait(): Promise<JailExit> {
    const now = await this.#already();
    if (now) return now;
    // Between its report (read by the dead supervisor) and its exec, the argv is not there yet: asked again shortly.
    const later = new Promise<JailExit>((resolve) => {
      void (async () => {
        for (const ms of [10, 100, 1000]) {
          await new Promise((r) => setTimeout(r, ms));
          const e = await this.#already();
          if (e) return resolve(e);
        }
      })();
    });
    return Promise.race([this.jail.wait(), later, ...(this.watch ? [this.watch.ended] : [])]);
  }
  kill(): Promise<void> {
    return this.jail.kill();
  }
  async stop(graceMs: number): Promise<void> {
    if (this.watch?.confirmed || (await reportedStatus(this.pid)) !== undefined) return;
    await this.jail.stop(graceMs, this.watch?.ended);
  }
  tails(): StreamTails {
    return this.jail.tails();
  }
  collect(destDir: string, caps: CollectCaps, from?: string, opts?: CollectOptions): Promise<CollectReport> {
    return this.jail.collect(destDir, caps, from, opts);
  }
  async destroy(): Promise<void> {
    this.watch?.close();
    await this.jail.destroy();
  }
}

/**
 * A reattached pooled jail's reaper terms — its pid from the engine, its cgroup files, its
 * slot's exit FIFO in the directory the engine binds at /run/brig — or the engine's jail alone
 * without them.
 */
export async function reattachPooled(jail: DockerJail): Promise<Jail> {
  const info = (await jail.inspect().catch(() => null)) as { State?: { Running?: boolean; Pid?: number }; Mounts?: { Destination?: string; Source?: string }[] } | null;
  const pid = info?.State;
  const slotDir = info?.Mounts?.find((m) => m.Destination === BROKER_DIR)?.Source;
  if (!pid?.Running || !pid.Pid || !slotDir) return jail;
  const files = await cgroupFilesOf(pid.Pid);
  if (!files) return jail;
  const fifoPath = path.join(slotDir, EXIT_FIFO);
  const st = await fs.promises.lstat(fifoPath).catch(() => null);
  const watch = st?.isFIFO() ? await ReaperWatch.open(jail, { fifoPath, fifo: { dev: st.dev, ino: st.ino }, pid: pid.Pid, ...files }) : null;
  return new ReattachedPooledJail(jail, pid.Pid, files.procs, watch);
}
