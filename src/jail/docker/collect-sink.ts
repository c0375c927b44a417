/**
 * Where collect writes one file, on a file system that may fill up (brig's home).
 *
 * Guarantees: `SpaceBudget.fits` says, before a file's first byte, whether its declared size
 * leaves the reserve free (the free space read again at least every RECHECK_EVERY files and
 * whenever the estimate says no, so space freed meanwhile is seen); `fileSink` writes a file
 * `wx` (never follows or overwrites anything) and, when the file system refuses for want of
 * space (ENOSPC, EDQUOT), removes what it wrote of that file and reads the rest of its bytes
 * into nothing — the archive goes on to the next entry, and the caller skips the file
 * `no_space`. Any other error fails the write as before.
 * Threat: a child's output (or anything else) filling brig's home mid-collection, which lost
 * every file of the run and left the home with no room for the ledger and the records.
 */
import fs from 'node:fs';
import { Writable } from 'node:stream';
import { diskSpaceAsync, isNoSpace } from '../../util/disk-space.js';

/** Files placed at most between two reads of the free space. */
export const RECHECK_EVERY = 64;
const BLOCK = 4096;

/** What a file costs the file system at most: its blocks, and one for its inode and name. */
const cost = (bytes: number) => Math.ceil(bytes / BLOCK) * BLOCK + BLOCK;

export class SpaceBudget {
  #free = 0;
  #since = Infinity;

  constructor(
    private readonly dir: string,
    private readonly reserve: number,
  ) {}

  /** Whether `bytes` more leave the reserve free; if so they are counted as spent. */
  async fits(bytes: number): Promise<boolean> {
    const need = cost(bytes);
    if (this.#since >= RECHECK_EVERY || this.#free - need < this.reserve) {
      // Unknown space (the path vanished): let the write itself tell.
      this.#free = (await diskSpaceAsync(this.dir))?.freeBytes ?? Number.MAX_SAFE_INTEGER;
      this.#since = 0;
    }
    if (this.#free - need < this.reserve) return false;
    this.#free -= need;
    this.#since++;
    return true;
  }
}

async function writeAll(fh: fs.promises.FileHandle, buf: Buffer): Promise<void> {
  for (let off = 0; off < buf.length; ) off += (await fh.write(buf, off, buf.length - off)).bytesWritten;
}

/** A file's sink; `full()` is true when the file system had no room and the file was removed. */
export function fileSink(target: string, mode: number): { sink: Writable; full: () => boolean } {
  let fh: fs.promises.FileHandle | undefined;
  let full = false;
  const giveUp = async (e: unknown): Promise<void> => {
    if (!isNoSpace(e)) throw e;
    full = true;
    await fh?.close().catch(() => {});
    fh = undefined;
    await fs.promises.rm(target, { force: true });
  };
  const sink = new Writable({
    // 1 MiB of buffer: the engine's 30-50 KiB chunks queue and go out batched (collect.ts).
    highWaterMark: 1 << 20,
    construct(cb) {
      fs.promises.open(target, 'wx', mode).then(
        (h) => ((fh = h), cb()),
        (e: unknown) => giveUp(e).then(() => cb(), cb),
      );
    },
    writev(chunks, cb) {
      if (full || !fh) return cb();
      const h = fh;
      (async () => {
        for (const c of chunks) await writeAll(h, c.chunk as Buffer);
      })().then(() => cb(), (e: unknown) => giveUp(e).then(() => cb(), cb));
    },
    final(cb) {
      const h = fh;
      fh = undefined;
      if (!h) return cb();
      h.close().then(() => cb(), cb);
    },
    destroy(err, cb) {
      if (!fh) return cb(err);
      fh.close().then(() => cb(err), () => cb(err));
    },
  });
  return { sink, full: () => full };
}
