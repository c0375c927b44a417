/**
 * The first bytes of a tunnel: a TLS ClientHello's server name and whether it offers Encrypted
 * Client Hello, or plain HTTP, or neither.
 *
 * Guarantees: reads only the first TLS record (≤ 16 KiB + 5); a ClientHello whose extensions do
 * not fit it, or any length that runs past its container, is `not_tls` (never guessed); the SNI
 * is the first host_name entry, returned as sent (the caller canonicalizes); ECH is extension
 * 0xfe0d (and the draft's 0xff02). Threat: a child crafting a ClientHello to name one host to
 * the gate and another to the server. Fails closed. Pure.
 */
export type FirstBytes = { kind: 'need_more' } | { kind: 'tls'; sni: string | null; ech: boolean } | { kind: 'http' } | { kind: 'not_tls' };

const ECH_TYPES = new Set([0xfe0d, 0xff02]);

export function readFirstBytes(buf: Buffer): FirstBytes {
  if (buf.length === 0) return { kind: 'need_more' };
  if (buf[0] !== 0x16) return /^[A-Z]{3,7} /.test(buf.subarray(0, 8).toString('latin1')) ? { kind: 'http' } : buf.length < 8 && /^[A-Z]*$/.test(buf.toString('latin1')) ? { kind: 'need_more' } : { kind: 'not_tls' };
  if (buf.length < 5) return { kind: 'need_more' };
  const recLen = buf.readUInt16BE(3);
  if (recLen > 16384 + 256 || recLen < 4) return { kind: 'not_tls' };
  if (buf.length < 5 + recLen) return { kind: 'need_more' };
  const rec = buf.subarray(5, 5 + recLen);
  if (rec[0] !== 0x01) return { kind: 'not_tls' };
  const hsLen = (rec[1]! << 16) | (rec[2]! << 8) | rec[3]!;
  if (hsLen + 4 > rec.length) return { kind: 'not_tls' };
  const hs = rec.subarray(4, 4 + hsLen);
  let p = 2 + 32; // version, random
  const need = (n: number) => p + n <= hs.length;
  if (!need(1)) return { kind: 'not_tls' };
  p += 1 + hs[p]!; // session id
  if (!need(2)) return { kind: 'not_tls' };
  p += 2 + hs.readUInt16BE(p); // cipher suites
  if (!need(1)) return { kind: 'not_tls' };
  p += 1 + hs[p]!; // compression
  if (p === hs.length) return { kind: 'tls', sni: null, ech: false };
  if (!need(2)) return { kind: 'not_tls' };
  const extEnd = p + 2 + hs.readUInt16BE(p);
  p += 2;
  if (extEnd > hs.length) return { kind: 'not_tls' };
  let sni: string | null = null;
  let ech = false;
  while (p < extEnd) {
    if (p + 4 > extEnd) return { kind: 'not_tls' };
    const type = hs.readUInt16BE(p);
    const len = hs.readUInt16BE(p + 2);
    const body = hs.subarray(p + 4, p + 4 + len);
    if (p + 4 + len > extEnd) return { kind: 'not_tls' };
    if (ECH_TYPES.has(type)) ech = true;
    if (type === 0) {
      if (sni !== null || body.length < 2) return { kind: 'not_tls' };
      const listEnd = 2 + body.readUInt16BE(0);
      if (listEnd > body.length || listEnd < 5) return { kind: 'not_tls' };
      if (body[2] !== 0) return { kind: 'not_tls' };
      const nameLen = body.readUInt16BE(3);
      if (5 + nameLen > listEnd) return { kind: 'not_tls' };
      sni = body.subarray(5, 5 + nameLen).toString('latin1');
    }
    p += 4 + len;
  }
  return { kind: 'tls', sni, ech };
}
