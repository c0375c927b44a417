/** UTF-8 text by bytes (pure). */

/** The longest head of `text` within `bytes` of UTF-8, never cutting a character in two. */
export function headBytes(text: string, bytes: number): string {
  if (Buffer.byteLength(text) <= bytes) return text;
  const b = Buffer.from(text, 'utf8');
  let end = Math.max(0, bytes);
  while (end > 0 && (b[end]! & 0xc0) === 0x80) end--;
  return b.subarray(0, end).toString('utf8');
}
