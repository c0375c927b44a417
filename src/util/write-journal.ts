/**
 * The home's write-ahead journal: a durable replacement of a small state file (a run's record,
 * its packet, a result manifest, an envelope) for the price of one appended line, every writer
 * that asks at the same time sharing one fdatasync (group commit).
 *
 * Guarantees: once `write(file, data)` resolves, the line saying so is in the journal and
 * `file` holds `data` (temp + rename, util/atomic-file.ts, not fsynced): a reader finds the
 * old content or the new one whole. A durable write (the default) resolves after the journal's
 * fdatasync; a `durable: false` one after its line reached the file (the page cache), before
 * that fdatasync. After a crash of the process every line written is on disk and so is every
 * file; after a crash of the machine the files may be old, torn or gone and the journal holds
 * every durable line (and perhaps some lazy ones after the last): `WriteJournal.open` replays
 * the lines, in the order they were written, over the files before anything reads them. So a
 * replay never leaves a file older than its last durable write, and never newer than its last
 * line. `remove(target)` removes directly (its parent fsynced) after a durable fence line when
 * a line not yet checkpointed wrote under it: a replay never brings back what was removed. A write of more than BIG bytes goes to disk directly (fsync)
 * and journals a `keep` line instead of its bytes: a replay never puts an older line over it.
 * A segment that passes `maxBytes` is checkpointed off every writer's path: the files and
 * directories it names are fsynced (once the writes it acknowledged are on their files), then
 * the segment is deleted; `close()` checkpoints the last, so a clean home holds no journal.
 *
 * Threat: a machine crash losing a state a caller was told is durable — or putting back an old
 * one. Trusts: fdatasync and rename; one process per home writing these files (the
 * supervisor's lock, daemon/home-lock.ts: only its holder opens the journal, and every write
 * and removal of a journaled file goes through it). Lines carry a checksum; a path that is
 * absolute or leaves the root is refused at write and at replay.
 * Fails: loudly — an append the disk refuses rejects every write of that batch (the segment
 * is cut back to its last whole line, ENOSPC stays ENOSPC for the callers that hold on a full
 * disk); a torn last line (the crash came during an append) is not replayed: its writer was
 * never told it was durable, nor told anything at all. A line that fails its checksum before
 * the tail stops the replay of that segment (said by `replayed`); the later segments still
 * replay, since their lines were written after.
 */
import { createHash } from 'node:crypto';
import fsp, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { writeSync } from 'node:fs';
import { fsyncDir, writeFileAtomic, writeFileAtomicSync } from './atomic-file.js';
import { mkdirAll } from './disk-space.js';

/** What a store writes through: the journal, or the plain durable writes (directWriter). */
export interface DurableWriter {
  /**
   * true: a durable write makes every earlier write durable too (the journal's lines are in
   * order), so a write a later durable one will carry may skip its own sync.
   */
  readonly ordered: boolean;
  /** Replaces `file` with `data`; durable when the promise resolves unless `durable: false`. */
  write(file: string, data: string | Uint8Array, o?: WriteOptions): Promise<void>;
  /** Several files in one commit (in this order on a replay). */
  writeMany(items: readonly { file: string; data: string | Uint8Array; mode?: number }[], o?: { durable?: boolean }): Promise<void>;
  /** Removes a file or a whole tree, durably. */
  remove(target: string): Promise<void>;
}

export interface WriteOptions {
  /** The file's permission bits (default 0o600). */
  mode?: number;
  /** false: resolved before the fdatasync — a machine crash may lose it, a process crash never. Default true. */
  durable?: boolean;
}

/** The plain way: each write its own temp, fsync, rename and directory fsync. */
export const directWriter: DurableWriter = {
  ordered: false,
  write: (file, data, o = {}) => writeFileAtomic(file, data, { mode: o.mode ?? 0o600, sync: o.durable !== false }),
  writeMany: async (items, o = {}) => {
    for (const i of items) await writeFileAtomic(i.file, i.data, { mode: i.mode ?? 0o600, sync: o.durable !== false });
  },
  remove: (target) => removeDurably(target),
};

/** Removes a file or a tree and fsyncs its parent; nothing there is nothing to do. */
async function removeDurably(target: string): Promise<void> {
  if (!(await fsp.lstat(target).catch(() => null))) return;
  await fsp.rm(target, { recursive: true, force: true });
  await fsyncDir(path.dirname(target)).catch(() => undefined);
}

/** Larger writes go to disk directly (a `keep` line in the journal instead of their bytes). */
export const BIG = 256 * 1024;
/** A segment past this is checkpointed and a new one started. */
export const SEGMENT_BYTES = 4 * 1024 * 1024;

const SEGMENT = /^wal-(\d{12})\.log$/;
const segmentName = (seq: number) => `wal-${String(seq).padStart(12, '0')}.log`;

type Line =
  | { o: 'put'; p: string; m: number; t?: string; b?: string }
  | { o: 'rm'; p: string }
  | { o: 'keep'; p: string };

const sum = (json: string) => createHash('sha256').update(json).digest('hex').slice(0, 16);
const encode = (l: Line) => {
  const json = JSON.stringify(l);
  return `${sum(json)} ${json}\n`;
};

function decode(line: string): Line | undefined {
  const sp = line.indexOf(' ');
  if (sp !== 16) return undefined;
  const json = line.slice(17);
  if (sum(json) !== line.slice(0, 16)) return undefined;
  try {
    const l = JSON.parse(json) as Line;
    return l && typeof l.p === 'string' && (l.o === 'put' || l.o === 'rm' || l.o === 'keep') ? l : undefined;
  } catch {
    return undefined;
  }
}

interface Segment {
  seq: number;
  fh: FileHandle;
  size: number;
  /** Files and directories its lines touched: fsynced at its checkpoint. */
  readonly dirty: Set<string>;
  /** File replacements its lines acknowledged and not yet done. */
  readonly pending: Set<Promise<unknown>>;
  /** The root-relative paths its put and keep lines name (a removal under one needs a fence). */
  readonly puts: Set<string>;
}

interface Waiter {
  text: string;
  durable: boolean;
  resolve: (s: Segment) => void;
  reject: (e: unknown) => void;
}

/** What the open found and put back. */
export interface Replayed {
  segments: number;
  lines: number;
  /** Lines not replayed: a torn tail, or a line that failed its checksum (and what came after it in its segment). */
  dropped: number;
}

export class WriteJournal implements DurableWriter {
  readonly ordered = true;
  #seg: Segment;
  #queue: Waiter[] = [];
  #flushing: Promise<void> | undefined;
  readonly #checkpoints = new Set<Promise<void>>();
  /** Segments being checkpointed: their lines still replay after a crash. */
  readonly #old = new Set<Segment>();
  #closed = false;

  private constructor(
    readonly root: string,
    readonly dir: string,
    seg: Segment,
    readonly replayed: Replayed,
    private readonly maxBytes: number,
  ) {
    this.#seg = seg;
  }

  /**
   * Opens the journal of `root` (in `dir`, default `<root>/journal`): replays what a crash left
   * over the files, makes that durable, deletes the old segments and starts a new one.
   */
  static async open(root: string, o: { dir?: string; maxBytes?: number } = {}): Promise<WriteJournal> {
    const dir = o.dir ?? path.join(root, 'journal');
    await mkdirAll(dir, 0o700);
    const names = (await fsp.readdir(dir)).filter((n) => SEGMENT.test(n)).sort();
    const replayed = await replay(root, dir, names);
    const last = names.length > 0 ? Number(SEGMENT.exec(names[names.length - 1]!)![1]) : 0;
    const seg = await openSegment(dir, last + 1);
    return new WriteJournal(root, dir, seg, replayed, o.maxBytes ?? SEGMENT_BYTES);
  }

  /** The journal's path for a file under the root (refused outside it). */
  #rel(file: string): string {
    const rel = path.relative(this.root, path.resolve(file));
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) throw new Error(`write-journal: ${file} is not under ${this.root}`);
    return rel;
  }

  async write(file: string, data: string | Uint8Array, o: WriteOptions = {}): Promise<void> {
    await this.writeMany([{ file, data, ...(o.mode !== undefined ? { mode: o.mode } : {}) }], { ...(o.durable !== undefined ? { durable: o.durable } : {}) });
  }

  async writeMany(items: readonly { file: string; data: string | Uint8Array; mode?: number }[], o: { durable?: boolean } = {}): Promise<void> {
    if (items.length === 0) return;
    const durable = o.durable !== false;
    // Every path checked before anything is written.
    const rels = items.map((i) => this.#rel(i.file));
    const big: typeof items = items.filter((i) => byteLength(i.data) > BIG);
    // A big write is on disk (fsynced) before its keep line: a replay never puts an older line over it.
    for (const i of big) await writeFileAtomic(i.file, i.data, { mode: i.mode ?? 0o600 });
    const lines = items.map((i, n) => {
      const p = rels[n]!;
      if (big.includes(i)) return encode({ o: 'keep', p });
      return encode(typeof i.data === 'string' ? { o: 'put', p, m: i.mode ?? 0o600, t: i.data } : { o: 'put', p, m: i.mode ?? 0o600, b: Buffer.from(i.data).toString('base64') });
    });
    // Live from now (a removal racing this write fences it), and in the segment it lands in.
    for (const p of rels) this.#seg.puts.add(p);
    const seg = await this.#commit(lines.join(''), durable);
    for (const p of rels) seg.puts.add(p);
    const small = items.filter((i) => !big.includes(i));
    // Small files, no fsync: temp, write, rename take microseconds in the page cache — done
    // here rather than as five hops through the thread pool each.
    const done = (async () => {
      for (const i of small) writeFileAtomicSync(i.file, i.data, { mode: i.mode ?? 0o600, sync: false });
    })();
    for (const i of small) seg.dirty.add(i.file).add(path.dirname(i.file));
    seg.pending.add(done);
    try {
      await done;
    } finally {
      seg.pending.delete(done);
    }
  }

  /**
   * Removes `target` (a file or a tree) directly, made durable by its parent's fsync. When a
   * line of a segment not yet checkpointed wrote under it, a fence line goes first (durably):
   * a replay skips every earlier line under it, so it never brings back what was removed.
   * The replay does not remove anything itself — files written directly under the path after
   * the removal (a redo's outputs) are not the journal's to touch.
   */
  async remove(target: string): Promise<void> {
    const rel = this.#rel(target);
    const under = (p: string) => p === rel || p.startsWith(`${rel}/`);
    const live = [this.#seg, ...this.#old].some((seg) => [...seg.puts].some(under));
    if (live) await this.#commit(encode({ o: 'rm', p: rel }), true);
    await removeDurably(target);
  }

  /** Appends `text` with whatever else is waiting: one write, one fdatasync for all. */
  #commit(text: string, durable: boolean): Promise<Segment> {
    if (this.#closed) return Promise.reject(new Error('write-journal: closed'));
    return new Promise<Segment>((resolve, reject) => {
      this.#queue.push({ text, durable, resolve, reject });
      this.#kick();
    });
  }

  #kick(): void {
    if (this.#flushing) return;
    this.#flushing = this.#drain().finally(() => {
      this.#flushing = undefined;
      if (this.#queue.length > 0) this.#kick();
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0);
      const seg = this.#seg;
      const buf = Buffer.from(batch.map((w) => w.text).join(''));
      try {
        // Into the page cache (microseconds); the fdatasync below is what waits for the disk.
        let off = 0;
        while (off < buf.length) off += writeSync(seg.fh.fd, buf, off, buf.length - off, seg.size + off);
      } catch (e) {
        await seg.fh.truncate(seg.size).catch(() => undefined);
        for (const w of batch) w.reject(e);
        continue;
      }
      seg.size += buf.length;
      this.stats.lines += batch.length;
      // The lazy ones have their line in the file (a process crash keeps it); the rest wait for the disk.
      for (const w of batch) if (!w.durable) w.resolve(seg);
      const rest = batch.filter((w) => w.durable);
      if (rest.length > 0) {
        try {
          await seg.fh.datasync();
          this.stats.syncs++;
        } catch (e) {
          for (const w of rest) w.reject(e);
          continue;
        }
        for (const w of rest) w.resolve(seg);
      }
      if (seg.size >= this.maxBytes) await this.#rotate();
    }
  }

  /** A new segment for the lines to come; the full one checkpointed in the background. */
  async #rotate(): Promise<void> {
    const old = this.#seg;
    this.#seg = await openSegment(this.dir, old.seq + 1);
    this.stats.segments++;
    this.#old.add(old);
    const c = this.#checkpoint(old)
      .catch(() => undefined)
      .finally(() => this.#old.delete(old));
    this.#checkpoints.add(c);
    void c.finally(() => this.#checkpoints.delete(c));
  }

  /** Makes what a segment's lines said durable on the files themselves, then deletes it. */
  async #checkpoint(seg: Segment): Promise<void> {
    // Every acknowledged writer first adds its replacement to `pending` (after this turn).
    await new Promise((r) => setImmediate(r));
    while (seg.pending.size > 0) await Promise.allSettled([...seg.pending]);
    await syncAll(seg.dirty);
    await seg.fh.close();
    await fsp.rm(path.join(this.dir, segmentName(seg.seq)), { force: true });
    await fsyncDir(this.dir).catch(() => undefined);
  }

  /** Lines appended and fdatasyncs made since the open (group commit: fewer syncs than lines). */
  readonly stats = { lines: 0, syncs: 0, segments: 1 };

  /** Bytes in the current segment. */
  get size(): number {
    return this.#seg.size;
  }

  /** Closes the segment's file and nothing more, as a killed process leaves the journal (tests). */
  async abandon(): Promise<void> {
    this.#closed = true;
    await this.#seg.fh.close();
  }

  /** Waits for the lines asked for, checkpoints everything and closes: a clean home has no journal left. */
  async close(): Promise<void> {
    if (this.#closed) return;
    while (this.#flushing) await this.#flushing;
    this.#closed = true;
    await Promise.allSettled([...this.#checkpoints]);
    await this.#checkpoint(this.#seg);
  }
}

const byteLength = (d: string | Uint8Array) => (typeof d === 'string' ? Buffer.byteLength(d) : d.byteLength);

async function openSegment(dir: string, seq: number): Promise<Segment> {
  const fh = await fsp.open(path.join(dir, segmentName(seq)), 'wx', 0o600);
  // The segment's name is durable before any line in it is trusted to be.
  await fsyncDir(dir).catch(() => undefined);
  return { seq, fh, size: 0, dirty: new Set(), pending: new Set(), puts: new Set() };
}

/** fsync each path (a file or a directory); one gone since is nothing to keep. */
async function syncAll(paths: Iterable<string>): Promise<void> {
  for (const p of paths) {
    let fh: FileHandle;
    try {
      fh = await fsp.open(p, 'r');
    } catch {
      continue;
    }
    try {
      await fh.sync().catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'EINVAL' && e.code !== 'ENOTSUP' && e.code !== 'EISDIR') throw e;
      });
    } finally {
      await fh.close();
    }
  }
}

/** Puts every whole line of the segments back over the files, in order; then durable; then the segments go. */
async function replay(root: string, dir: string, names: string[]): Promise<Replayed> {
  const out: Replayed = { segments: names.length, lines: 0, dropped: 0 };
  if (names.length === 0) return out;
  const lines: Line[] = [];
  for (const n of names) {
    const text = await fsp.readFile(path.join(dir, n), 'utf8');
    const parts = text.split('\n');
    // The last part is '' after a whole last line, else a torn one.
    const whole = parts.slice(0, -1);
    if (parts[parts.length - 1] !== '') out.dropped++;
    for (let i = 0; i < whole.length; i++) {
      const l = decode(whole[i]!);
      if (!l) {
        out.dropped += whole.length - i;
        break;
      }
      lines.push(l);
    }
  }
  // A later keep (a big write made durable directly) outranks every earlier put of its file; a
  // later fence (a removal) every earlier put under its path.
  const keptAt = new Map<string, number>();
  const fences: { p: string; at: number }[] = [];
  lines.forEach((l, i) => (l.o === 'keep' ? keptAt.set(l.p, i) : l.o === 'rm' ? fences.push({ p: l.p, at: i }) : undefined));
  const fenced = (p: string, i: number) => fences.some((f) => f.at > i && (p === f.p || p.startsWith(`${f.p}/`)));
  const dirty = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    const target = path.resolve(root, l.p);
    const rel = path.relative(root, target);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) {
      out.dropped++;
      continue;
    }
    out.lines++;
    if (l.o !== 'put' || (keptAt.get(l.p) ?? -1) > i || fenced(l.p, i)) continue;
    await mkdirAll(path.dirname(target), 0o700);
    await writeFileAtomic(target, l.b !== undefined ? Buffer.from(l.b, 'base64') : (l.t ?? ''), { mode: l.m, sync: false });
    dirty.add(target).add(path.dirname(target));
  }
  await syncAll(dirty);
  for (const n of names) await fsp.rm(path.join(dir, n), { force: true });
  await fsyncDir(dir).catch(() => undefined);
  return out;
}
