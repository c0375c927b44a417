/**
 * Safe copy of a child's output out of its jail.
 *
 * Guarantees: only regular files are written, only under destDir, with fixed modes
 * (0644/0755, no setuid, no owner carried over). Symlinks, hardlinks, devices, fifos,
 * absolute names and any name with `..` are skipped and reported. Per-file, per-run and
 * entry-count caps refuse the whole collection (`ref_too_large`); nothing is truncated.
 * The copy lands in a temp sibling and is renamed into place: a crash or a refusal leaves
 * no half directory at destDir.
 * Threat: a hostile child crafting its output tree (symlink to /etc/shadow, `../../x`,
 * a 100 GB sparse file, a million empty files) to write or read outside its ResultRef.
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
import type { CollectCaps, CollectReport, CollectedFile } from '../types.js';

/** The name of an archive entry relative to the collected root, or why it is unsafe. */
export function safeRelative(name: string, root: string): { rel: string } | { reason: string } {
  if (name.includes('\0') || name.includes('\\')) return { reason: 'unsafe_name' };
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

/** Extracts a tar stream (as the engine's archive API gives it) into destDir. */
export async function collectArchive(
  archive: NodeJS.ReadableStream,
  root: string,
  destDir: string,
  caps: CollectCaps,
): Promise<CollectReport> {
  if (fs.existsSync(destDir)) throw new BrigError('invalid_input', 'the collect destination already exists', { data: { destDir } });
  const tmp = `${destDir}.tmp-${crypto.randomBytes(6).toString('hex')}`;
  await fs.promises.mkdir(tmp, { recursive: true, mode: 0o755 });
  const files: CollectedFile[] = [];
  const skipped: { path: string; reason: string }[] = [];
  let total = 0;
  let entries = 0;
  const ex = tar.extract();
  try {
    const feeding = pipeline(archive as NodeJS.ReadableStream & AsyncIterable<Buffer>, ex).catch((e: unknown) => {
      ex.destroy(e as Error);
    });
    for await (const entry of ex) {
      const h = entry.header;
      entries++;
      if (entries > caps.maxEntries) throw refuse(`the output has more than ${caps.maxEntries} entries`, { maxEntries: caps.maxEntries });
      const where = safeRelative(h.name, root);
      if ('reason' in where) {
        skipped.push({ path: h.name.slice(0, 256), reason: where.reason });
        entry.resume();
        continue;
      }
      if (h.type === 'directory') {
        if (where.rel !== '') await fs.promises.mkdir(path.join(tmp, where.rel), { recursive: true, mode: 0o755 });
        entry.resume();
        continue;
      }
      if (h.type !== 'file' && h.type !== 'contiguous-file') {
        skipped.push({ path: where.rel, reason: h.type ?? 'unknown' });
        entry.resume();
        continue;
      }
      if ((h.size ?? 0) > caps.perFileBytes) throw refuse(`${where.rel} is over the per-file cap of ${caps.perFileBytes} bytes`, { perFileBytes: caps.perFileBytes });
      if (total + (h.size ?? 0) > caps.perRunBytes) throw refuse(`the output is over the per-run cap of ${caps.perRunBytes} bytes`, { perRunBytes: caps.perRunBytes });
      const target = path.join(tmp, where.rel);
      // A repeated name, or a file where a directory is needed: skip, never overwrite.
      const placed = await fs.promises.mkdir(path.dirname(target), { recursive: true, mode: 0o755 }).then(
        () => fs.promises.lstat(target).then(() => false, () => true),
        () => false,
      );
      if (!placed || where.rel === '') {
        skipped.push({ path: where.rel, reason: 'conflict' });
        entry.resume();
        continue;
      }
      let bytes = 0;
      const counter = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          bytes += chunk.length;
          if (bytes > caps.perFileBytes || total + bytes > caps.perRunBytes) cb(refuse(`${where.rel} went over a byte cap`, {}));
          else cb(null, chunk);
        },
      });
      // wx: never follow or overwrite anything already at the target.
      await pipeline(entry, counter, fs.createWriteStream(target, { flags: 'wx', mode: 0o644 }));
      total += bytes;
      files.push({ path: where.rel, bytes });
    }
    await feeding;
    await fs.promises.rename(tmp, destDir);
  } catch (e) {
    ex.destroy();
    await fs.promises.rm(tmp, { recursive: true, force: true });
    throw e;
  }
  return { dir: destDir, files, totalBytes: total, skipped };
}
