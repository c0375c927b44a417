/**
 * Where grep and jq run: in the same locked-down world as the DuckDB helper, built from the
 * same pieces (helper-isolation.ts), around bounded-exec's caps.
 *
 * Guarantees, isolated (`isolate` auto or require, on a host that allows it: root + util-linux
 * unshare, setpriv, nsenter, mount): each grep or jq runs as uid/gid 65534 with no
 * supplementary groups, no capability in any set (bounding included) and no_new_privs; in
 * fresh PID and IPC namespaces with a /proc of its own (it is PID 1 and alone), inside a
 * network namespace with only a down loopback and a mount namespace where `/` and /dev/shm are
 * read-only (READ_ONLY_PLAN); with an empty environment, the ref as its stdin (an fd the
 * supervisor opened: no path to it, nothing else of $BRIG_HOME reachable — 0700), and
 * bounded-exec's address-space, time and output caps. The namespaces are held by one small
 * process (`cat`, as nobody, on a pipe of ours: it ends with us), made read-only from outside
 * (`mount -N`), read back from its mountinfo, and proven before the first tool runs by a probe
 * through the very wrapper the tools use (grep reading its own /proc/self: credentials,
 * network devices, mounts).
 * Threat: a child-chosen pattern or filter (Debian jq 1.6 + oniguruma) taking over the tool:
 * it holds no privilege, no network, nothing writable of the host and no file but its ref.
 * Trusts: util-linux, the kernel's namespaces. Fails closed: a holder or probe that is not what
 * it should be is killed; then `require` refuses every call (`internal`) and `auto` runs the
 * tools as before, unisolated (as the supervisor's user, still with an empty environment and
 * the caps) — as the DuckDB helper pool does; `isolated` and `brig doctor` say which. A wrapper
 * that fails to start the tool is an `internal` error, never read as the tool's own exit code.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import { BrigError } from '../util/errors.js';
import { type BoundedExecOptions, type BoundedExecResult, boundedExec } from './bounded-exec.js';
import type { HelperSelf } from './helper-protocol.js';
import { MOUNT, READ_ONLY_PLAN, isolationAvailable, parseStatus, privilegeLeft, toolHolderArgv, writableLeft } from './helper-isolation.js';

export const GREP = ['/usr/bin/grep', '/bin/grep'].find((p) => fs.existsSync(p)) ?? '/usr/bin/grep';
export const JQ = '/usr/bin/jq';

export interface ToolRunnerOptions {
  /** As DuckdbHelperPool's: `auto` (default) isolates when the host allows it; `require` never runs a tool unisolated; `off` never isolates. */
  isolate?: 'auto' | 'require' | 'off';
}

/** What the probe (grep, through the wrapper) read of itself. */
export interface ToolProbe {
  isolated: boolean;
  self: HelperSelf;
  /** Network interfaces it sees. */
  interfaces: string[];
  /** Mount points of READ_ONLY_PLAN it sees writable. */
  writable: string[];
  /** Its RLIMIT_AS (soft), or null when unlimited. */
  addressSpaceBytes: number | null;
}

/** A line a wrapper (not the tool) wrote: the tool never ran. */
const WRAPPER_FAILED = /^(nsenter|unshare|setpriv|prlimit|nice): .*$/m;
const PROBE_MEMORY = 256 * 1024 * 1024;

interface Holder {
  proc: ChildProcess;
  pid: number;
}

export class ToolRunner {
  private readonly mode: 'auto' | 'require' | 'off';
  /** The namespaces' holder once started (undefined: run unisolated); reset when it dies. */
  private holder: Promise<Holder | undefined> | undefined;
  private closed = false;
  /** Why isolating failed last (auto fell back to unisolated tools); for tests and doctor. */
  lastStartError: string | undefined;

  constructor(o: ToolRunnerOptions = {}) {
    this.mode = o.isolate ?? 'auto';
  }

  /** Whether the next tool runs isolated (starts the holder if it is not yet). */
  async isolated(): Promise<boolean> {
    try {
      return (await this.namespaces()) !== undefined;
    } catch {
      return false;
    }
  }

  /** Runs one tool under bounded-exec's caps, isolated when it can be. */
  async run(o: BoundedExecOptions): Promise<BoundedExecResult> {
    const h = await this.namespaces();
    const res = await boundedExec({ ...o, ...(h ? { isolateIn: h.pid } : {}) });
    const failed = !res.timedOut && !res.cut && res.code !== 0 ? WRAPPER_FAILED.exec(res.stderr) : null;
    if (failed) {
      if (h) this.forget(h);
      throw new BrigError('internal', `${o.cmd.split('/').pop()} could not be started: ${failed[0].slice(0, 200)}`);
    }
    return res;
  }

  /** grep, through the wrapper, reading its own /proc/self: what a tool here runs as (under `maxMemoryBytes`). */
  async probe(maxMemoryBytes = PROBE_MEMORY): Promise<ToolProbe> {
    return this.probeWith(await this.namespaces(), maxMemoryBytes);
  }

  async close(): Promise<void> {
    this.closed = true;
    const h = await this.holder?.catch(() => undefined);
    if (h) await stop(h);
  }

  private namespaces(): Promise<Holder | undefined> {
    if (this.closed) return Promise.reject(new BrigError('internal', 'the grep/jq runner is closed'));
    this.holder ??= this.start().catch((e: unknown) => {
      this.lastStartError = e instanceof Error ? e.message : String(e);
      this.holder = undefined;
      if (this.mode === 'require') throw new BrigError('internal', `grep and jq must run isolated and cannot here: ${this.lastStartError}`);
      this.holder = Promise.resolve(undefined);
      return undefined;
    });
    return this.holder;
  }

  private async start(): Promise<Holder | undefined> {
    if (this.mode === 'off') return undefined;
    if (!isolationAvailable(true)) throw new Error('isolating grep and jq needs root and util-linux unshare, setpriv, nsenter and mount');
    const [cmd, args] = toolHolderArgv();
    const proc = spawn(cmd, args, { env: {}, stdio: ['pipe', 'ignore', 'pipe'] });
    proc.stderr!.resume();
    proc.unref();
    (proc.stdin as unknown as { unref?: () => void }).unref?.();
    (proc.stderr as unknown as { unref?: () => void }).unref?.();
    const h: Holder = { proc, pid: proc.pid ?? -1 };
    try {
      if (h.pid < 0) throw new Error('the namespace holder did not start');
      await this.lockDown(h);
      const probe = await this.probeWith(h);
      const why = (probe.self.capBnd.match(/^0+$/) ? privilegeLeft(probe.self) : `CapBnd ${probe.self.capBnd}`) ??
        (probe.interfaces.some((i) => i !== 'lo') ? `network interfaces ${probe.interfaces.join(' ')}` : undefined) ??
        (probe.writable.length > 0 ? `${probe.writable.join(' ')} writable` : undefined);
      if (why) throw new Error(`an isolated tool kept ${why}`);
    } catch (e) {
      await stop(h);
      throw e;
    }
    proc.once('exit', () => this.forget(h));
    return h;
  }

  /** READ_ONLY_PLAN applied into the holder's mount namespace, then read back. */
  private async lockDown(h: Holder): Promise<void> {
    const mount = MOUNT!;
    // The holder is in its namespaces once it is `cat` (unshare and setpriv exec'd it).
    const comm = () => fs.readFileSync(`/proc/${h.pid}/comm`, 'utf8').trim();
    for (let i = 0; i < 1000 && comm() !== 'cat'; i++) await sleep(5);
    if (comm() !== 'cat' || fs.readlinkSync(`/proc/${h.pid}/ns/mnt`) === fs.readlinkSync('/proc/self/ns/mnt')) throw new Error('the namespace holder did not enter its namespaces');
    for (const p of READ_ONLY_PLAN) {
      if (!fs.existsSync(p.target)) continue;
      const r = await runQuiet(mount, ['-N', String(h.pid), ...p.args]);
      if (r.code !== 0) throw new Error(`could not make ${p.target} read-only for grep/jq: ${r.stderr.trim().split('\n')[0] ?? ''}`);
    }
    const left = writableLeft(fs.readFileSync(`/proc/${h.pid}/mountinfo`, 'utf8'));
    if (left.length > 0) throw new Error(`${left.join(' ')} still writable in the tools' namespace`);
  }

  private async probeWith(h: Holder | undefined, maxMemoryBytes = PROBE_MEMORY): Promise<ToolProbe> {
    const files = ['/proc/self/status', '/proc/self/net/dev', '/proc/self/mountinfo', '/proc/self/limits'];
    const res = await boundedExec({ cmd: GREP, args: ['-H', '-e', '', ...files], timeoutMs: 15_000, maxBytes: 256 * 1024, maxMemoryBytes, ...(h ? { isolateIn: h.pid } : {}) });
    if (res.code !== 0) throw new Error(`the grep/jq probe failed: ${res.stderr.trim().split('\n')[0] ?? `exit ${res.code}`}`);
    const lines = res.stdout.toString('utf8').split('\n');
    const of = (f: string) => lines.filter((l) => l.startsWith(`${f}:`)).map((l) => l.slice(f.length + 1));
    const limit = /^Max address space\s+(\S+)/m.exec(of(files[3]!).join('\n'))?.[1];
    return {
      isolated: h !== undefined,
      self: parseStatus(of(files[0]!).join('\n')),
      interfaces: of(files[1]!).slice(2).filter((l) => l.includes(':')).map((l) => l.trim().split(':')[0]!),
      writable: writableLeft(of(files[2]!).join('\n')),
      addressSpaceBytes: limit === undefined || limit === 'unlimited' ? null : Number(limit),
    };
  }

  private forget(h: Holder): void {
    void this.holder?.then((cur) => {
      if (cur === h) this.holder = undefined;
    });
    void stop(h);
  }
}

function stop(h: Holder): Promise<void> {
  if (h.proc.exitCode !== null || h.proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    h.proc.once('exit', () => resolve());
    h.proc.ref(); // unref'd while it holds the namespaces; its exit is awaited now
    h.proc.kill('SIGKILL');
  });
}

function runQuiet(cmd: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env: {}, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr!.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    p.on('error', (e) => resolve({ code: null, stderr: e.message }));
    p.on('close', (code) => resolve({ code, stderr }));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
