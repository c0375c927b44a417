/**
 * One DuckDB helper process, as the pool holds it.
 *
 * Guarantees: spawned from nothing — argv only (helper-isolation.ts: prlimit always, setpriv +
 * unshare when isolated), an EMPTY environment, stdio pipes; at most one request in flight; an
 * isolated helper whose first line shows a privilege left (uid, groups, any capability, no
 * no_new_privs) is killed before it serves anything; killing it kills its node process too
 * (the uid drop clears the parent-death signal `unshare --kill-child` set, so the pool kills
 * that process itself). Threat: a hung, bloated or taken-over helper. Trusts: its replies only
 * after schema validation. Fails closed: an unparseable reply kills it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { type HelperReply, type HelperRequest, type HelperSelf, HelperReadySchema, HelperReplySchema } from './helper-protocol.js';
import { type HelperCaps, addressSpace, childOf, helperArgv, isolationLayout, niced, privilegeLeft } from './helper-isolation.js';
import { HelperMounts } from './helper-mounts.js';

/** An error a helper failure maps to, for the reply the pool makes of it. */
export class HelperGone extends Error {
  constructor(
    readonly code: 'timeout' | 'internal',
    message: string,
  ) {
    super(message);
  }
}

type Pending = { resolve: (r: HelperReply) => void; reject: (e: Error) => void; id: number };

/** Clock ticks per second in /proc/<pid>/stat (USER_HZ, 100 on every Linux ABI node runs on). */
const USER_HZ = 100;

export class HelperProcess {
  readonly proc: ChildProcess;
  readonly ready: Promise<void>;
  dead = false;
  isolated = false;
  /** What the helper read from its own /proc/self/status after starting. */
  self: HelperSelf | undefined;
  /** The node process (the child of unshare when isolated), once started. */
  nodePid: number | undefined;
  /** The helper's RLIMIT_AS once started (bytes). */
  memoryLimit: number | undefined;
  /** Bind-mounts each request's files into an isolated helper. */
  mounts: HelperMounts | undefined;
  private pending: Pending | undefined;
  /** The isolated helper's world on the host (helper-isolation.ts layout), removed on exit. */
  private readonly dir: string | undefined;

  constructor(
    entry: string,
    startMs: number,
    isolate: boolean,
    private readonly caps: HelperCaps,
    /** Niceness of the helper and its threads (0: the supervisor's). */
    nice = 0,
  ) {
    const nodeArgs = [...loaderArgs(process.execArgv), entry];
    this.dir = isolate ? makeIsolationDir() : undefined;
    let cmd: string;
    let args: string[];
    try {
      [cmd, args] = niced(helperArgv(nodeArgs, caps, this.dir), nice);
    } catch (e) {
      if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
      throw e;
    }
    this.proc = spawn(cmd, args, { env: {}, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stderr!.resume();
    let readyResolve!: () => void;
    let readyReject!: (e: Error) => void;
    this.ready = new Promise((res, rej) => {
      readyResolve = res;
      readyReject = rej;
    });
    const startTimer = setTimeout(() => {
      readyReject(new Error('the DuckDB helper did not start'));
      this.kill();
    }, startMs);
    const rl = readline.createInterface({ input: this.proc.stdout!, crlfDelay: Infinity });
    rl.on('line', (line) => {
      let reply: HelperReply;
      try {
        const msg: unknown = JSON.parse(line);
        const ready = HelperReadySchema.safeParse(msg);
        if (ready.success) {
          clearTimeout(startTimer);
          const why = this.started(ready.data.isolated, ready.data.self);
          if (why) {
            readyReject(new Error(why));
            this.kill();
          } else readyResolve();
          return;
        }
        reply = HelperReplySchema.parse(msg);
      } catch {
        this.fail(new HelperGone('internal', 'the DuckDB helper sent a malformed reply'));
        return;
      }
      const p = this.pending;
      if (p && p.id === reply.id) {
        this.pending = undefined;
        p.resolve(reply);
      }
    });
    this.proc.on('exit', (_code, signal) => {
      clearTimeout(startTimer);
      // Synchronously: a pool closed just before its process exits leaves nothing behind.
      try {
        if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
      } catch {
        // a leftover empty directory under the temp dir; never worth failing the supervisor
      }
      this.dead = true;
      readyReject(new Error('the DuckDB helper exited while starting'));
      this.fail(new HelperGone('internal', signal ? `the DuckDB helper was killed (${signal})` : 'the DuckDB helper exited'));
    });
    this.proc.on('error', (e) => {
      this.dead = true;
      readyReject(e);
      this.fail(e);
    });
    this.ready.catch(() => undefined);
  }

  /** Started through setpriv + unshare (whether or not it got there). */
  get isolating(): boolean {
    return this.dir !== undefined;
  }

  get busy(): boolean {
    return this.pending !== undefined;
  }

  /** Checks the ready line and the helper's memory cap; a reason to refuse this helper, or undefined. */
  private started(isolated: boolean, self: HelperSelf): string | undefined {
    this.isolated = isolated;
    this.self = self;
    if (this.isolating) {
      if (!isolated) return 'the DuckDB helper did not enter isolation';
      const left = privilegeLeft(self);
      if (left) return `the DuckDB helper kept a privilege: ${left}`;
    }
    const pid = this.isolating ? childOf(this.proc.pid) : this.proc.pid;
    if (pid === undefined) return 'the DuckDB helper process could not be found';
    // Verify what we got: the helper capped itself.
    try {
      const as = addressSpace(pid);
      const wrong = capRefusal(as, this.caps.memoryBytes);
      if (wrong) return wrong;
      this.memoryLimit = as.hard;
    } catch (e) {
      return e instanceof Error ? e.message : String(e);
    }
    this.nodePid = pid;
    if (this.isolating) this.mounts = new HelperMounts(isolationLayout(this.dir!).in, pid, () => this.kill());
    return undefined;
  }

  /** CPU seconds the helper's node process has used so far (0 when unknown). */
  cpuSeconds(): number {
    if (this.nodePid === undefined) return 0;
    try {
      const stat = fs.readFileSync(`/proc/${this.nodePid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(f[11]) + Number(f[12])) / USER_HZ;
    } catch {
      return 0;
    }
  }

  send(req: HelperRequest): Promise<HelperReply> {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject, id: req.id };
      this.proc.stdin!.write(`${JSON.stringify(req)}\n`);
    });
  }

  private fail(e: Error): void {
    const p = this.pending;
    this.pending = undefined;
    p?.reject(e);
    this.kill();
  }

  kill(): void {
    this.dead = true;
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    // While unshare lives its child's pid is still the helper's (not yet reaped, not reused).
    const node = this.isolating ? (this.nodePid ?? childOf(this.proc.pid)) : undefined;
    if (node !== undefined) {
      try {
        process.kill(node, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    this.proc.kill('SIGKILL');
  }
}

/**
 * Why a helper's address-space cap is not the one it should have set (soft = hard, at most the
 * budget over the size it had when it capped itself), or undefined. Checked against its peak
 * size: the size shrinks (a freed mapping, a finished thread's stack) between the helper's cap
 * and this read, and checking against the size then refused sound helpers now and then.
 */
export function capRefusal(as: { peak: number; soft: number; hard: number }, budget: number): string | undefined {
  if (as.soft !== as.hard) return `the DuckDB helper's address-space cap is ${as.soft}:${as.hard}, not one soft = hard limit`;
  if (!Number.isFinite(as.hard) || !(as.hard <= as.peak + budget)) return `the DuckDB helper's address-space cap is ${as.hard}, more than its peak size ${as.peak} + ${budget}`;
  return undefined;
}

function makeIsolationDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-helper-'));
  // The helper (uid 65534) must pass through to its spill tmpfs and its mounts; nobody may list.
  fs.chmodSync(dir, 0o711);
  const { spill, in: inDir } = isolationLayout(dir);
  fs.mkdirSync(spill, { mode: 0o700 });
  fs.mkdirSync(inDir, { mode: 0o711 });
  return dir;
}

/** Node flags a helper needs to load us the same way (e.g. `--import tsx`), nothing else. */
export function loaderArgs(execArgv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const a = execArgv[i]!;
    if (['--import', '--require', '--loader', '--experimental-loader', '-r'].includes(a) && execArgv[i + 1] !== undefined) {
      out.push(a, execArgv[++i]!);
    } else if (/^--(import|require|loader|experimental-loader)=/.test(a)) {
      out.push(a);
    }
  }
  return out;
}
