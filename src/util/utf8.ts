/** UTF-8 by bytes (pure): where a byte limit may cut, and a string's head within one. */

/** The largest n ≤ limit such that buf[0..n) does not end inside a UTF-8 sequence. */
export function utf8Boundary(buf: Buffer, limit: number): number {
  let n = Math.min(limit, buf.length);
  let i = n - 1;
  let back = 0;
  while (i >= 0 && back < 4 && (buf[i]! & 0xc0) === 0x80) {
    i--;
    back++;
  }
  if (i < 0) return 0;
  const lead = buf[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (i + need > n) n = i;
  return n;
}

/** The longest head of `text` within `bytes` of UTF-8, never cutting a character in two. */
export function headBytes(text: string, bytes: number): string {
  if (Buffer.byteLength(text) <= bytes) return text;
  const b = Buffer.from(text, 'utf8');
  return b.subarray(0, utf8Boundary(b, Math.max(0, bytes))).toString('utf8');
}
