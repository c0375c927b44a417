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
