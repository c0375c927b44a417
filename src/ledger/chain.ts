/**
 * The audit ledger's hash chain: each line's hash covers its canonical JSON (keys sorted, its
 * own `hash` left out) including `prev`, the hash of the line before it; a segment's first
 * line starts from a genesis bound to the segment's file name and links the closed segments
 * the anchor records (`link`, `links`).
 *
 * Guarantees: a line edited, deleted, reordered or moved to another segment breaks the chain at
 * that line; a closed segment deleted whole or cut at its tail breaks a link a later segment
 * holds — verify.ts names the first bad line (`ledger_corrupt`). A link is made only to a
 * segment the anchor records as closed with that last line, so a segment brig did not write
 * never becomes part of the chain by being linked. Threat: someone with write access to
 * $BRIG_HOME/ledger rewriting what happened after the fact, or adding a segment of their own.
 * Trusts: SHA-256; the anchor, for which segments a link may vouch for (a first line links at
 * most 50: a bound on its size). Not covered: the chain's heads (nothing comes after them:
 * anchor.ts), or a rewrite of the whole chain (anchor it off-host). Fails closed: a line or a
 * link that cannot be read or parsed does not verify; a segment's tail that cannot be read is
 * "no line", never a guessed one — and is not linked.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { byCodeUnits } from '../protocol/index.js';

/** The ledger line format version; pino writes it first on every line. */
export const LEDGER_FORMAT = 1;

/** JSON with keys sorted at every level: the bytes a line's hash covers. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

export function sha256Hex(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

/** The `prev` of a segment's first line: binds the chain to the segment's file name. */
export function genesisHash(segmentName: string): string {
  return sha256Hex(`brig-ledger-v${LEDGER_FORMAT}\n${segmentName}`);
}

/** The hash of a line: over its canonical form without the `hash` field. */
export function lineHash(line: Record<string, unknown>): string {
  const { hash: _drop, ...rest } = line;
  return sha256Hex(canonicalJson(rest));
}

/** The last line of a file, read from its tail (ledger lines are far below 16 KiB). */
function lastLine(file: string): Record<string, unknown> | undefined {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, 'r');
    const size = fs.fstatSync(fd).size;
    const len = Math.min(size, 16 * 1024);
    const buf = Buffer.alloc(len);
    fs.readSync(fd, buf, 0, len, size - len);
    const rows = buf.toString('utf8').split('\n').filter((l) => l.length > 0);
    const obj: unknown = JSON.parse(rows[rows.length - 1] ?? 'null');
    return obj && typeof obj === 'object' && !Array.isArray(obj) ? (obj as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** How many segments a new segment links at most (its first line stays far below 64 KiB). */
const LINK_WINDOW = 50;

/**
 * The segments a new segment's first line links, as `"<name> <last hash>"`, newest first: the
 * ones the anchor records as closed (their writer closed them and said so) whose last line is
 * still the one it recorded. Only those: a segment the anchor does not vouch for — one copied
 * into the directory, or a crashed writer's open segment that someone else "closed" — is never
 * pulled into the chain by a link; verify names it (or, for the crashed one, keeps it anchored).
 * A segment that was still open when a later one started (a long-lived daemon's, while CLI
 * segments came and went) is linked by the next segment opened after it closed.
 */
export function linkableSegments(dir: string, anchor: { segments: Record<string, { hash: string; closed: boolean }> } | undefined, except: string): string[] {
  return Object.entries(anchor?.segments ?? {})
    .filter(([name, e]) => e.closed && name !== except)
    .sort(([a], [b]) => byCodeUnits(b, a))
    .slice(0, LINK_WINDOW)
    .filter(([name, e]) => lastLine(path.join(dir, name))?.hash === e.hash)
    .map(([name, e]) => `${name} ${e.hash}`);
}

/** Checks a `link` written from linkableSegments; undefined when it holds. */
export function checkLink(dir: string, link: unknown): string | undefined {
  if (typeof link !== 'string') return 'link is not a string';
  const [name, hash] = link.split(' ');
  if (!name || !hash || name.includes('/') || !name.endsWith('.jsonl')) return 'link is malformed';
  const file = path.join(dir, name);
  if (!fs.existsSync(file)) return `links to segment ${name}, which is missing (a segment was deleted)`;
  const last = lastLine(file);
  if (last?.hash !== hash) return `links to segment ${name}, whose last line is not the one linked (that segment's tail was changed)`;
  return undefined;
}
