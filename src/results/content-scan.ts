import { createHash, type Hash } from 'node:crypto';
import { previewOf, shapeOf, sniffKind } from './kind.js';
import { LINE_INDEX_STRIDE, type ResultKind } from './types.js';

const HEAD_BYTES = 65536;

export interface ScanResult {
  bytes: number;
  sha256: string;
  /** Lines in the file; a last line without a newline counts. */
  lines: number;
  /** offsets[k] = byte offset where line k·stride (0-based) starts. */
  offsets: number[];
  /** The first bytes (≤ 64 KiB), for kind sniffing, preview and header. */
  head: Buffer;
}

/**
 * One pass over a stream's chunks: sha256, byte count, line count and the sparse line index,
 * plus the head. Holds only the head and one offset per `stride` lines — never the content.
 */
export class ContentScan {
  private readonly hash: Hash = createHash('sha256');
  private bytes = 0;
  private newlines = 0;
  private lastByte = -1;
  private readonly offsets: number[] = [0];
  private readonly headParts: Buffer[] = [];
  private headLen = 0;

  constructor(private readonly stride = LINE_INDEX_STRIDE) {}

  get size(): number {
    return this.bytes;
  }

  update(chunk: Buffer): void {
    this.hash.update(chunk);
    if (this.headLen < HEAD_BYTES) {
      const part = chunk.subarray(0, HEAD_BYTES - this.headLen);
      this.headParts.push(Buffer.from(part));
      this.headLen += part.length;
    }
    const base = this.bytes;
    let i = chunk.indexOf(10);
    while (i !== -1) {
      this.newlines++;
      if (this.newlines % this.stride === 0) this.offsets.push(base + i + 1);
      i = chunk.indexOf(10, i + 1);
    }
    if (chunk.length > 0) this.lastByte = chunk[chunk.length - 1]!;
    this.bytes += chunk.length;
  }

  finish(): ScanResult {
    const lines = this.bytes === 0 ? 0 : this.newlines + (this.lastByte === 10 ? 0 : 1);
    // An offset at EOF (file ends right after a stride-th newline) names no line: drop it.
    const offsets = this.offsets.filter((o, k) => k === 0 || o < this.bytes);
    return { bytes: this.bytes, sha256: this.hash.digest('hex'), lines, offsets, head: Buffer.concat(this.headParts) };
  }
}

export function encodeLineIndex(offsets: readonly number[]): Buffer {
  const buf = Buffer.alloc(offsets.length * 8);
  offsets.forEach((o, k) => buf.writeDoubleLE(o, k * 8));
  return buf;
}

export function decodeLineIndex(buf: Buffer): number[] {
  const out: number[] = [];
  for (let k = 0; k + 8 <= buf.length; k += 8) out.push(buf.readDoubleLE(k));
  return out;
}

/**
 * What a ResultRef needs to know about one file, computed while its bytes streamed by: the
 * 64 KiB head is reduced to kind, preview and shape at once, so holding one of these per
 * collected file costs its preview and its line index (8 bytes per 1024 lines), not its head.
 * A class, not a shape: the store trusts only scans this module made (anything else is
 * re-read from disk).
 */
export class ScannedFile {
  readonly bytes: number;
  readonly sha256: string;
  readonly lines: number;
  /** The encoded sparse line index (encodeLineIndex). */
  readonly lineIndex: Buffer;
  readonly kind: ResultKind;
  readonly preview: string;
  readonly rows: number | undefined;
  readonly columns: string[] | undefined;
  readonly columnCount: number | undefined;

  constructor(name: string, scan: ScanResult) {
    this.bytes = scan.bytes;
    this.sha256 = scan.sha256;
    this.lines = scan.lines;
    this.lineIndex = encodeLineIndex(scan.offsets);
    this.kind = sniffKind(name, scan.head);
    this.preview = previewOf(scan.head, this.kind);
    const shape = shapeOf(this.kind, scan.head, scan.lines);
    this.rows = shape.rows;
    this.columns = shape.columns;
    this.columnCount = shape.columnCount;
  }
}

/**
 * A per-file observer for the jail's collect (its CollectObserver, structurally): scans the
 * bytes as they are written; end() gives the ScannedFile that indexCollected reuses.
 * `name` is the file's path (only its extension matters, as for sniffKind).
 */
export function scanObserver(name: string): { update(chunk: Buffer): void; end(): ScannedFile } {
  const scan = new ContentScan();
  return { update: (chunk) => scan.update(chunk), end: () => new ScannedFile(name, scan.finish()) };
}
