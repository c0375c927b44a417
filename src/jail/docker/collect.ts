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
 * SCAN_SLACK further entries, which is left unread. A file over the per-file cap is skipped
 * too (`too_large`, listed in `tooLarge` for the caller's error), decided at its declared
 * size before any of its bytes is read: an archive cannot skip bytes, so the source replaces
 * it in the stopped jail by a link to PASSED_OVER and the archive is read again from the
 * start, passing over the entries already taken (at most MAX_PASS_OVERS times, re-reading at
 * most the per-run cap in all) — a 100 GB sparse file is never streamed. The per-run cap
 * refuses the whole collection (`ref_too_large`), as does an over-cap file that cannot be
 * passed over (a source without passOver, a hostile name, past those bounds): nothing is
 * truncated. A file the destination's file system has no room for — below the caller's
 * reserve at its declared size, or refused by the disk midway (ENOSPC) — is skipped `no_space`
 * (its partial bytes removed) and counted in `noSpace`, and the collection goes on: what fits
 * is kept (collect-sink.ts); with no room even for the destination's directory every file is
 * skipped `no_space` and destDir is not made. Directories are made only as the parents of collected files. The report lists
 * at most MAX_SKIP_RECORDS skips and counts all of them.
 * The copy lands in a temp sibling and is renamed into place: a crash or a refusal leaves
 * no half directory at destDir. A caller's observer sees each written file's bytes as they
 * stream through (after the caps, before the disk), so nothing has to read them back.
 * Threat: a hostile child crafting its output tree (symlink to /etc/shadow, `../../x`,
 * a 100 GB sparse file, a million empty files, a 10,000-deep nest) to write or read outside
 * its ResultRef, to exhaust the supervisor, or to have its parent lose every output.
 * Trusts: nothing in the archive; the byte counts are counted, not taken from headers; a
 * pass again reads the same entries in the same order (the jail is stopped) — checked at the
 * entry passed over, else refused.
 * Fails: closed — refuse and remove the temp copy.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import tar from 'tar-stream';
import { BrigError } from '../../util/errors.js';
import { isNoSpace, mkdirAll } from '../../util/disk-space.js';
import { MAX_LINK_TARGET, type CollectCaps, type CollectOptions, type CollectReport, type CollectedFile } from '../types.js';
import { SpaceBudget, fileSink } from './collect-sink.js';

/** Deepest directory level and longest path collected; a deeper or longer entry (and a directory's whole subtree) is skipped. */
export const MAX_DEPTH = 64;
export const MAX_PATH_BYTES = 1024;
/** Files over the per-file cap passed over in one collection; one more refuses it whole. */
export const MAX_PASS_OVERS = 16;
/** Where the link that replaces a passed-over file points; such a link is reported `too_large` (a redo after a crash finds it). */
export const PASSED_OVER = '/.brig-too-large';
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

/** Where collect reads an archive from, again from the start after it passed over a file. */
export interface ArchiveSource {
  archive(): Promise<NodeJS.ReadableStream>;
  /**
   * Replaces the entry `name` (as the archive names it; a safe relative name) in the stopped
   * jail by a link to PASSED_OVER, so the next archive carries the link instead of its bytes.
   */
  passOver?(name: string): Promise<void>;
}

/** What one collection has taken so far, across its passes over the archive. */
interface Taken {
  files: CollectedFile[];
  skips: Skips;
  total: number;
  /** Directories made on the host for collected files: each costs DIR_BYTES of the run's cap. */
  dirs: Set<string>;
  /** Declared bytes of every entry read (collected or skipped), each counted once. */
  read: number;
  /** Entries of the archive consumed by earlier passes; the last one is the file passed over. */
  consumed: number;
  passedOver: string | undefined;
  tooLarge: { path: string; bytes?: number }[];
  /** The reserve to keep free on the destination, when the caller named one. */
  space: SpaceBudget | undefined;
  /** The destination could not be made for want of space: every file is skipped no_space. */
  noRoom: boolean;
  noSpace: { files: number; bytes: number };
  links: { path: string; target: string }[];
}

/** Extracts a tar stream (as the engine's archive API gives it), or a source's archive, into destDir. */
export async function collectArchive(
  from: NodeJS.ReadableStream | ArchiveSource,
  root: string,
  destDir: string,
  caps: CollectCaps,
  opts: CollectOptions = {},
): Promise<CollectReport> {
  if (fs.existsSync(destDir)) throw new BrigError('invalid_input', 'the collect destination already exists', { data: { destDir } });
  const source: ArchiveSource = typeof (from as ArchiveSource).archive === 'function' ? (from as ArchiveSource) : { archive: async () => from as NodeJS.ReadableStream };
  const tmp = `${destDir}.tmp-${crypto.randomBytes(6).toString('hex')}`;
  // No room even for the directory: the archive is still read, every file named no_space.
  const noRoom = await mkdirAll(tmp, 0o755).then(
    () => false,
    (e: unknown) => {
      if (isNoSpace(e)) return true;
      throw e;
    },
  );
  const space = opts.minFreeBytes ? new SpaceBudget(path.dirname(tmp), opts.minFreeBytes) : undefined;
  const st: Taken = { files: [], skips: new Skips(), total: 0, dirs: new Set(), read: 0, consumed: 0, passedOver: undefined, tooLarge: [], space, noRoom, noSpace: { files: 0, bytes: 0 }, links: [] };
  let reread = 0;
  try {
    for (;;) {
      const over = await readPass(await source.archive(), root, tmp, caps, st, opts);
      if (!over) break;
      const name = printableName(over.name);
      // Passing over costs a pass that reads again what came before it: bounded, else refused.
      const rel = safeRelative(over.name, root);
      const stuck = !source.passOver || 'reason' in rel || rel.rel === '' ? 'it cannot be passed over'
        : st.tooLarge.length >= MAX_PASS_OVERS ? `more than ${MAX_PASS_OVERS} files are`
        : reread + st.read > caps.perRunBytes ? 'passing over it would read again more than the per-run cap'
        : undefined;
      if (stuck || 'reason' in rel) throw refuse(`${name} is over the per-file cap of ${caps.perFileBytes} bytes (${over.size}), and ${stuck}`, { perFileBytes: caps.perFileBytes, path: name });
      await source.passOver!(over.name);
      reread += st.read;
      st.passedOver = over.name;
      st.skips.add(rel.rel, 'too_large');
      st.tooLarge.push({ path: rel.rel, bytes: over.size });
    }
    if (!noRoom) await fs.promises.rename(tmp, destDir);
  } catch (e) {
    await fs.promises.rm(tmp, { recursive: true, force: true });
    throw e;
  }
  const { files, skips, total, tooLarge, noSpace, links } = st;
  return {
    dir: destDir, files, totalBytes: total, skipped: skips.list, skippedCount: skips.count,
    ...(tooLarge.length > 0 ? { tooLarge } : {}), ...(noSpace.files > 0 ? { noSpace } : {}), ...(opts.links ? { links } : {}),
  };
}

/**
 * One read of the archive: passes over the entries earlier passes consumed, collects the rest;
 * stops at a file over the per-file cap (returned, none of its bytes read), or at the end.
 */
async function readPass(
  archive: NodeJS.ReadableStream,
  root: string,
  tmp: string,
  caps: CollectCaps,
  st: Taken,
  opts: CollectOptions,
): Promise<{ name: string; size: number } | undefined> {
  const scanLimit = caps.maxEntries + SCAN_SLACK;
  const ex = tar.extract();
  const feeding = pipeline(archive as NodeJS.ReadableStream & AsyncIterable<Buffer>, ex).catch((e: unknown) => {
    ex.destroy(e as Error);
  });
  let index = 0;
  try {
    for await (const entry of ex) {
      const h = entry.header;
      if (++index <= st.consumed) {
        // Taken by an earlier pass. The file passed over must now be brig's link, or the jail changed.
        if (index === st.consumed && !(h.name === st.passedOver && h.type === 'symlink' && h.linkname === PASSED_OVER)) {
          throw refuse(`the output changed while it was collected (${printableName(h.name)})`, {});
        }
        entry.resume();
        continue;
      }
      // Sizes first, whatever the entry's shape: over the per-file cap stops the pass before any
      // of its bytes is read; anything else skipped is still read through, so it counts
      // against the run cap.
      const size = h.size ?? 0;
      if (size > caps.perFileBytes) {
        st.consumed = index;
        return { name: h.name, size };
      }
      st.read += size;
      if (st.read > caps.perRunBytes) throw refuse(`the output is over the per-run cap of ${caps.perRunBytes} bytes`, { perRunBytes: caps.perRunBytes });
      if (index > scanLimit) {
        // Not read any further: the engine's archive of a million empty files is time, not data.
        st.skips.add(printableName(h.name), 'too_many_entries');
        entry.resume();
        break;
      }
      const kept = await placeEntry(entry, h, root, tmp, caps, st, opts);
      if (kept) {
        st.total += kept.bytes;
        st.files.push(kept);
      }
    }
    await feeding;
    return undefined;
  } finally {
    // A pass stopped early (a file passed over, a refusal, the scan limit) ends the engine's stream too.
    ex.destroy();
  }
}

type Entry = tar.Extract extends AsyncIterable<infer S> ? S : never;

/** Writes one archive entry if it is a regular file of a safe shape; otherwise reports why not. */
async function placeEntry(entry: Entry, h: tar.Header, root: string, tmp: string, caps: CollectCaps, st: Taken, opts: CollectOptions): Promise<CollectedFile | undefined> {
  const { skips, dirs, total } = st;
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
  // A file an earlier collection of this run passed over (a redo after a crash) is still too large.
  if (h.type === 'symlink' && h.linkname === PASSED_OVER) return (st.tooLarge.push({ path: where.rel }), skip(where.rel, 'too_large'));
  // A link as data (its target text, counted against the run's cap): never made, never followed.
  if (h.type === 'symlink' && opts.links && where.rel !== '' && h.linkname !== undefined && h.linkname !== null && Buffer.byteLength(h.linkname) <= MAX_LINK_TARGET) {
    if (st.files.length + st.links.length >= caps.maxEntries) return skip(where.rel, 'too_many_entries');
    st.total += Buffer.byteLength(h.linkname);
    if (st.total > caps.perRunBytes) throw refuse(`the output is over the per-run cap of ${caps.perRunBytes} bytes`, { perRunBytes: caps.perRunBytes });
    st.links.push({ path: where.rel, target: h.linkname });
    return (entry.resume(), undefined);
  }
  if (h.type !== 'file' && h.type !== 'contiguous-file') return skip(where.rel, h.type ?? 'unknown');
  if (st.files.length >= caps.maxEntries) return skip(where.rel, 'too_many_entries');
  const target = path.join(tmp, where.rel);
  // The directories this file needs count against the run's cap: 10,000 empty files at the end
  // of 63-deep chains of their own would cost the host a gigabyte of directory blocks.
  for (let d = path.posix.dirname(where.rel); d !== '.' && d !== '/' && !dirs.has(d); d = path.posix.dirname(d)) dirs.add(d);
  const dirBytes = dirs.size * DIR_BYTES;
  if (total + dirBytes > caps.perRunBytes) throw refuse(`the output's directories are over the per-run cap of ${caps.perRunBytes} bytes (${dirs.size} directories, ${DIR_BYTES} bytes each)`, { perRunBytes: caps.perRunBytes });
  const noSpace = () => {
    st.noSpace.files++;
    st.noSpace.bytes += h.size ?? 0;
    return skip(where.rel, 'no_space');
  };
  // Decided at its declared size, before any byte: the reserve stays free for the ledger and the records.
  if (st.noRoom || (st.space && !(await st.space.fits(h.size ?? 0)))) return noSpace();
  // A repeated name, or a file where a directory is needed: skip, never overwrite.
  const placed = await mkdirAll(path.dirname(target), 0o755).then(
    () => fs.promises.lstat(target).then(() => 'taken' as const, () => 'ok' as const),
    (e: unknown) => (isNoSpace(e) ? ('full' as const) : ('taken' as const)),
  );
  if (placed === 'full') return noSpace();
  if (placed !== 'ok' || where.rel === '') return skip(where.rel, 'conflict');
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
  const out = fileSink(target, 0o644);
  await pipeline(entry, counter, out.sink);
  // The disk refused midway: the file is gone, the archive read on; the rest of the run is kept.
  if (out.full()) return noSpace();
  const exec = ((h.mode ?? 0) & 0o100) !== 0 ? { executable: true as const } : {};
  return observer ? { path: where.rel, bytes, observed: observer.end(), ...exec } : { path: where.rel, bytes, ...exec };
}
