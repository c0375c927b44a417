/**
 * The audit ledger: append-only, hash-chained JSONL written with pino under $BRIG_HOME/ledger.
 *
 * Guarantees: every appended event is on disk when append() returns (pino's sync
 * destination), content-free (only ids, counts, enums, durations: INV-7), and chained — each
 * line carries seq, the previous line's hash and its own hash over its canonical form, so an
 * edited, deleted or reordered line is detected by verifyLedger. Threat: someone with write
 * access to the brig home hiding what a child did; a crash losing the tail. Trusts: the local
 * file system for durability (not for integrity — a writer who can rewrite the whole chain
 * is out of scope; anchor the last hash elsewhere for that). Fails loudly: a failed write
 * throws rather than letting an action go unrecorded.
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
 * crash leaves unanchored, and every segment with a line is accounted for. Segments are 0644 inside the 0700 directory: nobody but the
 * owner can reach them, and the DuckDB helper (uid 65534) reads one only through the bind
 * mount the pool makes for `brig audit query`.
 * verifyLedger checks every segment and the anchor.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pino, { type Logger } from 'pino';
import type { Ledger, LedgerEvent, LedgerValue } from './types.js';
import { ANCHOR_EVERY, ANCHOR_MS, anchorPath, readAnchor, recordInAnchor } from './anchor.js';
import { scanLedger } from './verify.js';
import { LEDGER_FORMAT, genesisHash, lineHash, linkableSegments } from './chain.js';

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
}

interface Segment {
  file: string;
  dest: ReturnType<typeof pino.destination>;
  logger: Logger;
  seq: number;
  prev: string;
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
  private current: Segment | undefined;
  private last: string;
  private anchorTimer: NodeJS.Timeout | undefined;

  constructor(opts: FileLedgerOptions) {
    this.dir = opts.dir;
    this.now = opts.now ?? (() => new Date());
    this.anchorEvery = Math.max(1, opts.anchorEvery ?? ANCHOR_EVERY);
    this.anchorMs = Math.max(1, opts.anchorMs ?? ANCHOR_MS);
    this.current = this.open();
    this.last = this.current.file;
    migrateModes(this.dir);
  }

  /**
   * Used at a restart for the rare run whose end a dead supervisor saved but may or may not
   * have announced: reads every segment (lines pre-filtered by substring), never writes.
   */
  hasRunEvent(type: string, runId: string): boolean {
    const needle = `"runId":${JSON.stringify(runId)}`;
    for (const e of scanLedger(this.dir, (t) => t.includes(needle) && t.includes(type))) if (e.type === type && e.runId === runId) return true;
    return false;
  }

  /** The segment file this ledger writes (or last wrote). */
  get segment(): string {
    return this.last;
  }

  private open(): Segment {
    // Again here, not only in the constructor: a late append after the directory was removed
    // records the event rather than failing.
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const stamp = this.now().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
    const file = path.join(this.dir, `${stamp}-${process.pid}-${randomBytes(4).toString('hex')}.jsonl`);
    const dest = pino.destination({ dest: file, sync: true, mode: SEGMENT_MODE, append: true });
    // base/timestamp off and the level replaced by the format version: the line is exactly
    // the object we hash, plus `v`.
    const logger = pino({ base: null, timestamp: false, formatters: { level: () => ({ v: LEDGER_FORMAT }) } }, dest);
    return { file, dest, logger, seq: 0, prev: genesisHash(path.basename(file)), anchored: 0, linked: [] };
  }

  append(event: LedgerEvent): void {
    // An append after close (a background task finishing during shutdown) starts a new
    // segment rather than losing the event or throwing into the caller.
    if (!this.current) {
      this.current = this.open();
      this.last = this.current.file;
    }
    const seg = this.current;
    const line: Record<string, LedgerValue> = { v: LEDGER_FORMAT, seq: seg.seq, ts: this.now().toISOString(), type: String(event.type).slice(0, MAX_STRING) };
    for (const [k, raw] of Object.entries(event)) {
      if (k === 'type' || RESERVED.has(k)) continue;
      const v = clean(raw);
      if (v !== undefined) line[k] = v;
    }
    if (seg.seq === 0) {
      const own = path.basename(seg.file);
      // Only what the anchor records as closed is linked: a segment it does not vouch for
      // (added from outside) stays outside the chain, and verify names it.
      const anchor = readAnchor(anchorPath(this.dir));
      const [link, ...more] = linkableSegments(this.dir, anchor && !('unreadable' in anchor) ? anchor : undefined, own);
      if (link) line.link = link;
      if (more.length > 0) line.links = more;
      seg.linked = [link, ...more].filter((l): l is string => typeof l === 'string').map((l) => l.split(' ')[0]!);
      // Recorded before its first line, so a crash right after that line leaves it accounted for.
      recordInAnchor(this.dir, own, { lines: 0, hash: seg.prev, closed: false });
    }
    line.prev = seg.prev;
    const hash = lineHash(line);
    const { v: _v, ...body } = line;
    seg.logger.info({ ...body, hash });
    seg.prev = hash;
    seg.seq++;
    // The first line at once (the anchor then knows this segment exists), then in batches:
    // an anchor write is two fsyncs and a rename (≈ 1.3 ms here), an append ≈ 20 µs.
    if (seg.anchored === 0 || seg.seq - seg.anchored >= this.anchorEvery) this.anchor(seg, false);
    else this.anchorTimer ??= setTimeout(() => this.anchorLater(seg), this.anchorMs).unref();
  }

  /** Makes the segment's lines durable, then records them in the anchor. */
  private anchor(seg: Segment, closed: boolean): void {
    clearTimeout(this.anchorTimer);
    this.anchorTimer = undefined;
    seg.dest.flushSync();
    // SonicBoom opens the file synchronously in sync mode; its types just do not say `fd`.
    fs.fsyncSync((seg.dest as unknown as { fd: number }).fd);
    recordInAnchor(this.dir, path.basename(seg.file), { lines: seg.seq, hash: seg.prev, closed }, seg.linked);
    seg.anchored = seg.seq;
  }

  private anchorLater(seg: Segment): void {
    this.anchorTimer = undefined;
    if (seg !== this.current || seg.anchored === seg.seq) return;
    try {
      this.anchor(seg, false);
    } catch {
      // Nobody to tell from a timer: the next append anchors synchronously and throws if it still fails.
      seg.anchored = Math.min(seg.anchored, seg.seq - this.anchorEvery);
    }
  }

  async flush(): Promise<void> {
    this.current?.dest.flushSync();
  }

  /** Ends the segment with a `ledger.closed` line so a truncated tail can be told apart, and anchors it. */
  async close(): Promise<void> {
    const seg = this.current;
    if (!seg) return;
    this.append({ type: 'ledger.closed', lines: seg.seq + 1 });
    this.current = undefined;
    this.anchor(seg, true);
    seg.dest.end();
  }
}
