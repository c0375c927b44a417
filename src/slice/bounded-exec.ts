/**
 * Runs grep/jq for slicing: argv only (never a shell), an EMPTY environment, a fresh empty
 * working directory (isolated: `/`, read-only), an address-space cap and no core dumps
 * (prlimit; asked for a cap without prlimit on the host, it refuses to run rather than run
 * uncapped), a timeout that SIGKILLs, and an output cap that SIGKILLs once reached — the tool
 * itself too when it runs isolated (`isolateIn`: the argv of helper-isolation.ts toolArgv).
 * Threat: a hostile pattern or filter that hangs, bloats, or reads our environment or files
 * next to it. Fails closed: over time → `timedOut`, over size → `cut`; the caller turns both
 * into errors or "N more". Who runs isolated is ToolRunner's to decide, how many run at once
 * the SliceScheduler's.
 */
import { spawn } from 'node:child_process';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BrigError } from '../util/errors.js';
import { PRLIMIT, childOf, niced, toolArgv } from './helper-isolation.js';

export interface BoundedExecOptions {
  cmd: string;
  args: string[];
  /** Streamed to the child's stdin (so the tool never learns the host path). */
  stdinFile?: string;
  timeoutMs: number;
  maxBytes: number;
  /** Address-space cap in bytes (via prlimit). */
  maxMemoryBytes?: number;
  /** Niceness (0: the supervisor's). */
  nice?: number;
  /**
   * Run isolated, in the namespaces this process holds (ToolRunner's holder): the tool is then
   * the child of `unshare`, PID 1 of a namespace of its own, and is killed as such.
   */
  isolateIn?: number;
}

export interface BoundedExecResult {
  stdout: Buffer;
  stderr: string;
  code: number | null;
  timedOut: boolean;
  /** Output reached maxBytes and the process was stopped. */
  cut: boolean;
}


/** Runs one tool; how many run at once is the caller's SliceScheduler's to decide. */
export async function boundedExec(o: BoundedExecOptions): Promise<BoundedExecResult> {
  const cwd = await fsp.mkdtemp(path.join(os.tmpdir(), 'brig-slice-'));
  try {
    return await run(o, cwd);
  } finally {
    await fsp.rm(cwd, { recursive: true, force: true });
  }
}

async function run(o: BoundedExecOptions, cwd: string): Promise<BoundedExecResult> {
  if (o.maxMemoryBytes && !PRLIMIT) {
    throw new BrigError('internal', `${path.basename(o.cmd)} is run under an address-space cap, and prlimit (util-linux) is missing on this host`, { hint: 'Install util-linux (scripts/host-deps.sh does); brig does not run grep or jq uncapped.' });
  }
  const capped: [string, string[]] = PRLIMIT && o.maxMemoryBytes ? [PRLIMIT, [`--as=${o.maxMemoryBytes}`, '--core=0', '--', o.cmd, ...o.args]] : [o.cmd, o.args];
  const [cmd, args] = niced(o.isolateIn !== undefined ? toolArgv(o.isolateIn, capped) : capped, o.nice);
  // The file becomes the tool's stdin directly (no copy through us), read-only.
  const input = o.stdinFile ? await fsp.open(o.stdinFile, 'r') : undefined;
  try {
    return await runWith(cmd, args, o, cwd, input?.fd);
  } finally {
    await input?.close();
  }
}

function runWith(cmd: string, args: string[], o: BoundedExecOptions, cwd: string, stdinFd: number | undefined): Promise<BoundedExecResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env: {}, cwd, stdio: [stdinFd ?? 'ignore', 'pipe', 'pipe'] });
    // Isolated, the tool is unshare's child and keeps no parent-death signal past its uid drop:
    // it goes first (as PID 1 of its namespace, with everything in it), then unshare.
    const kill = () => {
      const tool = o.isolateIn !== undefined ? childOf(child.pid) : undefined;
      if (tool !== undefined) {
        try {
          process.kill(tool, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      child.kill('SIGKILL');
    };
    const out: Buffer[] = [];
    let outLen = 0;
    let err = '';
    let cut = false;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, o.timeoutMs);
    child.stdout!.on('data', (b: Buffer) => {
      if (cut) return;
      const room = o.maxBytes - outLen;
      if (b.length >= room) {
        out.push(b.subarray(0, room));
        outLen += room;
        cut = true;
        kill();
        return;
      }
      out.push(b);
      outLen += b.length;
    });
    child.stderr!.on('data', (b: Buffer) => {
      if (err.length < 4096) err += b.toString('utf8');
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ stdout: Buffer.alloc(0), stderr: e.message, code: null, timedOut, cut });
    });
    // Belt and braces: should anything the tool started outlive it holding our pipes, its
    // end is still the answer (a second after it exited), never a wait without end.
    child.on('exit', () => {
      setTimeout(() => {
        child.stdout!.destroy();
        child.stderr!.destroy();
      }, 1000).unref();
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ stdout: Buffer.concat(out), stderr: err.slice(0, 4096), code, timedOut, cut });
    });
  });
}
