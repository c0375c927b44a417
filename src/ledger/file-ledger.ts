/**
 * The audit ledger: append-only, hash-chained JSONL under $BRIG_HOME/ledger.
 *
 * Guarantees: every appended event is written to its segment before append() returns
 * (a synchronous write), unless the file system has no space (below); content-free (only ids,
 * counts, enums, durations: INV-7), and chained — each line carries seq, the previous line's
 * hash and its own hash over its canonical form, so an edited, deleted or reordered line is
 * detected by verifyLedger. Threat: someone with write access to the brig home hiding what a
 * child did; a crash losing the tail. Trusts: the local file system for durability (not for
 * integrity — a writer who can rewrite the whole chain is out of scope; anchor the last hash
 * elsewhere for that). Fails loudly: a write failing for any reason but a full disk throws
 * rather than letting an action go unrecorded.
 *
 * A full disk (ENOSPC, EDQUOT) never throws: it stops the supervisor from admitting new work
 * (runs/ asks `backlog()`), not from recording what its live runs do. The lines are chained
 * as they come and held in memory, in order, up to `maxHeldBytes` (8 MiB, ~25,000 lines); the
 * file keeps a prefix of the chain (its last line possibly cut where the disk stopped: verify
 * calls it `torn`), the anchor records only whole lines after an fsync, and a retry every
 * RETRY_MS (and the first append after space returned) writes the rest from the byte it
 * stopped at — so the chain on disk stays valid at every moment and, once written, is the
 * chain as if the disk had never been full. Then a `ledger.resumed {heldMs, heldLines,
 * unrecorded}` line says how long lines were held. Past the bound, events are not chained but
 * counted by type and written as `ledger.unrecorded {of, count}` lines when space returns: the
 * memory stays bounded and the gap is stated, never silent. What a process that dies while
 * holding lines loses is those lines; verify then sees what a crash leaves (an open segment,
 * a torn last line, lines past its anchor entry) and passes. `close()` with lines it could not
 * write throws `storage_full` after saving what it could.
 *
 * Two processes (a daemon and a CLI) never share a file: each FileLedger writes its own
 * segment `<utc-stamp>-<pid>-<random>.jsonl`, chained from a genesis bound to its name and
 * ended by a `ledger.closed` line; a segment's first line links to every segment the anchor
 * records as closed (name + last hash, the newest in `link`, the others in `links`), so
 * deleting or cutting an earlier closed segment is detected too, and a segment brig did not
 * write is never linked. The heads no later segment vouches for — this writer's own segment,
 * closed or not — are recorded in the anchor beside the directory (anchor.ts): with 0 lines
 * before its first line, after that line, every ANCHOR_EVERY lines or ANCHOR_MS after the
 * first unanchored one, and when it closes, each time after an fsync of the segment; so
 * deleting segments or cutting the newest one is detected too, except within the lines a
 * crash leaves unanchored, and every segment with a line is accounted for. Segments are 0644
 * inside the 0700 directory: nobody but the owner can reach them, and the DuckDB helper (uid
 * 65534) reads one only through the bind mount the pool makes for `brig audit query`.
 * verifyLedger checks every segment and the anchor.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { BrigError } from '../util/errors.js';
import { isNoSpace } from '../util/disk-space.js';
import type { Ledger, LedgerBacklog, LedgerEvent, LedgerValue } from './types.js';
import { ANCHOR_EVERY, ANCHOR_MS, anchorPath, readAnchor, recordInAnchor } from './anchor.js';
import { scanLedger } from './verify.js';
import { LEDGER_FORMAT, genesisHash, lineHash, linkableSegments } from './chain.js';
import { SegmentFile, realIo, type SegmentIo } from './segment-file.js';

/** How often a ledger holding lines tries the disk again. */
export const RETRY_MS = 1000;
/** Lines held in memory at most while the disk is full (bytes); past it, events are counted. */
export const MAX_HELD_BYTES = 8 * 1024 * 1024;

/** Fields the ledger owns; an event cannot set them. */
const RESERVED = new Set(['v', 'seq', 'ts', 'prev', 'hash', 'link', 'links']);
/** Ledger strings are ids and enums: a long string is a bug or a leak, so it is cut. */
const MAX_STRING = 200;
const MAX_ARRAY = 64;

function clean(v: LedgerValue | undefined): LedgerValue | undefined {
  if (typeof v === 'string') return v.length > MAX_STRING ? `${v.slice(0, MAX_STRING)}…` : v;
  if (Array.isArray(v)) return v.slice(0, MAX_ARRAY).map((s) => String(s).slice(0, MAX_STRING));
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (v === null || typeof v === 'boolean') return v;
  return undefined;
}

export interface FileLedgerOptions {
  /** The ledger directory ($BRIG_HOME/ledger). */
  dir: string;
  now?: () => Date;
  /** Lines appended at most before they are recorded in the anchor (default ANCHOR_EVERY). */
  anchorEvery?: number;
  /** Time after the first unanchored line within which it is recorded (default ANCHOR_MS). */
  anchorMs?: number;
  /** Bytes of lines held while the disk is full (default MAX_HELD_BYTES). */
  maxHeldBytes?: number;
  /** How often held lines are tried again (default RETRY_MS). */
  retryMs?: number;
  /** The segment's write and fsync (a unit test's full disk). */
  io?: SegmentIo;
}

interface Segment {
  file: SegmentFile;
  /** The chain in memory: lines appended (written or held), and the last one's hash. */
  seq: number;
  prev: string;
  /** The anchor has this segment's 0-line entry (made before its first line reaches the disk). */
  registered: boolean;
  /** Lines the anchor records for this segment. */
  anchored: number;
  /** Segments this one's first line links: their anchor entries go when ours arrives. */
  linked: string[];
}

/** Segments written before they were made 0644 are made readable the same way. */
function migrateModes(dir: string): void {
  for (const f of fs.readdirSync(dir)) {
    if (!f.endsWith('.jsonl')) continue;
    const file = path.join(dir, f);
    if ((fs.statSync(file).mode & 0o777) === 0o600) fs.chmodSync(file, SEGMENT_MODE);
  }
}

const SEGMENT_MODE = 0o644;

export class FileLedger implements Ledger {
  private readonly dir: string;
  private readonly now: () => Date;
  private readonly anchorEvery: number;
  private readonly anchorMs: number;
  private readonly maxHeldBytes: number;
  private readonly retryMs: number;
  private readonly io: SegmentIo;
  private current: Segment | undefined;
  private last: string;
  private anchorTimer: NodeJS.Timeout | undefined;
  /** Since when the disk refuses (ms), while it does. */
  private blockedSince: number | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Lines chained while the disk refused (for `ledger.resumed`). */
  private heldSince = 0;
  /** Events past the held bound, by type: written as `ledger.unrecorded` once space returns. */
  private readonly unrecorded = new Map<string, number>();

  constructor(opts: FileLedgerOptions) {
    this.dir = opts.dir;
    this.now = opts.now ?? (() => new Date());
    this.anchorEvery = Math.max(1, opts.anchorEvery ?? ANCHOR_EVERY);
    this.anchorMs = Math.max(1, opts.anchorMs ?? ANCHOR_MS);
    this.maxHeldBytes = Math.max(1, opts.maxHeldBytes ?? MAX_HELD_BYTES);
    this.retryMs = Math.max(1, opts.retryMs ?? RETRY_MS);
    this.io = opts.io ?? realIo;
    this.current = this.open();
    this.last = this.current.file.file;
    migrateModes(this.dir);
  }

  /**
   * Used at a restart for the rare run whose end a dead supervisor saved but may or may not
   * have announced: reads every segment (lines pre-filtered by substring) and the lines this
   * ledger still holds, never writes.
   */
  hasRunEvent(type: string, runId: string): boolean {
    const needle = `"runId":${JSON.stringify(runId)}`;
    const is = (e: Record<string, unknown>) => e.type === type && e.runId === runId;
    for (const e of scanLedger(this.dir, (t) => t.includes(needle) && t.includes(type))) if (is(e)) return true;
    for (const t of this.current?.file.heldText() ?? []) if (t.includes(needle) && is(JSON.parse(t) as Record<string, unknown>)) return true;
    return false;
  }

  /** The segment file this ledger writes (or last wrote). */
  get segment(): string {
    return this.last;
  }

  /** What the disk has not taken yet (all zero while it takes every line). */
  backlog(): LedgerBacklog {
    let unrecorded = 0;
    for (const n of this.unrecorded.values()) unrecorded += n;
    const f = this.current?.file;
    return { lines: f?.heldLines ?? 0, bytes: f?.heldBytes ?? 0, unrecorded, since: this.blockedSince === undefined ? null : new Date(this.blockedSince).toISOString() };
  }

  private open(): Segment {
    // Again here, not only in the constructor: a late append after the directory was removed
    // records the event rather than failing.
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const stamp = this.now().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
    const file = path.join(this.dir, `${stamp}-${process.pid}-${randomBytes(4).toString('hex')}.jsonl`);
    const genesis = genesisHash(path.basename(file));
    const seg: Segment = { file: new SegmentFile(file, genesis, SEGMENT_MODE, this.io), seq: 0, prev: genesis, registered: false, anchored: 0, linked: [] };
    // Made now when the disk has room (an empty segment holds no event); else with its first line.
    seg.file.open();
    return seg;
  }

  append(event: LedgerEvent): void {
    // An append after close (a background task finishing during shutdown) starts a new
    // segment rather than losing the event or throwing into the caller.
    if (!this.current) {
      this.current = this.open();
      this.last = this.current.file.file;
    }
    const seg = this.current;
    const type = String(event.type).slice(0, MAX_STRING);
    if (seg.file.heldBytes >= this.maxHeldBytes) {
      this.unrecorded.set(type, (this.unrecorded.get(type) ?? 0) + 1);
      return;
    }
    this.chain(seg, event);
    // While the disk refuses, the retry timer writes: one failing write per append would be a storm.
    if (this.blockedSince === undefined) this.pump(seg);
    else this.heldSince++;
  }

  /** Adds the event to the segment's chain (held until written). */
  private chain(seg: Segment, event: LedgerEvent): void {
    const line: Record<string, LedgerValue> = { v: LEDGER_FORMAT, seq: seg.seq, ts: this.now().toISOString(), type: String(event.type).slice(0, MAX_STRING) };
    for (const [k, raw] of Object.entries(event)) {
      if (k === 'type' || RESERVED.has(k)) continue;
      const v = clean(raw);
      if (v !== undefined) line[k] = v;
    }
    if (seg.seq === 0) {
      // Only what the anchor records as closed is linked: a segment it does not vouch for
      // (added from outside) stays outside the chain, and verify names it.
      const anchor = readAnchor(anchorPath(this.dir));
      const [link, ...more] = linkableSegments(this.dir, anchor && !('unreadable' in anchor) ? anchor : undefined, path.basename(seg.file.file));
      if (link) line.link = link;
      if (more.length > 0) line.links = more;
      seg.linked = [link, ...more].filter((l): l is string => typeof l === 'string').map((l) => l.split(' ')[0]!);
    }
    line.prev = seg.prev;
    const hash = lineHash(line);
    seg.file.push(JSON.stringify({ ...line, hash }), hash);
    seg.prev = hash;
    seg.seq++;
  }

  /**
   * Writes what the segment holds and anchors it as due; false (and a retry armed) when the
   * disk has no room. Any other failure throws.
   */
  private pump(seg: Segment): boolean {
    if (!this.write(seg)) return this.block();
    // The first line at once (the anchor then knows this segment exists), then in batches:
    // an anchor write is two fsyncs and a rename (≈ 1.3 ms here), an append ≈ 20 µs.
    if (seg.file.written > seg.anchored) {
      if (seg.anchored === 0 || seg.file.written - seg.anchored >= this.anchorEvery) {
        if (!this.anchor(seg, false)) return this.block();
      } else this.anchorTimer ??= setTimeout(() => this.anchorLater(seg), this.anchorMs).unref();
    }
    if (this.blockedSince !== undefined) this.resumed(seg);
    return true;
  }

  /** The 0-line anchor entry before the first line, then the held lines. */
  private write(seg: Segment): boolean {
    if (!seg.registered) {
      // Recorded before its first line, so a crash right after that line leaves it accounted for.
      if (!seg.file.open() || !noSpaceIsFalse(() => recordInAnchor(this.dir, path.basename(seg.file.file), { lines: 0, hash: seg.file.writtenHash, closed: false }))) return false;
      seg.registered = true;
    }
    return seg.file.drain();
  }

  private block(): false {
    if (this.blockedSince === undefined) {
      this.blockedSince = Date.now();
      this.heldSince = this.current?.file.heldLines ?? 0;
    }
    this.retryTimer ??= setTimeout(() => this.retry(), this.retryMs).unref();
    return false;
  }

  private retry(): void {
    this.retryTimer = undefined;
    const seg = this.current;
    if (!seg) return;
    try {
      this.pump(seg);
    } catch {
      // Nobody to tell from a timer: the lines stay held, the next append throws if it still fails.
      this.block();
    }
  }

  /** Space came back and every held line is written: say so, and what was not recorded. */
  private resumed(seg: Segment): void {
    const heldMs = Date.now() - this.blockedSince!;
    const heldLines = this.heldSince;
    this.blockedSince = undefined;
    this.heldSince = 0;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const unrecorded = this.takeUnrecorded(seg);
    this.chain(seg, { type: 'ledger.resumed', heldMs, heldLines, unrecorded });
    this.pump(seg);
  }

  /** Chains a `ledger.unrecorded` line per type counted past the bound; returns how many events that was. */
  private takeUnrecorded(seg: Segment): number {
    let total = 0;
    for (const [of, count] of this.unrecorded) {
      this.chain(seg, { type: 'ledger.unrecorded', of, count });
      total += count;
    }
    this.unrecorded.clear();
    return total;
  }

  /** Makes the segment's written lines durable, then records them in the anchor; false when the disk has no room. */
  private anchor(seg: Segment, closed: boolean): boolean {
    clearTimeout(this.anchorTimer);
    this.anchorTimer = undefined;
    if (!seg.file.fsync()) return false;
    const entry = { lines: seg.file.written, hash: seg.file.writtenHash, closed };
    if (!noSpaceIsFalse(() => recordInAnchor(this.dir, path.basename(seg.file.file), entry, seg.linked))) return false;
    seg.anchored = seg.file.written;
    return true;
  }

  private anchorLater(seg: Segment): void {
    this.anchorTimer = undefined;
    if (seg !== this.current || seg.anchored === seg.file.written) return;
    try {
      if (!this.anchor(seg, false)) this.block();
    } catch {
      // Nobody to tell from a timer: the next append anchors synchronously and throws if it still fails.
      seg.anchored = Math.min(seg.anchored, seg.file.written - this.anchorEvery);
    }
  }

  /** Resolves when everything appended so far is written; `storage_full` while the disk holds lines back. */
  async flush(): Promise<void> {
    const seg = this.current;
    if (seg && !this.pump(seg)) throw heldError(seg.file.heldLines);
  }

  /**
   * Ends the segment with a `ledger.closed` line so a truncated tail can be told apart, and
   * anchors it. With lines the disk would not take, it anchors what it wrote (the segment
   * stays open, as after a crash) and throws `storage_full` naming how many were lost.
   */
  async close(): Promise<void> {
    const seg = this.current;
    if (!seg) return;
    this.takeUnrecorded(seg);
    this.chain(seg, { type: 'ledger.closed', lines: seg.seq + 1 });
    this.current = undefined;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.blockedSince = undefined;
    this.heldSince = 0;
    try {
      const wrote = this.write(seg);
      this.anchor(seg, wrote);
      if (!wrote) throw heldError(seg.file.heldLines);
    } finally {
      seg.file.close();
    }
  }
}

/** Runs a write; false when the file system has no space, any other error thrown. */
function noSpaceIsFalse(fn: () => void): boolean {
  try {
    fn();
    return true;
  } catch (e) {
    if (isNoSpace(e)) return false;
    throw e;
  }
}

function heldError(lines: number): BrigError {
  return new BrigError('storage_full', `${lines} ledger line(s) are held in memory: the file system of brig's home has no space for them`, { data: { lines } });
}
