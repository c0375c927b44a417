/**
 * `shell`: one command through `/bin/sh -c` inside the jail, cwd /workspace. The jail is what
 * bounds it (no network, read-only root, its limits); this tool bounds time (the whole
 * process group is killed at the timeout or on SIGTERM) and memory (the first and the last
 * MiB of output are kept; the loop spills what is over the result limit).
 */
import { spawn } from 'node:child_process';
import { obj, S, type ToolDef } from './tool.js';

const DEFAULT_TIMEOUT_MS = 60_000;
const MAX_TIMEOUT_MS = 600_000;
const KEEP_BYTES = 1024 * 1024;

/** Keeps the first and the last KEEP_BYTES of a stream, counting what fell between. */
class HeadTail {
  head: Buffer[] = [];
  headBytes = 0;
  tail: Buffer[] = [];
  tailBytes = 0;
  dropped = 0;

  push(b: Buffer): void {
    if (this.headBytes < KEEP_BYTES) {
      const take = b.subarray(0, KEEP_BYTES - this.headBytes);
      this.head.push(take);
      this.headBytes += take.length;
      b = b.subarray(take.length);
    }
    if (!b.length) return;
    this.tail.push(b);
    this.tailBytes += b.length;
    while (this.tailBytes - this.tail[0]!.length >= KEEP_BYTES) {
      const gone = this.tail.shift()!;
      this.tailBytes -= gone.length;
      this.dropped += gone.length;
    }
  }

  text(): string {
    const mid = this.dropped ? `\n[… ${this.dropped} bytes of output not kept …]\n` : '';
    return Buffer.concat(this.head).toString('utf8') + mid + Buffer.concat(this.tail).toString('utf8');
  }
}

export function shellTool(shellPath = '/bin/sh', egress = false): ToolDef {
  return {
    name: 'shell',
    description: egress
      ? "Run a command with /bin/sh -c in /workspace (network only through HTTP(S)_PROXY, to the hosts your lease's egress rules name); returns exit code and stdout+stderr."
      : 'Run a command with /bin/sh -c in /workspace (no network); returns exit code and stdout+stderr.',
    parameters: obj({ command: S.str('the shell command', { minLength: 1 }), timeoutMs: S.int(`kill it after this long (default ${DEFAULT_TIMEOUT_MS})`, 1000, MAX_TIMEOUT_MS) }, ['command']),
    // The command's own timeout ends it first; this one is the loop's backstop.
    timeoutMs: (a) => (typeof a.timeoutMs === 'number' ? a.timeoutMs : DEFAULT_TIMEOUT_MS) + 5000,
    run(a, ctx) {
      const timeoutMs = typeof a.timeoutMs === 'number' ? a.timeoutMs : DEFAULT_TIMEOUT_MS;
      return new Promise((resolve) => {
        const out = new HeadTail();
        const child = spawn(shellPath, ['-c', String(a.command)], { cwd: ctx.roots.workspace, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
        let why: string | null = null;
        const killGroup = (reason: string) => {
          why ??= reason;
          try {
            if (child.pid) process.kill(-child.pid, 'SIGKILL');
          } catch {
            // already gone
          }
        };
        const timer = setTimeout(() => killGroup(`timed out after ${timeoutMs} ms`), timeoutMs);
        const onAbort = () => killGroup('stopped: the run is ending');
        ctx.signal.addEventListener('abort', onAbort, { once: true });
        child.stdout.on('data', (b: Buffer) => out.push(b));
        child.stderr.on('data', (b: Buffer) => out.push(b));
        const finish = (status: string, isError: boolean) => {
          clearTimeout(timer);
          ctx.signal.removeEventListener('abort', onAbort);
          const text = out.text();
          resolve({ content: `[${status}]${text ? '\n' + text : ''}`, isError });
        };
        child.once('error', (e) => finish(`could not start ${shellPath}: ${e.message}`, true));
        child.once('close', (code, signal) => {
          if (why) finish(`killed: ${why}`, true);
          else finish(code !== null ? `exit ${code}` : `ended by signal ${signal}`, false);
        });
      });
    },
  };
}
