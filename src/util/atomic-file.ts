/**
 * The one way brig replaces a file on disk: write a temp sibling, fsync it, rename it over
 * the target, fsync the directory.
 *
 * Guarantees: whoever reads the target — now, or a supervisor restarted after a crash of the
 * process or of the machine — finds the old content or the new one whole, never a mix or a
 * truncation; once a call returns, the new content and its name are on disk. The temp lives
 * in the target's directory (a rename never crosses a file system), is named
 * `.tmp-<name>-<random>` (hidden; the stores' sweeps and walks know the prefix), is opened
 * `wx` (never follows or reuses anything already there) and is removed on every error path.
 * The target gets exactly `mode` (default 0600), whatever the umask or the old file's mode.
 * Threat: a torn record (half a lease, a manifest pointing at nothing) after a crash.
 * Fails: loudly — every error is thrown, after the temp is gone; a directory fsync the file
 * system does not support (EINVAL, ENOTSUP) is the one thing let pass.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

export interface AtomicWriteOptions {
  /** The target's permission bits (default 0o600). */
  mode?: number;
  /**
   * fsync the directory after the rename (default true). A caller replacing many files in one
   * directory passes false and calls fsyncDir once after the last, before it relies on them.
   */
  syncDir?: boolean;
  /**
   * fsync the file and the directory (default true). false: temp + rename only — a reader or a
   * restart after a process crash still finds the old or the new content whole, but a machine
   * crash may lose the change. For state a crash may lose (the caller says why it may).
   */
  sync?: boolean;
}

/** The prefix of every temp this module makes. */
export const TEMP_PREFIX = '.tmp-';

/** A fresh temp path beside `file`: same directory, hidden, random. */
export function tempPathFor(file: string): string {
  const base = path.basename(file).slice(0, 64);
  return path.join(path.dirname(file), `${TEMP_PREFIX}${base}-${randomBytes(6).toString('hex')}`);
}

function unsupported(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'EINVAL' || code === 'ENOTSUP';
}

/** Makes a directory's entries (a rename, a new name) durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r');
  try {
    await fh.sync().catch((e: unknown) => {
      if (!unsupported(e)) throw e;
    });
  } finally {
    await fh.close();
  }
}

export function fsyncDirSync(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } catch (e) {
    if (!unsupported(e)) throw e;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Renames a temp the caller wrote and fsynced itself (a stream, say) over `file` and makes the
 * rename durable. The temp is removed if the rename fails.
 */
export async function commitTemp(tmp: string, file: string, syncDir = true): Promise<void> {
  try {
    await fsp.rename(tmp, file);
  } catch (e) {
    await fsp.rm(tmp, { force: true });
    throw e;
  }
  if (syncDir) await fsyncDir(path.dirname(file));
}

/** Replaces `file` with `data`: temp, fsync, rename, fsync of the directory. */
export async function writeFileAtomic(file: string, data: string | Uint8Array, opts: AtomicWriteOptions = {}): Promise<void> {
  const mode = opts.mode ?? 0o600;
  const tmp = tempPathFor(file);
  const fh = await fsp.open(tmp, 'wx', mode);
  try {
    try {
      await fh.chmod(mode);
      await fh.writeFile(data);
      if (opts.sync !== false) await fh.sync();
    } finally {
      await fh.close();
    }
  } catch (e) {
    await fsp.rm(tmp, { force: true });
    throw e;
  }
  await commitTemp(tmp, file, opts.sync !== false && opts.syncDir !== false);
}

/** writeFileAtomic for synchronous callers. */
export function writeFileAtomicSync(file: string, data: string | Uint8Array, opts: AtomicWriteOptions = {}): void {
  const mode = opts.mode ?? 0o600;
  const tmp = tempPathFor(file);
  const fd = fs.openSync(tmp, 'wx', mode);
  try {
    try {
      fs.fchmodSync(fd, mode);
      fs.writeFileSync(fd, data);
      if (opts.sync !== false) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  if (opts.sync !== false && opts.syncDir !== false) fsyncDirSync(path.dirname(file));
}
