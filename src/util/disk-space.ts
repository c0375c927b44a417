/**
 * Space on the file system of brig's home: what is free, and whether an error is the file
 * system saying it has none left.
 *
 * A full home is not a bug and not a reason to stop: the writers that meet it (the ledger, the
 * run store, a collection, the log) keep what they must in memory and write it when space
 * returns, and the supervisor refuses new runs `storage_full` meanwhile. These helpers are the
 * one test for "no space" (ENOSPC, and EDQUOT: a quota is a full disk for its user) and the one
 * way to read the free space (statfs: the blocks an unprivileged writer may still use).
 */
import fs from 'node:fs';
import path from 'node:path';

export interface DiskSpace {
  /** Bytes a writer without privilege may still use (statfs f_bavail × f_bsize). */
  freeBytes: number;
  /** The file system's size in bytes. */
  totalBytes: number;
}

/** True for the errors a full file system (or a spent quota) gives: ENOSPC, EDQUOT. */
export function isNoSpace(e: unknown): boolean {
  const code = e && typeof e === 'object' ? (e as { code?: unknown }).code : undefined;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/** The space of the file system holding `dir`; undefined when it cannot be read (no such path). */
export function diskSpace(dir: string): DiskSpace | undefined {
  try {
    const s = fs.statfsSync(dir);
    return { freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize };
  } catch {
    return undefined;
  }
}

export async function diskSpaceAsync(dir: string): Promise<DiskSpace | undefined> {
  try {
    const s = await fs.promises.statfs(dir);
    return { freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize };
  } catch {
    return undefined;
  }
}

/** A byte count for a message: `3.2 MiB`. */
export function mib(bytes: number): string {
  return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

/**
 * `mkdir -p` that names a full disk as such: Node's promise `mkdir({recursive: true})` reports
 * ENOSPC on a parent as ENOENT (seen on ext4, Node 20), which read as "taken" or "gone" would
 * hide the full disk. On ENOENT the levels are made one by one, so the real error is thrown.
 */
export async function mkdirAll(dir: string, mode: number): Promise<void> {
  try {
    await fs.promises.mkdir(dir, { recursive: true, mode });
  } catch (e) {
    if ((e as { code?: unknown }).code !== 'ENOENT') throw e;
    const parent = path.dirname(dir);
    if (parent !== dir) await mkdirAll(parent, mode);
    await fs.promises.mkdir(dir, { mode }).catch((e2: unknown) => {
      if ((e2 as { code?: unknown }).code !== 'EEXIST') throw e2;
    });
  }
}
