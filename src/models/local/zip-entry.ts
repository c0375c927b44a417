/**
 * Takes one file out of a zip (a Python wheel) without anything installed: the central
 * directory names the entry, its data is streamed through inflate into the destination while
 * it is hashed. Stored and deflated entries only; no zip64 (a wheel of this size needs none).
 * Throws an Error saying what was wrong; the caller removes what it wrote.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import zlib from 'node:zlib';

interface CentralEntry {
  method: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
}

function readAt(fd: number, pos: number, len: number): Buffer {
  const b = Buffer.alloc(len);
  const n = fs.readSync(fd, b, 0, len, pos);
  return b.subarray(0, n);
}

/** The central directory's record of `name`, or undefined when the zip has no such entry. */
function findEntry(fd: number, fileSize: number, name: string): CentralEntry | undefined {
  // The end-of-central-directory record: 22 bytes plus a comment of up to 64 KiB, at the end.
  const tailLen = Math.min(fileSize, 22 + 65_535);
  const tail = readAt(fd, fileSize - tailLen, tailLen);
  let eocd = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('not a zip file (no end-of-central-directory record)');
  const entries = tail.readUInt16LE(eocd + 10);
  const cdSize = tail.readUInt32LE(eocd + 12);
  const cdOffset = tail.readUInt32LE(eocd + 16);
  if (cdOffset === 0xffffffff || cdSize === 0xffffffff) throw new Error('a zip64 archive (not supported)');
  const cd = readAt(fd, cdOffset, cdSize);
  let p = 0;
  for (let i = 0; i < entries && p + 46 <= cd.length; i++) {
    if (cd.readUInt32LE(p) !== 0x02014b50) throw new Error('a damaged zip central directory');
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    if (cd.toString('utf8', p + 46, p + 46 + nameLen) === name) {
      return { method: cd.readUInt16LE(p + 10), compressedSize: cd.readUInt32LE(p + 20), size: cd.readUInt32LE(p + 24), localHeaderOffset: cd.readUInt32LE(p + 42) };
    }
    p += 46 + nameLen + extraLen + commentLen;
  }
  return undefined;
}

/** Writes entry `name` of `zipFile` to `dest` (created, never overwritten); returns its size and sha256. */
export async function extractZipEntry(zipFile: string, name: string, dest: string): Promise<{ bytes: number; sha256: string }> {
  const fd = fs.openSync(zipFile, 'r');
  let e: CentralEntry | undefined;
  let dataStart: number;
  try {
    e = findEntry(fd, fs.fstatSync(fd).size, name);
    if (!e) throw new Error(`the archive has no ${name}`);
    const local = readAt(fd, e.localHeaderOffset, 30);
    if (local.length < 30 || local.readUInt32LE(0) !== 0x04034b50) throw new Error('a damaged zip local header');
    dataStart = e.localHeaderOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
  } finally {
    fs.closeSync(fd);
  }
  if (e.method !== 0 && e.method !== 8) throw new Error(`${name} is compressed with method ${e.method} (only stored and deflate are read)`);
  const hash = crypto.createHash('sha256');
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      bytes += chunk.length;
      cb(null, chunk);
    },
  });
  const source = fs.createReadStream(zipFile, { start: dataStart, end: dataStart + e.compressedSize - 1 });
  const out = fs.createWriteStream(dest, { flags: 'wx', mode: 0o644 });
  await (e.method === 8 ? pipeline(source, zlib.createInflateRaw(), tap, out) : pipeline(source, tap, out));
  if (bytes !== e.size) throw new Error(`${name} came out ${bytes} bytes, the archive says ${e.size}`);
  return { bytes, sha256: hash.digest('hex') };
}
