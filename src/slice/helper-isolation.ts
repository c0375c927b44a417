/**
 * Puts the DuckDB helper in its own network-less, read-only world when the host allows it
 * (root + util-linux `unshare`): a private network namespace (only a down loopback) and a
 * private mount namespace where `/` is remounted read-only and a size-capped tmpfs is the
 * only writable place (DuckDB's spill directory).
 * Guarantees, once `enterIsolation` returned: the helper cannot reach any network, and cannot
 * write any file on the root filesystem — not even the ref it reads (DuckDB can write an
 * allowed path with COPY; the guard refuses COPY, this makes it impossible anyway).
 * Verified, not assumed: a write next to the spill directory must fail with EROFS.
 * Fails closed: if a mount fails the helper exits and the pool decides (auto → unisolated
 * helpers, said in SECURITY.md and by `pool.isolated`; require → no helper at all).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const UNSHARE = ['/usr/bin/unshare', '/bin/unshare'].find((p) => fs.existsSync(p));
const MOUNT = ['/usr/bin/mount', '/bin/mount'].find((p) => fs.existsSync(p));

/** Can this process start isolated helpers at all? */
export function isolationAvailable(): boolean {
  return Boolean(UNSHARE && MOUNT && process.getuid?.() === 0);
}

/** argv that starts `node … entry` in fresh network and mount namespaces. */
export function isolatedArgv(nodeArgs: string[], spillDir: string): [string, string[]] {
  if (!UNSHARE) throw new Error('unshare is not available');
  return [
    UNSHARE,
    ['--net', '--mount', '--propagation', 'private', '--fork', '--kill-child', '--', process.execPath, ...nodeArgs, '--isolate', spillDir],
  ];
}

/** Run inside the helper, first thing: read-only `/`, tmpfs for spills, then verify. */
export function enterIsolation(spillDir: string, spillBytes: number): void {
  if (!MOUNT) throw new Error('mount is not available');
  const mount = (args: string[]) => execFileSync(MOUNT, args, { env: {}, stdio: 'ignore' });
  // A new mount namespace holds copies of every mount: flagging our copy of `/` read-only
  // (MS_REMOUNT|MS_BIND|MS_RDONLY) leaves the host's untouched.
  mount(['-o', 'remount,bind,ro', '/']);
  mount(['-t', 'tmpfs', '-o', `size=${spillBytes},mode=0700,nosuid,nodev,noexec`, 'tmpfs', spillDir]);
  let wrote = true;
  try {
    fs.writeFileSync(path.join(path.dirname(spillDir), `.brig-ro-probe-${process.pid}`), 'x');
  } catch (e) {
    wrote = (e as NodeJS.ErrnoException).code !== 'EROFS';
  }
  if (wrote) throw new Error('the root filesystem is still writable after remount');
  fs.writeFileSync(path.join(spillDir, '.probe'), 'x'); // the spill tmpfs must be writable
  fs.rmSync(path.join(spillDir, '.probe'));
}
