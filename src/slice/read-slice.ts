/**
 * `read` over one ref: a byte range, or lines by number (1-based) through the sparse line
 * index — a seek to the nearest indexed line at or before N, then a scan of < 1024 lines.
 */
import fsp from 'node:fs/promises';
import { LINE_INDEX_STRIDE, type ResultRef } from '../results/index.js';
import { BrigError } from '../util/errors.js';
import { clamp, intArg, out, type SliceOutput } from './slice-output.js';

export async function readBytes(r: ResultRef, file: string, range: { offset: number; length?: number }, maxBytes: number): Promise<SliceOutput> {
  const offset = intArg(range.offset, 'offset', 0);
  const want = clamp(intArg(range.length ?? 64 * 1024, 'length', 1), 1, maxBytes);
  const fh = await fsp.open(file, 'r');
  try {
    const buf = Buffer.alloc(Math.min(want, Math.max(0, r.bytes - offset)));
    const { bytesRead } = buf.length > 0 ? await fh.read(buf, 0, buf.length, offset) : { bytesRead: 0 };
    const got = buf.subarray(0, bytesRead);
    const binary = r.kind === 'binary';
    const text = binary ? got.toString('base64') : got.toString('utf8');
    const more = Math.max(0, r.bytes - offset - bytesRead);
    return out(r.ref, 'read', { text, encoding: binary ? 'base64' : 'utf8', returned: bytesRead, unit: 'bytes', more, moreExact: true });
  } finally {
    await fh.close();
  }
}

/** Line N (1-based): seek to the nearest indexed line at or before it, scan forward. */
export async function readLines(
r: ResultRef,
file: string,
range: { line: number; lines?: number },
index: number[],
maxBytes: number,
maxLines: number,
): Promise<SliceOutput> {
  const line = intArg(range.line, 'line', 1);
  const want = clamp(intArg(range.lines ?? 100, 'lines', 1), 1, maxLines);
  if (line > r.lines) return out(r.ref, 'read', { text: '', encoding: 'utf8', returned: 0, unit: 'lines', more: 0, moreExact: true });
  const k = Math.min(Math.floor((line - 1) / LINE_INDEX_STRIDE), Math.max(0, index.length - 1));
  let skip = line - 1 - k * LINE_INDEX_STRIDE;
  let pos = index[k] ?? 0;
  const fh = await fsp.open(file, 'r');
  const parts: Buffer[] = [];
  let taken = 0;
  let bytes = 0;
  let cut = false;
  try {
    const buf = Buffer.alloc(64 * 1024);
    let carry = Buffer.alloc(0);
    outer: while (taken < want) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) {
        // A last line without a newline.
        if (carry.length > 0 && skip === 0) {
          if (bytes + carry.length > maxBytes) cut = true;
          else parts.push(carry), (bytes += carry.length), taken++;
        }
        break;
      }
      pos += bytesRead;
      let chunk = carry.length ? Buffer.concat([carry, buf.subarray(0, bytesRead)]) : buf.subarray(0, bytesRead);
      let start = 0;
      let nl = chunk.indexOf(10, start);
      while (nl !== -1) {
        if (skip > 0) skip--;
        else {
          const piece = chunk.subarray(start, nl + 1);
          if (bytes + piece.length > maxBytes) {
            cut = true;
            break outer;
          }
          parts.push(Buffer.from(piece));
          bytes += piece.length;
          if (++taken >= want) break outer;
        }
        start = nl + 1;
        nl = chunk.indexOf(10, start);
      }
      // The rest of a line being skipped is not kept (only its newline matters): a long line
      // before the one asked for costs a scan, never memory, and is not blamed for the cap.
      carry = skip > 0 ? Buffer.alloc(0) : Buffer.from(chunk.subarray(start));
      if (carry.length > maxBytes) {
        cut = true;
        break;
      }
      chunk = carry;
    }
  } finally {
    await fh.close();
  }
  if (taken === 0 && cut) throw new BrigError('output_too_large', `line ${line} is longer than the ${maxBytes}-byte cap`, { hint: 'Read it by bytes: --offset/--length.' });
  const more = Math.max(0, r.lines - (line - 1) - taken);
  const text = Buffer.concat(parts).toString('utf8');
  return out(r.ref, 'read', { text, encoding: 'utf8', returned: taken, unit: 'lines', more, moreExact: true, ...(cut ? { cutByBytes: true } : {}) });
}
