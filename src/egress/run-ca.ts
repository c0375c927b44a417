/**
 * The per-run CA of `tls: inspect`: an ECDSA P-256 CA made in memory when a run with an inspect
 * rule opens its gate, and a leaf certificate per host it is asked for, signed by it.
 *
 * Guarantees: the CA's private key exists only in this process's memory (never written, never
 * exported: a KeyObject); only the CA certificate leaves (the per-run CA bundle the jail's CA
 * variables name); each run has its own CA, so a child that keeps a certificate can impersonate
 * nothing to another run; the CA is path-length 0 (signs leaves only), leaves are serverAuth for
 * exactly the one name (or IP) asked, and both live a day. Built with node:crypto alone (keys,
 * ECDSA signatures) and a small DER writer: an X.509 v3 certificate is a fixed shape of a few
 * SEQUENCEs, so no certificate library enters the supervisor (node-forge has no EC keys and
 * @peculiar/x509 pulls pkijs, asn1js, tsyringe and reflect-metadata for what is ~100 lines here).
 * Threat: a child that sees the CA certificate. Trusts: node:crypto. Fails closed: a host the
 * CA cannot name (not a canonical name or IP) gets no certificate and the connection is closed.
 */
import crypto from 'node:crypto';
import net from 'node:net';

// --- DER ---------------------------------------------------------------------------------
const len = (n: number): Buffer => {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
};
const tlv = (tag: number, body: Buffer): Buffer => Buffer.concat([Buffer.from([tag]), len(body.length), body]);
const seq = (...xs: Buffer[]): Buffer => tlv(0x30, Buffer.concat(xs));
const set = (...xs: Buffer[]): Buffer => tlv(0x31, Buffer.concat(xs));
const ctx = (n: number, body: Buffer): Buffer => tlv(0xa0 + n, body); // [n] EXPLICIT, constructed
const bool = (b: boolean): Buffer => tlv(0x01, Buffer.from([b ? 0xff : 0x00]));
const octets = (b: Buffer): Buffer => tlv(0x04, b);
const bits = (b: Buffer, unused = 0): Buffer => tlv(0x03, Buffer.concat([Buffer.from([unused]), b]));
const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));
function int(b: Buffer | number): Buffer {
  let v = typeof b === 'number' ? Buffer.from([b]) : b;
  while (v.length > 1 && v[0] === 0 && (v[1]! & 0x80) === 0) v = v.subarray(1);
  if ((v[0]! & 0x80) !== 0) v = Buffer.concat([Buffer.from([0]), v]);
  return tlv(0x02, v);
}
function oid(dotted: string): Buffer {
  const p = dotted.split('.').map(Number);
  const out: number[] = [40 * p[0]! + p[1]!];
  for (const n of p.slice(2)) {
    const b: number[] = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) b.unshift(0x80 | (v & 0x7f));
    out.push(...b);
  }
  return tlv(0x06, Buffer.from(out));
}
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14); // YYYYMMDDHHMMSS
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));
const name = (cn: string): Buffer => seq(set(seq(oid('2.5.4.3'), utf8(cn))));
const ext = (id: string, critical: boolean, value: Buffer): Buffer => seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));
const keyId = (spki: Buffer): Buffer => crypto.createHash('sha1').update(spki).digest();

function serial(): Buffer {
  const b = crypto.randomBytes(16);
  b[0] = (b[0]! & 0x7f) | 0x01;
  return b;
}

function sign(tbs: Buffer, key: crypto.KeyObject): Buffer {
  const sig = crypto.sign('sha256', tbs, { key, dsaEncoding: 'der' });
  return seq(tbs, ECDSA_SHA256, bits(sig));
}

const pem = (der: Buffer): string => `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;

/** The SAN entry for one canonical host: a dNSName, or an iPAddress (4 or 16 bytes). */
function san(host: string): Buffer | null {
  if (net.isIPv4(host)) return tlv(0x87, Buffer.from(host.split('.').map(Number)));
  if (net.isIPv6(host)) {
    if (host.includes('.')) return null;
    const full = host.includes('::') ? expand6(host) : host;
    return tlv(0x87, Buffer.from(full.split(':').flatMap((h) => { const v = parseInt(h, 16); return [v >> 8, v & 0xff]; })));
  }
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host) || host.length > 253) return null;
  return tlv(0x82, Buffer.from(host, 'ascii'));
}
function expand6(a: string): string {
  const [l, r] = a.split('::') as [string, string];
  const L = l ? l.split(':') : [];
  const R = r ? r.split(':') : [];
  return [...L, ...Array(8 - L.length - R.length).fill('0'), ...R].join(':');
}

export interface LeafCert {
  /** PEM, in memory only (node 20's TLS takes no KeyObject). */
  key: string;
  cert: string;
}

export class RunCa {
  readonly certPem: string;
  readonly #key: crypto.KeyObject;
  readonly #name: Buffer;
  readonly #aki: Buffer;
  readonly #leaves = new Map<string, LeafCert>();
  readonly #now: () => number;

  constructor(label: string, now: () => number = Date.now) {
    this.#now = now;
    const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.#key = privateKey;
    const spki = publicKey.export({ type: 'spki', format: 'der' });
    this.#name = name(`brig egress CA ${label}`.slice(0, 64));
    this.#aki = keyId(spki);
    const t = this.#now();
    const tbs = seq(
      ctx(0, int(2)),
      int(serial()),
      ECDSA_SHA256,
      this.#name,
      seq(time(new Date(t - 3600_000)), time(new Date(t + 7 * 86400_000))),
      this.#name,
      spki,
      ctx(3, seq(
        ext('2.5.29.19', true, seq(bool(true), int(0))), // basicConstraints: CA, pathLen 0
        ext('2.5.29.15', true, bits(Buffer.from([0x06]), 1)), // keyUsage: keyCertSign, cRLSign
        ext('2.5.29.14', false, octets(this.#aki)), // subjectKeyIdentifier
      )),
    );
    this.certPem = pem(sign(tbs, this.#key));
  }

  /** A leaf for one canonical host (cached per run); null for a host no certificate may name. */
  leaf(host: string): LeafCert | null {
    const hit = this.#leaves.get(host);
    if (hit) return hit;
    const entry = san(host);
    if (!entry) return null;
    const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const spki = publicKey.export({ type: 'spki', format: 'der' });
    const t = this.#now();
    const tbs = seq(
      ctx(0, int(2)),
      int(serial()),
      ECDSA_SHA256,
      this.#name,
      seq(time(new Date(t - 3600_000)), time(new Date(t + 86400_000))),
      name(host.slice(0, 64)),
      spki,
      ctx(3, seq(
        ext('2.5.29.19', true, seq()), // basicConstraints: not a CA
        ext('2.5.29.15', true, bits(Buffer.from([0x80]), 7)), // keyUsage: digitalSignature
        ext('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))), // extKeyUsage: serverAuth
        ext('2.5.29.17', false, seq(entry)), // subjectAltName: exactly this host
        ext('2.5.29.14', false, octets(keyId(spki))),
        ext('2.5.29.35', false, seq(tlv(0x80, this.#aki))), // authorityKeyIdentifier [0] keyIdentifier
      )),
    );
    const leaf = { key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, cert: pem(sign(tbs, this.#key)) };
    this.#leaves.set(host, leaf);
    return leaf;
  }
}
