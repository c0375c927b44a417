/**
 * Safe copy of a child's output out of its jail.
 *
 * Guarantees: only regular files are written, only under destDir, with fixed modes
 * (0644/0755, no setuid, no owner carried over). Symlinks, hardlinks, devices, fifos,
 * absolute names, any `..` component and names with control characters (newlines, terminal
 * escapes) are skipped and reported, with the reported name escaped. Shapes that are only
 * hostile are skipped and reported the same way, so the legitimate files beside them are
 * kept: an entry deeper than MAX_DEPTH or with a path over MAX_PATH_BYTES (a directory takes
 * its whole subtree with it, reported once), files past the entry cap (`too_many_entries`,
 * in archive order: the engine's walk is depth-first and lexical), and everything past
 * SCAN_SLACK further entries, which is left unread. Byte caps still refuse the whole
 * collection (`ref_too_large`): per-file and per-run, nothing is truncated. An entry's
 * declared size is checked before anything else, so a 100 GB sparse file is refused at its
 * header and never streamed, whatever its type, name or shape. Directories are made only as
 * the parents of collected files. The report lists at most MAX_SKIP_RECORDS skips and
 * counts all of them.
 * The copy lands in a temp sibling and is renamed into place: a crash or a refusal leaves
 * no half directory at destDir. A caller's observer sees each written file's bytes as they
 * stream through (after the caps, before the disk), so nothing has to read them back.
 * Threat: a hostile child crafting its output tree (symlink to /etc/shadow, `../../x`,
 * a 100 GB sparse file, a million empty files, a 10,000-deep nest) to write or read outside
 * its ResultRef, to exhaust the supervisor, or to have its parent lose every output.
 * Trusts: nothing in the archive; the byte counts are counted, not taken from headers.
 * Fails: closed — refuse and remove the temp copy.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import tar from 'tar-stream';
import { BrigError } from '../../util/errors.js';
import type { CollectCaps, CollectOptions, CollectReport, CollectedFile } from '../types.js';

/** Deepest directory level and longest path collected; a deeper or longer entry (and a directory's whole subtree) is skipped. */
export const MAX_DEPTH = 64;
export const MAX_PATH_BYTES = 1024;
/** Skips listed one by one in a report; every one is counted in skippedCount. */
export const MAX_SKIP_RECORDS = 1000;
/** Archive entries read past the file cap before the rest of the archive is left unread. */
export const SCAN_SLACK = 100_000;

// Control characters in a name would reach terminals and logs through every listing.
const CONTROL = /[\x00-\x1f\x7f]/;

/** A name for reports: control characters escaped, length bounded. */
export function printableName(name: string): string {
  return name.slice(0, 256).replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** The name of an archive entry relative to the collected root, or why it is unsafe. */
export function safeRelative(name: string, root: string): { rel: string } | { reason: string } {
  if (CONTROL.test(name) || name.includes('\\')) return { reason: 'unsafe_name' };
  if (name.startsWith('/')) return { reason: 'absolute_path' };
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.some((p) => p === '..')) return { reason: 'dotdot' };
  if (parts[0] !== root) return { reason: 'outside_root' };
  const rel = parts.slice(1).join('/');
  return { rel };
}

function refuse(message: string, data: Record<string, unknown>): BrigError {
  return new BrigError('ref_too_large', message, { data });
}

/** What the walk decided for one entry's shape, before any byte of it is written. */
function shapeReason(name: string): 'too_deep' | 'path_too_long' | undefined {
  if (name.split('/').filter(Boolean).length > MAX_DEPTH + 1) return 'too_deep';
  if (Buffer.byteLength(name) > MAX_PATH_BYTES) return 'path_too_long';
  return undefined;
}

/** The report's skip list: the first MAX_SKIP_RECORDS entries by name, every skip counted. */
class Skips {
  readonly list: { path: string; reason: string }[] = [];
  count = 0;
  /** A skipped directory whose entries follow it in the archive (depth-first) and go with it. */
  private under: string | null = null;

  add(path: string, reason: string): void {
    this.count++;
    if (this.list.length < MAX_SKIP_RECORDS) this.list.push({ path, reason });
  }
  /** True (and counted) when name lies under a subtree already skipped. */
  within(name: string): boolean {
    if (this.under !== null && name.startsWith(this.under)) return (this.count++, true);
    this.under = null;
    return false;
  }
  skipTree(name: string, reason: string): void {
    this.add(printableName(name), reason);
    this.under = name.endsWith('/') ? name : `${name}/`;
  }
}

/** What one directory made for the output costs of the per-run cap (an ext4 directory block). */
export const DIR_BYTES = 4096;

/** Extracts a tar stream (as the engine's archive API gives it) into destDir. */
export async function collectArchive(
  archive: NodeJS.ReadableStream,
  root: string,
  destDir: string,
  caps: CollectCaps,
  opts: CollectOptions = {},
): Promise<CollectReport> {
  if (fs.existsSync(destDir)) throw new BrigError('invalid_input', 'the collect destination already exists', { data: { destDir } });
  const tmp = `${destDir}.tmp-${crypto.randomBytes(6).toString('hex')}`;
  await fs.promises.mkdir(tmp, { recursive: true, mode: 0o755 });
  const files: CollectedFile[] = [];
  const skips = new Skips();
  const scanLimit = caps.maxEntries + SCAN_SLACK;
  let total = 0;
  let scanned = 0;
  // Directories made on the host for collected files: each costs DIR_BYTES of the run's cap.
  const dirs = new Set<string>();
  let read = 0; // declared bytes of every entry, collected or skipped
  const ex = tar.extract();
  try {
    const feeding = pipeline(archive as NodeJS.ReadableStream & AsyncIterable<Buffer>, ex).catch((e: unknown) => {
      ex.destroy(e as Error);
    });
    for await (const entry of ex) {
      const h = entry.header;
      // Sizes first, whatever the entry's shape: a skipped entry is still read through, so it
      // counts against the run cap, and a byte cap refuses the whole collection.
      const size = h.size ?? 0;
      if (size > caps.perFileBytes) throw refuse(`${printableName(h.name)} is over the per-file cap of ${caps.perFileBytes} bytes`, { perFileBytes: caps.perFileBytes });
      read += size;
      if (read > caps.perRunBytes) throw refuse(`the output is over the per-run cap of ${caps.perRunBytes} bytes`, { perRunBytes: caps.perRunBytes });
      if (++scanned > scanLimit) {
        // Not read any further: the engine's archive of a million empty files is time, not data.
        skips.add(printableName(h.name), 'too_many_entries');
        entry.resume();
        break;
      }
      const kept = await placeEntry(entry, h, root, tmp, caps, skips, files.length, total, dirs, opts);
      if (kept) {
        total += kept.bytes;
        files.push(kept);
      }
    }
    await feeding;
    await fs.promises.rename(tmp, destDir);
  } catch (e) {
    ex.destroy();
    await fs.promises.rm(tmp, { recursive: true, force: true });
    throw e;
  }
  return { dir: destDir, files, totalBytes: total, skipped: skips.list, skippedCount: skips.count };
}

type Entry = tar.Extract extends AsyncIterable<infer S> ? S : never;

/** Writes one archive entry if it is a regular file of a safe shape; otherwise reports why not. */
async function placeEntry(
  entry: Entry,
  h: tar.Header,
  root: string,
  tmp: string,
  caps: CollectCaps,
  skips: Skips,
  collected: number,
  total: number,
  dirs: Set<string>,
  opts: CollectOptions,
): Promise<CollectedFile | undefined> {
  const skip = (path: string, reason: string) => {
    skips.add(path, reason);
    entry.resume();
    return undefined;
  };
  if (skips.within(h.name)) return (entry.resume(), undefined);
  const shape = shapeReason(h.name);
  if (shape) {
    if (h.type === 'directory') skips.skipTree(h.name, shape);
    else skips.add(printableName(h.name), shape);
    entry.resume();
    return undefined;
  }
  const where = safeRelative(h.name, root);
  if ('reason' in where) return skip(printableName(h.name), where.reason);
  // Directories are made as the parents of collected files: a skipped subtree leaves no husk.
  if (h.type === 'directory') return (entry.resume(), undefined);
  if (h.type !== 'file' && h.type !== 'contiguous-file') return skip(where.rel, h.type ?? 'unknown');
  if (collected >= caps.maxEntries) return skip(where.rel, 'too_many_entries');
  const target = path.join(tmp, where.rel);
  // The directories this file needs count against the run's cap: 10,000 empty files at the end
  // of 63-deep chains of their own would cost the host a gigabyte of directory blocks.
  for (let d = path.posix.dirname(where.rel); d !== '.' && d !== '/' && !dirs.has(d); d = path.posix.dirname(d)) dirs.add(d);
  const dirBytes = dirs.size * DIR_BYTES;
  if (total + dirBytes > caps.perRunBytes) throw refuse(`the output's directories are over the per-run cap of ${caps.perRunBytes} bytes (${dirs.size} directories, ${DIR_BYTES} bytes each)`, { perRunBytes: caps.perRunBytes });
  // A repeated name, or a file where a directory is needed: skip, never overwrite.
  const placed = await fs.promises.mkdir(path.dirname(target), { recursive: true, mode: 0o755 }).then(
    () => fs.promises.lstat(target).then(() => false, () => true),
    () => false,
  );
  if (!placed || where.rel === '') return skip(where.rel, 'conflict');
  let bytes = 0;
  const observer = opts.observe?.(where.rel);
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      bytes += chunk.length;
      if (bytes > caps.perFileBytes || total + dirBytes + bytes > caps.perRunBytes) return cb(refuse(`${where.rel} went over a byte cap`, {}));
      try {
        observer?.update(chunk);
      } catch (e) {
        return cb(e as Error);
      }
      cb(null, chunk);
    },
  });
  // wx: never follow or overwrite anything already at the target. 1 MiB of buffer: the
  // engine's 30-50 KiB chunks queue and go out batched instead of pausing the archive
  // after each (≈ 10-15 % on 1 GB, more with an observer hashing in the same pass).
  await pipeline(entry, counter, fs.createWriteStream(target, { flags: 'wx', mode: 0o644, highWaterMark: 1 << 20 }));
  return observer ? { path: where.rel, bytes, observed: observer.end() } : { path: where.rel, bytes };
}
