/**
 * Egress host names, strictly: one canonical spelling per host, or a refusal.
 *
 * Guarantees: a name is plain lower-case ASCII letters, digits, `-` and `_` in labels of 1–63
 * (at most 253 in all, one trailing dot dropped); anything that parses as an IPv4 address by
 * any inet_aton spelling (`2130706433`, `0x7f.1`, `127.1`, `0177.0.0.1`) is that IPv4 literal,
 * and a name whose last label is numeric but no address is refused (the WHATWG URL parser does
 * the same), so a literal can never pass as a name; IPv6 only in brackets, without a zone;
 * non-ASCII, percent-encoded, empty labels, two trailing dots, `*` are refused — never mapped
 * to ASCII or decoded. Threat: a child spelling a host so that the rule match sees one name
 * and the resolver or the dial another (fullwidth dots, `%2e`, numeric forms, a trailing dot).
 * Trusts: nothing. Fails closed: anything unusual is `null` (the gate's `bad_host`). Pure.
 */

export type CanonHost = { kind: 'name'; name: string } | { kind: 'ipv4'; addr: string } | { kind: 'ipv6'; addr: string };

const NAME_CHARS = /^[A-Za-z0-9._-]+$/;
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** One inet_aton part: decimal, `0x` hex, or `0`-led octal. */
function inetPart(p: string): number | null {
  if (p === '') return null;
  let n: number;
  if (/^0x[0-9a-f]*$/i.test(p)) n = p.length === 2 ? 0 : parseInt(p.slice(2), 16);
  else if (/^0[0-7]+$/.test(p)) n = parseInt(p.slice(1), 8);
  else if (/^(0|[1-9][0-9]*)$/.test(p)) n = Number(p);
  else return null;
  return Number.isSafeInteger(n) ? n : null;
}

/** Any inet_aton spelling of an IPv4 address → dotted quad; else null. */
export function parseIPv4(s: string): string | null {
  const parts = s.split('.');
  if (parts.length === 0 || parts.length > 4) return null;
  const nums = parts.map(inetPart);
  if (nums.some((n) => n === null)) return null;
  const ns = nums as number[];
  const last = ns[ns.length - 1]!;
  const head = ns.slice(0, -1);
  if (head.some((n) => n > 255) || last >= 256 ** (5 - ns.length)) return null;
  let v = last;
  head.forEach((n, i) => (v += n * 256 ** (3 - i)));
  return [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join('.');
}

/** The strict dotted quad only (what a rule or an operator writes). */
export function isDottedQuad(s: string): boolean {
  return /^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$/.test(s);
}

/** An IPv6 address (no brackets, no zone) → its eight 16-bit groups; else null. */
export function parseIPv6(s: string): number[] | null {
  if (!/^[0-9A-Fa-f:.]+$/.test(s) || s.length > 45) return null;
  let text = s;
  if (s.includes('.')) {
    // A dotted tail (`::ffff:1.2.3.4`) is two groups written as an IPv4 address.
    const at = s.lastIndexOf(':');
    const v4 = s.slice(at + 1);
    if (at < 0 || !isDottedQuad(v4)) return null;
    const b = v4.split('.').map(Number);
    text = `${s.slice(0, at + 1)}${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const groups = (h: string): number[] | null => {
    if (h === '') return [];
    const out: number[] = [];
    for (const g of h.split(':')) {
      if (!/^[0-9A-Fa-f]{1,4}$/.test(g)) return null;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const a = groups(halves[0]!);
  const b = halves.length === 2 ? groups(halves[1]!) : [];
  if (!a || !b) return null;
  if (halves.length === 1) return a.length === 8 ? a : null;
  // `::` stands for at least one zero group.
  if (a.length + b.length > 7) return null;
  return [...a, ...new Array<number>(8 - a.length - b.length).fill(0), ...b];
}

/** RFC 5952 text of eight groups: lower case, the longest run of ≥ 2 zero groups as `::`. */
export function formatIPv6(g: readonly number[]): string {
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** A host as a request spells it (no port): a name, an IPv4 in any spelling, `[IPv6]`. */
export function canonicalHost(raw: string): CanonHost | null {
  if (raw.startsWith('[')) {
    if (!raw.endsWith(']')) return null;
    const g = parseIPv6(raw.slice(1, -1));
    return g ? { kind: 'ipv6', addr: formatIPv6(g) } : null;
  }
  if (raw.length === 0 || raw.length > 254 || !NAME_CHARS.test(raw)) return null;
  const text = (raw.endsWith('.') ? raw.slice(0, -1) : raw).toLowerCase();
  const labels = text.split('.');
  const last = labels[labels.length - 1]!;
  // The WHATWG "ends in a number" rule: such a host is an IPv4 address or nothing.
  if (/^[0-9]+$/.test(last) || /^0x[0-9a-f]*$/.test(last)) {
    const v4 = parseIPv4(text);
    return v4 ? { kind: 'ipv4', addr: v4 } : null;
  }
  if (text.length > 253 || !labels.every((l) => LABEL.test(l))) return null;
  return { kind: 'name', name: text };
}

/** `host:port` (CONNECT's authority form, or a Host header with `defaultPort`) → host and port; null when malformed. */
export function parseAuthority(raw: string, defaultPort?: number): { host: CanonHost; port: number } | null {
  if (raw.length === 0 || raw.length > 300) return null;
  let hostText: string;
  let portText: string | undefined;
  if (raw.startsWith('[')) {
    const close = raw.indexOf(']');
    if (close < 0) return null;
    hostText = raw.slice(0, close + 1);
    const rest = raw.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) return null;
    portText = rest === '' ? undefined : rest.slice(1);
  } else {
    const parts = raw.split(':');
    if (parts.length > 2) return null; // an unbracketed IPv6: host and port cannot be told apart
    hostText = parts[0]!;
    portText = parts[1];
  }
  let port: number;
  if (portText === undefined) {
    if (defaultPort === undefined) return null;
    port = defaultPort;
  } else {
    if (!/^[1-9][0-9]{0,4}$/.test(portText)) return null;
    port = Number(portText);
    if (port > 65535) return null;
  }
  const host = canonicalHost(hostText);
  return host ? { host, port } : null;
}

/** The text of a canonical host: a name or an address (an IPv6 without brackets). */
export function hostText(h: CanonHost): string {
  return h.kind === 'name' ? h.name : h.addr;
}

/** An address range as an operator writes it (`10.0.0.0/8`, `fd00::/8`, or one address); null when malformed. */
export interface Cidr {
  v: 4 | 6;
  /** The address as 16 bytes (IPv4 as ::ffff:a.b.c.d) and how many leading bits count (of the 128). */
  bytes: number[];
  bits: number;
}

export function addressBytes(addr: string): { v: 4 | 6; bytes: number[] } | null {
  if (isDottedQuad(addr)) return { v: 4, bytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...addr.split('.').map(Number)] };
  const g = parseIPv6(addr);
  return g ? { v: 6, bytes: g.flatMap((x) => [x >> 8, x & 255]) } : null;
}

export function parseCidr(text: string): Cidr | null {
  const [a, len, extra] = text.split('/');
  if (a === undefined || extra !== undefined) return null;
  const ab = addressBytes(a);
  if (!ab) return null;
  const max = ab.v === 4 ? 32 : 128;
  if (len !== undefined && !/^(0|[1-9][0-9]{0,2})$/.test(len)) return null;
  const n = len === undefined ? max : Number(len);
  if (n > max) return null;
  return { v: ab.v, bytes: ab.bytes, bits: ab.v === 4 ? 96 + n : n };
}

/** Whether an address (dotted quad or IPv6 text) lies in the range. An IPv4 range never holds an IPv6 address, nor the reverse. */
export function cidrContains(c: Cidr, addr: string): boolean {
  const ab = addressBytes(addr);
  if (!ab || ab.v !== c.v) return false;
  for (let bit = 0; bit < c.bits; bit++) {
    const i = bit >> 3;
    const m = 0x80 >> (bit & 7);
    if ((ab.bytes[i]! & m) !== (c.bytes[i]! & m)) return false;
  }
  return true;
}
