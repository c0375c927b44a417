/**
 * Verifies a ledger directory: every segment's chain and links, then the anchor (anchor.ts),
 * then that every segment with a line is accounted for — recorded in the anchor, or linked
 * from a segment that is (a forged segment with a valid chain of its own is named: `file:1`).
 * Names the first problem as `file:line: why`. What a crash can leave is accepted and listed,
 * not called tampering: segments without `ledger.closed` (`open`), an open segment with lines
 * past its anchor entry (the anchor's window, `anchor.behind`), and an open segment whose last
 * line was cut mid-write by a machine crash (`torn`: no newline, not JSON, past the anchor).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AnchorReport, LedgerBreak, LedgerReport } from '../protocol/index.js';
import { type Anchor, anchorPath, readAnchor } from './anchor.js';
import { LEDGER_FORMAT, checkLink, genesisHash, lineHash } from './chain.js';
import { byCodeUnits } from '../protocol/index.js';

export type { AnchorReport, LedgerBreak, LedgerReport };

interface SegmentResult {
  lines: number;
  bad?: LedgerBreak;
  closed: boolean;
  torn: boolean;
  /** The hash of line `want` (1-based; 0: the genesis), when asked for and present. */
  hashAt?: string;
  /** The segments its first line links (names). */
  links: string[];
}

function verifySegment(file: string, want: number | undefined): SegmentResult {
  const text = fs.readFileSync(file, 'utf8');
  const rows = text.split('\n');
  if (rows[rows.length - 1] === '') rows.pop();
  let prev = genesisHash(path.basename(file));
  let closed = false;
  let hashAt: string | undefined = want === 0 ? prev : undefined;
  const links: string[] = [];
  for (let i = 0; i < rows.length; i++) {
    const at = (why: string): SegmentResult => ({ lines: i, bad: { file, line: i + 1, why }, closed: false, torn: false, links });
    if (closed) return at('a line after ledger.closed (appended to a closed segment)');
    let obj: unknown;
    try {
      obj = JSON.parse(rows[i]!);
    } catch {
      // A machine crash can leave the last write half on disk: past the anchor, on an open
      // segment, that is not tampering (the caller checks the anchor's count against `lines`).
      if (i === rows.length - 1 && !text.endsWith('\n') && (want === undefined || i >= want)) return { lines: i, closed: false, torn: true, links, ...(hashAt ? { hashAt } : {}) };
      return at('not valid JSON (line edited or cut)');
    }
    if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return at('not a JSON object');
    const line = obj as Record<string, unknown>;
    if (line.v !== LEDGER_FORMAT) return at(`unknown format version ${JSON.stringify(line.v)}`);
    if (line.seq !== i) return at(`seq ${JSON.stringify(line.seq)} where ${i} was expected (a line was deleted, inserted or reordered)`);
    if (line.prev !== prev) return at('prev does not match the previous line\'s hash (a line before it was deleted or changed)');
    if (line.hash !== lineHash(line)) return at('hash does not match the line\'s content (line edited)');
    if (i === 0 && line.link !== undefined) {
      const broken = checkLink(path.dirname(file), line.link);
      if (broken) return at(broken);
      links.push(String(line.link).split(' ')[0]!);
    }
    if (i === 0 && line.links !== undefined) {
      if (!Array.isArray(line.links)) return at('links is not a list');
      for (const l of line.links) {
        const broken = checkLink(path.dirname(file), l);
        if (broken) return at(broken);
        links.push(String(l).split(' ')[0]!);
      }
    }
    prev = line.hash as string;
    if (i + 1 === want) hashAt = prev;
    if (line.type === 'ledger.closed') closed = true;
  }
  return { lines: rows.length, closed, torn: false, links, ...(hashAt ? { hashAt } : {}) };
}

/**
 * The first segment with a line in it that nobody vouches for: neither recorded in an anchor
 * snapshot nor linked from a segment that is (links only ever point at segments the anchor
 * recorded as closed, chain.ts). An empty file holds no event: a writer that opened and never
 * appended.
 */
function unaccounted(files: string[], nonEmpty: Set<string>, links: Map<string, string[]>, anchored: Iterable<string>): string | undefined {
  const accounted = new Set<string>();
  const todo = [...anchored];
  for (let name = todo.pop(); name !== undefined; name = todo.pop()) {
    if (accounted.has(name)) continue;
    accounted.add(name);
    todo.push(...(links.get(name) ?? []));
  }
  return files.find((f) => nonEmpty.has(f) && !accounted.has(path.basename(f)));
}

/**
 * Checks every segment of a ledger directory and its anchor; reports the first problem (file +
 * line + why). A live writer can open, fill, close and have a segment linked while verify
 * reads: a segment found unaccounted for is checked once more against a fresh read before it
 * is called tampering.
 */
export function verifyLedger(dir: string): LedgerReport {
  const first = verifyOnce(dir);
  return first.unaccounted ? verifyOnce(dir).report : first.report;
}

function verifyOnce(dir: string): { report: LedgerReport; unaccounted?: true } {
  const files = ledgerFiles(dir);
  const anchorFile = anchorPath(dir);
  const read = readAnchor(anchorFile);
  const anchor: Anchor | undefined = read && !('unreadable' in read) ? read : undefined;
  const anchorReport: AnchorReport = { file: anchorFile, segments: anchor ? Object.keys(anchor.segments).length : 0, behind: [] };
  const anchorBad = (why: string): LedgerBreak => ({ file: anchorFile, line: 1, why });
  let lines = 0;
  const open: string[] = [];
  const torn: string[] = [];
  const links = new Map<string, string[]>();
  const nonEmpty = new Set<string>();
  const done = (bad?: LedgerBreak): { report: LedgerReport } => ({
    report: { ok: bad === undefined, files: files.length, lines, ...(bad ? { bad } : {}), open, torn, anchor: anchorReport },
  });
  for (const f of files) {
    const entry = anchor?.segments[path.basename(f)];
    const r = verifySegment(f, entry?.lines);
    lines += r.lines;
    if (r.bad) return done(r.bad);
    if (!r.closed) open.push(f);
    if (r.torn) torn.push(f);
    links.set(path.basename(f), r.links);
    if (r.lines > 0 || r.torn) nonEmpty.add(f);
    if (!entry) continue;
    if (r.lines < entry.lines) return done({ file: f, line: r.lines + 1, why: `the anchor records ${entry.lines} line(s) in this segment, it has ${r.lines} (its tail was cut)` });
    if (r.hashAt !== entry.hash) return done({ file: f, line: entry.lines, why: 'not the line the anchor records here (the segment was rewritten)' });
    if (entry.closed && !r.closed) return done({ file: f, line: entry.lines, why: 'the anchor records this segment as closed (its ledger.closed line was removed)' });
    if (r.lines > entry.lines) anchorReport.behind.push({ file: f, lines: r.lines - entry.lines });
  }
  if (read && 'unreadable' in read) return done(anchorBad(`the anchor cannot be read: ${read.unreadable}`));
  if (!anchor) {
    if (files.length === 0) return done();
    return done(anchorBad(`the anchor is missing while ${files.length} segment(s) exist (deleted, or a ledger written before anchors were kept)`));
  }
  const present = new Set(files.map((f) => path.basename(f)));
  for (const [name, e] of Object.entries(anchor.segments).sort(([a], [b]) => byCodeUnits(a, b))) {
    if (!present.has(name)) return done(anchorBad(`records segment ${name} (${e.lines} line(s)), which is missing (a segment was deleted)`));
  }
  // The anchor read again after the segments: a writer that started while they were read has
  // recorded its segment by now (before its first line).
  const later = readAnchor(anchorFile);
  const anchored = [...Object.keys(anchor.segments), ...(later && !('unreadable' in later) ? Object.keys(later.segments) : [])];
  const stray = unaccounted(files, nonEmpty, links, anchored);
  if (stray) {
    const why = 'neither recorded in the anchor nor linked from a segment that is (a segment brig did not write, or one written before anchors were kept)';
    return { ...done({ file: stray, line: 1, why }), unaccounted: true };
  }
  return done();
}

/** The segment files of a ledger directory, for queries. */
export function ledgerFiles(dir: string): string[] {
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort().map((f) => path.join(dir, f)) : [];
}

/**
 * The events of a ledger directory whose line passes `keep` (a cheap substring test, tried on
 * each segment's whole text first, then on each line before it is parsed), oldest segment
 * first. An unreadable segment and a torn last line are skipped: a query, not a verification.
 */
export function* scanLedger(dir: string, keep: (text: string) => boolean): Generator<Record<string, unknown>> {
  for (const file of ledgerFiles(dir)) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    if (!keep(text)) continue;
    for (const line of text.split('\n')) {
      if (!keep(line)) continue;
      try {
        yield JSON.parse(line) as Record<string, unknown>;
      } catch {
        // a torn last line of a killed writer: not an event
      }
    }
  }
}
