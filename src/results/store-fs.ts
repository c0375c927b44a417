/**
 * File-system helpers of the ResultRef store: ids, safe names, the regular-file walk, temp
 * sweeps, bounded parallel file work. Pure or small effects; the policy lives in
 * fs-result-store.ts and result-retention.ts, atomic writes in util/atomic-file.ts.
 */
import { randomBytes } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { BrigError } from '../util/errors.js';
import { RUN_ID_RE } from './types.js';

export function newRefId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  const bytes = randomBytes(26);
  let id = 'ref_';
  for (const b of bytes) id += alphabet[b & 31];
  return id;
}

export function checkRunId(id: string): void {
  if (!RUN_ID_RE.test(id)) throw new BrigError('invalid_input', `not a run id: ${JSON.stringify(id.slice(0, 40))}`);
}

/**
 * A relative POSIX path with no empty, `.` or `..` segment and no NUL. A hidden first segment
 * is the store's own (`.index/`, `.tmp-…`) and refused; below it a hidden name is a child's
 * file like any other (`out/.env`), except a temporary name.
 */
export function safeRelPath(name: string): string {
  const segs = name.split('/');
  const bad =
    name.length === 0 ||
    name.length > 1024 ||
    name.includes('\0') ||
    name.includes('\\') ||
    segs.some((s, i) => s === '' || s === '.' || s === '..' || (s.startsWith('.') && (i === 0 || s.startsWith('.tmp-'))) || Buffer.byteLength(s) > 255);
  if (bad) throw new BrigError('invalid_input', `unsafe result path ${JSON.stringify(name.slice(0, 80))}`);
  return name;
}

export async function listRegularFiles(root: string, base: string) {
  const files: { abs: string; rel: string; size: number }[] = [];
  const skipped: { path: string; reason: string }[] = [];
  const walk = async (d: string): Promise<void> => {
    const entries = await fsp.readdir(d, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const abs = path.join(d, e.name);
      const rel = path.relative(base, abs).split(path.sep).join('/');
      const st = await fsp.lstat(abs);
      if (st.isDirectory()) await walk(abs);
      else if (!st.isFile()) skipped.push({ path: rel, reason: st.isSymbolicLink() ? 'symlink' : 'not a regular file' });
      else if (st.nlink > 1) skipped.push({ path: rel, reason: 'hardlink' });
      else if (e.name.startsWith('.tmp-')) skipped.push({ path: rel, reason: 'temporary file' });
      else files.push({ abs, rel, size: st.size });
    }
  };
  await walk(root);
  return { files, skipped };
}

export async function removeStaleTemps(dir: string, olderThanMs: number): Promise<void> {
  for (const name of await readdirSafe(dir)) {
    if (!name.startsWith('.tmp-')) continue;
    const p = path.join(dir, name);
    const st = await fsp.lstat(p).catch(() => undefined);
    if (st?.isFile() && st.mtimeMs < olderThanMs) await fsp.rm(p, { force: true });
  }
}

export async function readPointer(file: string): Promise<string | undefined> {
  return fsp.readFile(file, 'utf8').catch(() => undefined);
}

export async function readdirSafe(d: string): Promise<string[]> {
  return fsp.readdir(d).catch(() => []);
}

export async function exists(p: string): Promise<boolean> {
  return fsp.lstat(p).then(
    () => true,
    () => false,
  );
}

export function tooLarge(rel: string, which: 'file' | 'run', cap: number): BrigError {
  return new BrigError('ref_too_large', `${rel}: the ${which} is over its cap of ${cap} bytes`, { data: { path: rel, cap, which } });
}

export function notFound(ref: string, why = 'no such ref'): BrigError {
  return new BrigError('ref_not_found', `${ref.slice(0, 40)}: ${why}`);
}

/** Files of one directory described at once: their fs work overlaps, their refs keep the walk's order. */
const INDEX_CONCURRENCY = 8;

/**
 * fn over items, at most INDEX_CONCURRENCY at a time. After a failure no new item starts, and
 * the failure is thrown only once every started one has settled: nothing is still writing
 * when the caller cleans up.
 */
export async function inParallel<T>(items: readonly T[], fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        await fn(items[i]!, i);
      } catch (e) {
        failed = true;
        throw e;
      }
    }
  };
  const settled = await Promise.allSettled(Array.from({ length: Math.min(INDEX_CONCURRENCY, items.length) }, worker));
  const bad = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (bad) throw bad.reason;
}

