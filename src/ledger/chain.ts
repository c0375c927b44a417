/**
 * The audit ledger's hash chain: each line's hash covers its canonical JSON (keys sorted, its
 * own `hash` left out) including `prev`, the hash of the line before it; a segment's first
 * line starts from a genesis bound to the segment's file name and links the closed segments
 * written before it (`link`, `links`).
 *
 * Guarantees: a line edited, deleted, reordered or moved to another segment breaks the chain at
 * that line; a closed segment deleted whole or cut at its tail breaks a link a later segment
 * holds — verify.ts names the first bad line (`ledger_corrupt`). Threat: someone with write
 * access to $BRIG_HOME/ledger rewriting what happened after the fact. Trusts: SHA-256; the
 * newest segments of the directory (links look at the newest 50: a bound on the cost of
 * opening a segment). Not covered: the chain's heads (nothing comes after them: anchor.ts),
 * or a rewrite of the whole chain (anchor it off-host). Fails closed: a line or a link that
 * cannot be read or parsed does not verify; a segment's head or tail that cannot be read is
 * "no line", never a guessed one.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

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

/** The first line of a file, read from its head (a first line with links stays under 64 KiB). */
function firstLine(file: string): Record<string, unknown> | undefined {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, 'r');
    const buf = Buffer.alloc(64 * 1024);
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    const text = buf.subarray(0, n).toString('utf8');
    const nl = text.indexOf('\n');
    const obj: unknown = JSON.parse(nl === -1 ? text : text.slice(0, nl));
    return obj && typeof obj === 'object' && !Array.isArray(obj) ? (obj as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** How many of the newest segment files a new segment looks at for links (bounded cost). */
const LINK_WINDOW = 50;

/**
 * Every closed segment (among the newest LINK_WINDOW) that no other segment links to yet, as
 * `"<name> <last hash>"`, newest first. A new segment records them on its first line
 * (`links`), so a segment that was still open when a later one started (a long-lived daemon's,
 * while CLI segments came and went) is linked by the next segment opened after it closed:
 * deleting it whole is then caught too, not only deleting the newest closed one.
 */
export function unlinkedClosedSegments(dir: string, except: string): string[] {
  const names = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl') && f !== except)
    .sort()
    .reverse()
    .slice(0, LINK_WINDOW);
  const linked = new Set<string>();
  const closed: string[] = [];
  for (const name of names) {
    const first = firstLine(path.join(dir, name));
    const refs = [first?.link, ...(Array.isArray(first?.links) ? first.links : [])];
    for (const l of refs) if (typeof l === 'string') linked.add(l.split(' ')[0]!);
    const last = lastLine(path.join(dir, name));
    if (last?.type === 'ledger.closed' && typeof last.hash === 'string') closed.push(`${name} ${last.hash}`);
  }
  return closed.filter((c) => !linked.has(c.split(' ')[0]!));
}

/**
 * The newest closed segment in a ledger directory as `"<name> <last hash>"`: a new segment
 * records it on its first line, so deleting or cutting an earlier closed segment breaks a
 * link verifyLedger checks. Only the newest few files are looked at (bounded cost).
 */
export function segmentLink(dir: string, except: string): string | undefined {
  const names = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl') && f !== except)
    .sort()
    .reverse()
    .slice(0, 50);
  for (const name of names) {
    const last = lastLine(path.join(dir, name));
    if (last?.type === 'ledger.closed' && typeof last.hash === 'string') return `${name} ${last.hash}`;
  }
  return undefined;
}

/** Checks a `link` written by segmentLink; undefined when it holds. */
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
