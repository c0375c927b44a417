/**
 * What an artifact may be (mounted read-only at /artifacts/NAME), judged on the object itself.
 *
 * Guarantees: only a regular file, or a directory tree of regular files and directories on
 * one filesystem. Refused: a tree holding a socket, a device or a fifo (the engine's socket
 * inside a jail would be the whole host; a fifo ignores a read-only mount), a tree with
 * another mount under it (Docker 20.10 binds are not recursively read-only), one too big to
 * examine. Threat: an operator (or a coordinator acting for one) handing a path that gives
 * the child a way out. Fails closed: what cannot be examined is refused.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';

/** The most entries an artifact tree may have for it to be examined (and mounted). */
export const MAX_ARTIFACT_ENTRIES = 200_000;

/** What brig checked of an artifact, to bind that very object later: its real path and identity. */
export interface ArtifactIdentity {
  /** The real path (no symlink in it) when it was checked. */
  realPath: string;
  /** Device and inode of that object then (decimal strings: inode numbers pass 2^53). */
  dev: string;
  ino: string;
  kind: 'file' | 'dir';
}

/** The identity of what a path names now, following nothing but what realpath resolved. */
export async function identityOf(realPath: string): Promise<ArtifactIdentity | null> {
  const st = await fs.lstat(realPath, { bigint: true }).catch(() => null);
  if (!st || !(st.isFile() || st.isDirectory())) return null;
  return { realPath, dev: String(st.dev), ino: String(st.ino), kind: st.isFile() ? 'file' : 'dir' };
}

/** Why the tree at `root` may not be an artifact, or null. `root` is read as it is now. */
export async function artifactTreeProblem(root: string): Promise<string | null> {
  const top = await fs.lstat(root).catch(() => null);
  if (!top || !(top.isFile() || top.isDirectory())) return 'it is not a regular file or a directory';
  if (top.isFile()) return null;
  let seen = 0;
  const stack = [root];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => null);
    if (!entries) return `${path.relative(root, dir) || '.'} cannot be read`;
    for (const e of entries) {
      if (++seen > MAX_ARTIFACT_ENTRIES) return `it has more than ${MAX_ARTIFACT_ENTRIES} entries`;
      const p = path.join(dir, e.name);
      if (e.isSocket() || e.isCharacterDevice() || e.isBlockDevice() || e.isFIFO()) return `${path.relative(root, p)} is a ${e.isSocket() ? 'socket' : e.isFIFO() ? 'fifo' : 'device'}`;
      if (e.isDirectory()) {
        const st = await fs.lstat(p).catch(() => null);
        // Another filesystem mounted below: the bind would carry it writable into the jail.
        if (!st || st.dev !== top.dev) return `${path.relative(root, p)} is another mount`;
        stack.push(p);
      }
    }
  }
  return null;
}
