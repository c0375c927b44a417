/**
 * What an operator may hand a child as an artifact (mounted read-only at /artifacts/NAME).
 *
 * Guarantees: only a regular file or a directory tree of regular files and directories that
 * sits on one filesystem. Refused: a system path (/, /proc, /sys, /dev, /run, /var/run, /etc,
 * /boot, the engine's state), a path whose real location is one of those, a tree holding a
 * socket, a device or a fifo (the engine's socket inside a jail would be the whole host), and
 * a tree with another mount under it — Docker 20.10 binds are not recursively read-only, so a
 * submount would be writable from the jail. Threat: an operator (or a coordinator acting for
 * one) handing a path that gives the child a way out. Fails closed: anything it cannot
 * examine (unreadable, too big to walk) is refused.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { BrigError, err, ok, type Result } from '../util/errors.js';

const SYSTEM = ['/proc', '/sys', '/dev', '/run', '/var/run', '/etc', '/boot', '/var/lib/docker', '/var/lib/containerd'];
/** The most entries an artifact tree may have for it to be examined (and mounted). */
export const MAX_ARTIFACT_ENTRIES = 200_000;

function refuse(a: string, why: string, hint = 'Hand a plain directory or file of regular files (copy it first if needed).'): Result<never, BrigError> {
  return err(new BrigError('artifact_missing', `artifact ${path.basename(a)} is refused: ${why}`, { data: { artifact: a, why }, hint }));
}

const under = (p: string, root: string) => p === root || p.startsWith(root.endsWith('/') ? root : `${root}/`);

export async function checkArtifact(a: string): Promise<Result<true, BrigError>> {
  const abs = path.resolve(a);
  const real = await fs.realpath(abs).catch(() => null);
  if (!real) return refuse(a, 'it does not exist or cannot be resolved');
  if (real === '/' || SYSTEM.some((s) => under(real, s))) return refuse(a, `${real === abs ? 'it' : `its real path ${real}`} is a system path`);
  const top = await fs.lstat(real).catch(() => null);
  if (!top || !(top.isFile() || top.isDirectory())) return refuse(a, 'it is not a regular file or a directory');
  if (top.isFile()) return ok(true);
  let seen = 0;
  const stack = [real];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => null);
    if (!entries) return refuse(a, `${path.relative(real, dir) || '.'} cannot be read`);
    for (const e of entries) {
      if (++seen > MAX_ARTIFACT_ENTRIES) return refuse(a, `it has more than ${MAX_ARTIFACT_ENTRIES} entries`);
      const p = path.join(dir, e.name);
      if (e.isSocket() || e.isCharacterDevice() || e.isBlockDevice() || e.isFIFO()) return refuse(a, `${path.relative(real, p)} is a ${e.isSocket() ? 'socket' : e.isFIFO() ? 'fifo' : 'device'}`);
      if (e.isDirectory()) {
        const st = await fs.lstat(p).catch(() => null);
        // Another filesystem mounted below: the bind would carry it writable into the jail.
        if (!st || st.dev !== top.dev) return refuse(a, `${path.relative(real, p)} is another mount`);
        stack.push(p);
      }
    }
  }
  return ok(true);
}
