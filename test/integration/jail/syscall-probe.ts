import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestContext } from 'node:test';

const run = promisify(execFile);
const SOURCE = path.join(import.meta.dirname, 'syscall-probe.c');

let built: Promise<Buffer | string> | undefined;

/**
 * The static syscall probe (syscall-probe.c), built on the host once per test process with
 * `gcc -static -O2 -Wall` into a temp file named by the source's hash. Static, because the
 * child image is FROM scratch: it has node's own libraries and nothing else. Node cannot make
 * these calls itself (no io_uring, no raw syscall binding).
 *
 * Never skips silently: without gcc (or glibc's static libc.a, Debian libc6-dev) it skips
 * with the reason outside CI and fails in CI. Returns undefined when skipped.
 */
export async function syscallProbe(t: TestContext): Promise<Buffer | undefined> {
  built ??= (async () => {
    const src = await fs.promises.readFile(SOURCE);
    const out = path.join(os.tmpdir(), `brig-syscall-probe-${crypto.createHash('sha256').update(src).digest('hex').slice(0, 12)}`);
    if (!fs.existsSync(out)) {
      const tmp = `${out}.${process.pid}`;
      try {
        await run('gcc', ['-static', '-O2', '-Wall', '-o', tmp, SOURCE]);
      } catch (e) {
        return `the syscall probe needs gcc with a static libc (apt-get install gcc libc6-dev): ${(e as Error).message.split('\n')[0]}`;
      }
      await fs.promises.rename(tmp, out);
    }
    return fs.promises.readFile(out);
  })();
  const got = await built;
  if (Buffer.isBuffer(got)) return got;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`${got}; CI requires it`);
  t.skip(got);
  return undefined;
}

/** What the host kernel does with the i386 syscall table, and why (for a skip's reason). */
export interface HostI386 {
  /** The probe's answer on the host itself: 'ok' when int 0x80 is served, else the fault. */
  served: boolean;
  answer: string;
  why: string;
}

let hostI386Answer: Promise<HostI386> | undefined;

/**
 * Runs the probe's `i386` mode on the host, outside any jail and any seccomp filter: a kernel
 * built without CONFIG_IA32_EMULATION (or booted with ia32_emulation=0) has no 32-bit table,
 * and int 0x80 faults (SIGSEGV) for every process, so no profile can show that table served.
 * The kernel's config and command line are read only to say why in the reason.
 */
export function hostI386(probe: Buffer): Promise<HostI386> {
  hostI386Answer ??= (async () => {
    const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-i386-'));
    try {
      const bin = path.join(dir, 'probe');
      await fs.promises.writeFile(bin, probe, { mode: 0o755 });
      const { stdout } = await run(bin, ['i386']);
      const answer = (JSON.parse(stdout) as Record<string, string>).i386_getpid ?? 'missing';
      const served = answer === 'ok';
      return { served, answer, why: served ? 'the host serves int 0x80' : `the host kernel does not serve the i386 table (int 0x80 on the host answered ${answer}; ${await kernelSays()})` };
    } finally {
      await fs.promises.rm(dir, { recursive: true, force: true });
    }
  })();
  return hostI386Answer;
}

async function kernelSays(): Promise<string> {
  const cmdline = await fs.promises.readFile('/proc/cmdline', 'utf8').catch(() => '');
  const flag = /\bia32_emulation=(\S+)/.exec(cmdline);
  if (flag) return `booted with ia32_emulation=${flag[1]}`;
  try {
    const { stdout } = await run('sh', ['-c', 'zcat /proc/config.gz | grep -E "^(# )?CONFIG_IA32_EMULATION"']);
    return stdout.trim().split('\n').join(', ') || 'CONFIG_IA32_EMULATION absent from /proc/config.gz';
  } catch {
    return 'the kernel config is not readable (no /proc/config.gz)';
  }
}
