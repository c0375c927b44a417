/**
 * The ledger's anchor: one small file beside the ledger directory (`$BRIG_HOME/ledger.anchor`)
 * that records, for every segment no later segment links yet, how many lines it had, the hash
 * of its last line and whether it was closed — the chain's heads, which the chain itself
 * cannot vouch for (nothing comes after them).
 *
 * Guarantees: verify checks every entry, so deleting segments (all, the newest, an open one)
 * or cutting the newest segment's tail below what the anchor records is caught and named; and
 * every segment with a line in it is accounted for — recorded here, or linked from a segment
 * that is — so a segment added from outside brig is named too. The anchor never runs ahead of
 * the disk: a writer records its segment with 0 lines (the genesis as its hash) before its
 * first line, fsyncs its segment before it records a line count, and the anchor is replaced
 * whole (temp, fsync, rename, fsync of the directory) — inline (recordInAnchor) or on fs's
 * thread pool (recordInAnchorAsync, the writer's batches: file-ledger.ts). A writer records its own segment again
 * after its first line, after `ANCHOR_EVERY` lines or `ANCHOR_MS` after the first line not yet
 * anchored, and when it closes; when its first line links earlier segments it drops their
 * entries (the chain protects them from then on), so the file stays as small as the number
 * of segments being written.
 * The window a crash leaves: an open segment may have up to that many lines (appended in the
 * last ANCHOR_MS) past its entry; verify accepts those — and cannot tell a cut within them.
 * Concurrent writers (a daemon and a CLI) take `ledger.anchor.lock` (created exclusively, held
 * for one read-modify-write) so no update is lost; a lock whose holder died, or older than
 * LOCK_STALE_MS, is broken.
 * Threat: someone with write access to the brig home hiding what happened by deleting or
 * cutting segments, or adding one. Not covered: someone who rewrites the anchor too, or puts
 * back an older copy of it (anchor it off-host).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { writeFileAtomic, writeFileAtomicSync } from '../util/atomic-file.js';

export const ANCHOR_FORMAT = 1;
/** Lines a writer appends at most before it records them in the anchor. */
export const ANCHOR_EVERY = 64;
/** Time after the first unanchored line within which a live writer records it. */
export const ANCHOR_MS = 500;

const EntrySchema = z.strictObject({
  /** 0: the writer has opened the segment and is about to write its first line. */
  lines: z.number().int().nonnegative(),
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  closed: z.boolean(),
});
export type AnchorEntry = z.infer<typeof EntrySchema>;

const AnchorSchema = z.strictObject({
  v: z.literal(ANCHOR_FORMAT),
  segments: z.record(z.string().regex(/^[^/\\]+\.jsonl$/), EntrySchema),
});
export type Anchor = z.infer<typeof AnchorSchema>;

/** The anchor of a ledger directory: `<dir>.anchor` beside it. */
export function anchorPath(dir: string): string {
  return path.join(path.dirname(dir), `${path.basename(dir)}.anchor`);
}

/** The anchor, `undefined` when there is none, or why it cannot be read. */
export function readAnchor(file: string): Anchor | undefined | { unreadable: string } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    return unreadableOr(e);
  }
  return parseAnchor(text);
}

function unreadableOr(e: unknown): undefined | { unreadable: string } {
  if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
  return { unreadable: (e as Error).message };
}

/** An anchor file's text, parsed and checked. */
function parseAnchor(text: string): Anchor | { unreadable: string } {
  try {
    const r = AnchorSchema.safeParse(JSON.parse(text));
    return r.success ? r.data : { unreadable: 'not a ledger anchor' };
  } catch {
    return { unreadable: 'not valid JSON' };
  }
}

/**
 * Records `entry` for segment `name` and forgets `drop` (segments `name`'s first line links).
 * The caller has made the lines it counts durable first.
 */
export function recordInAnchor(dir: string, name: string, entry: AnchorEntry, drop: readonly string[] = []): void {
  const file = anchorPath(dir);
  const release = lockAnchor(file);
  try {
    const cur = readAnchor(file);
    // An unreadable anchor is replaced: verify reports what it found before, the writer goes on.
    const segments = cur && !('unreadable' in cur) ? { ...cur.segments } : {};
    for (const d of drop) delete segments[d];
    segments[name] = entry;
    const anchor: Anchor = { v: ANCHOR_FORMAT, segments };
    writeFileAtomicSync(file, `${JSON.stringify(anchor)}\n`, { mode: 0o600 });
  } finally {
    release();
  }
}

/**
 * recordInAnchor off the event loop: the same lock, read-modify-write and atomic replace, with
 * the reads, writes and fsyncs on fs's thread pool and the lock's waits as timers. A writer
 * never runs this and the synchronous one at once (it would wait on its own lock).
 */
export async function recordInAnchorAsync(dir: string, name: string, entry: AnchorEntry, drop: readonly string[] = []): Promise<void> {
  const file = anchorPath(dir);
  const release = await lockAnchorAsync(file);
  try {
    const cur = await readAnchorAsync(file);
    const segments = cur && !('unreadable' in cur) ? { ...cur.segments } : {};
    for (const d of drop) delete segments[d];
    segments[name] = entry;
    const anchor: Anchor = { v: ANCHOR_FORMAT, segments };
    await writeFileAtomic(file, `${JSON.stringify(anchor)}\n`, { mode: 0o600 });
  } finally {
    await release();
  }
}

async function readAnchorAsync(file: string): Promise<Anchor | undefined | { unreadable: string }> {
  let text: string;
  try {
    text = await fs.promises.readFile(file, 'utf8');
  } catch (e) {
    return unreadableOr(e);
  }
  return parseAnchor(text);
}

/** A lock older than this is broken: a holder keeps it for one anchor write (≈ 1.3 ms here). */
export const LOCK_STALE_MS = 2000;

const pause = new Int32Array(new SharedArrayBuffer(4));

/** The holder's pid is gone (same pid namespace; elsewhere the lock ages out instead). */
function holderGone(owner: string): boolean {
  const pid = Number(owner.split(' ')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Takes `<anchor>.lock` (exclusive create, waiting in 1 ms steps) and returns its release. Without
 * it, two writers' read-modify-writes interleave and one's entry is lost: its segment would then
 * be unaccounted for. Two breakers of one stale lock can both go on: that loses at most the
 * update the lock was for, as before there was a lock.
 */
function lockAnchor(file: string): () => void {
  const lock = `${file}.lock`;
  const me = `${process.pid} ${randomBytes(6).toString('hex')}`;
  for (;;) {
    if (tryLock(lock, me)) break;
    Atomics.wait(pause, 0, 0, 1);
  }
  return () => {
    try {
      if (fs.readFileSync(lock, 'utf8') === me) fs.rmSync(lock, { force: true });
    } catch {
      // broken as stale by another writer: not ours to remove any more
    }
  };
}

/** lockAnchor with its waits as timers (the lock's own files are tiny: no fsync, microseconds). */
async function lockAnchorAsync(file: string): Promise<() => Promise<void>> {
  const lock = `${file}.lock`;
  const me = `${process.pid} ${randomBytes(6).toString('hex')}`;
  while (!tryLock(lock, me)) await new Promise((r) => setTimeout(r, 1));
  return async () => {
    try {
      if ((await fs.promises.readFile(lock, 'utf8')) === me) await fs.promises.rm(lock, { force: true });
    } catch {
      // broken as stale by another writer: not ours to remove any more
    }
  };
}

/** One try at the lock: true when taken; a stale one is broken for the next try. */
function tryLock(lock: string, me: string): boolean {
  let fd: number | undefined;
  try {
    fd = fs.openSync(lock, 'wx', 0o600);
    fs.writeFileSync(fd, me);
    fs.closeSync(fd);
    return true;
  } catch (e) {
    if (fd !== undefined) {
      // Ours, made but not written (a full disk): an empty lock would stall every writer for LOCK_STALE_MS.
      fs.closeSync(fd);
      fs.rmSync(lock, { force: true });
    }
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  try {
    const owner = fs.readFileSync(lock, 'utf8');
    const age = Date.now() - fs.statSync(lock).mtimeMs;
    if (age > LOCK_STALE_MS || (owner !== '' && age > 50 && holderGone(owner))) fs.rmSync(lock, { force: true });
  } catch {
    // released between the tries: take it on the next round
  }
  return false;
}
