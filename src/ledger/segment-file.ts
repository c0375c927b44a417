/**
 * One ledger segment's file and the lines it holds that the disk has not taken yet.
 *
 * Guarantees: lines reach the file whole and in the order they were chained, each exactly
 * once: a write the disk cuts short (ENOSPC midway through a line) is resumed at the byte it
 * stopped at, so the file only ever holds a prefix of the chain — possibly ending in part of a
 * line, which verify calls `torn` and which the next write completes. `written`/`writtenHash`
 * count only whole lines on disk: the anchor is told no more than those (after an fsync).
 * Fails: `drain` returns false when the file system has no space (ENOSPC, EDQUOT) and keeps
 * every unwritten byte; any other error is thrown, the bytes kept all the same.
 */
import fs from 'node:fs';
import { isNoSpace } from '../util/disk-space.js';

/** The two calls a segment makes on its descriptor (a test puts a full disk in between). */
export interface SegmentIo {
  write(fd: number, buf: Buffer, offset: number, length: number): number;
  fsync(fd: number): void;
}

export const realIo: SegmentIo = {
  write: (fd, buf, offset, length) => fs.writeSync(fd, buf, offset, length),
  fsync: (fd) => fs.fsyncSync(fd),
};

interface Held {
  bytes: Buffer;
  hash: string;
}

export class SegmentFile {
  #fd: number | undefined;
  readonly #held: Held[] = [];
  #heldBytes = 0;
  /** Bytes of the first held line already on disk (a write the disk cut short). */
  #partial = 0;
  /** Whole lines on disk, and the hash of the last of them (the genesis for none). */
  written = 0;
  writtenHash: string;

  constructor(
    readonly file: string,
    genesis: string,
    private readonly mode: number,
    private readonly io: SegmentIo,
  ) {
    this.writtenHash = genesis;
  }

  /** Takes a chained line; it reaches the disk with the next drain that can write it. */
  push(line: string, hash: string): void {
    const bytes = Buffer.from(`${line}\n`, 'utf8');
    this.#held.push({ bytes, hash });
    this.#heldBytes += bytes.length;
  }

  get heldLines(): number {
    return this.#held.length;
  }

  get heldBytes(): number {
    return this.#heldBytes - this.#partial;
  }

  /** The held lines' text, oldest first. */
  *heldText(): Generator<string> {
    for (const h of this.#held) yield h.bytes.toString('utf8');
  }

  /** Opens the file (made if need be); false when the disk has no room for it. */
  open(): boolean {
    if (this.#fd !== undefined) return true;
    try {
      this.#fd = fs.openSync(this.file, 'a', this.mode);
      return true;
    } catch (e) {
      if (isNoSpace(e)) return false;
      throw e;
    }
  }

  /** Writes every held line; false when the disk took only part of them (the rest stays held). */
  drain(): boolean {
    if (!this.open()) return false;
    const fd = this.#fd!;
    try {
      while (this.#held.length > 0) {
        const h = this.#held[0]!;
        while (this.#partial < h.bytes.length) this.#partial += this.io.write(fd, h.bytes, this.#partial, h.bytes.length - this.#partial);
        this.#held.shift();
        this.#heldBytes -= h.bytes.length;
        this.#partial = 0;
        this.written++;
        this.writtenHash = h.hash;
      }
      return true;
    } catch (e) {
      if (isNoSpace(e)) return false;
      throw e;
    }
  }

  /** Makes the written lines durable; false when the file system refuses for want of space. */
  fsync(): boolean {
    if (this.#fd === undefined) return this.written === 0;
    try {
      this.io.fsync(this.#fd);
      return true;
    } catch (e) {
      if (isNoSpace(e)) return false;
      throw e;
    }
  }

  close(): void {
    if (this.#fd !== undefined) fs.closeSync(this.#fd);
    this.#fd = undefined;
  }
}
