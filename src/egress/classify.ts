/**
 * The class of an address the gate resolved (or was given as a literal): only `global` and, for
 * tests, `test_public` and the operator's `allowed_private` are ever dialled.
 *
 * Guarantees: an IPv6 address that embeds an IPv4 one (IPv4-mapped ::ffff:0:0/96,
 * IPv4-compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32) is judged by the
 * IPv4 it carries (Teredo's client address, XOR-ed); unspecified, loopback, private (RFC 1918,
 * ULA, site-local), link-local, CGNAT, metadata endpoints (169.254.169.254, 168.63.129.16,
 * 100.100.100.200, fd00:ec2::254, …), multicast, broadcast, documentation and other reserved
 * ranges, every address of this host's interfaces and the operator's denyCidrs are refused.
 * `testPublicCidrs` (operator-only, inside 127.0.0.0/8 only: config refuses the rest) lets a
 * test's loopback upstreams count as public. Threat: a name resolving (or a literal spelled) to
 * somewhere inside. Fails closed: an address that does not parse is `reserved`. Pure but for
 * the interface list it is given.
 */
import type { EgressAddressClass } from '../protocol/index.js';
import { addressBytes, cidrContains, parseCidr, type Cidr } from '../lease/index.js';

const table = (rows: [string, EgressAddressClass][]): [Cidr, EgressAddressClass][] => rows.map(([c, k]) => [parseCidr(c)!, k]);

/** Checked in order: the first match decides. Metadata before the wider range that holds it. */
const V4 = table([
  ['169.254.169.254/32', 'metadata'],
  ['168.63.129.16/32', 'metadata'],
  ['100.100.100.200/32', 'metadata'],
  ['192.0.0.192/32', 'metadata'],
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link_local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'reserved'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'], // 255.255.255.255 included
]);
const V6 = table([
  ['fd00:ec2::254/128', 'metadata'],
  ['fd20:ce::254/128', 'metadata'],
  ['fd00:c1::a9fe:a9fe/128', 'metadata'],
  ['fd00:42::42/128', 'metadata'],
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['64:ff9b:1::/48', 'reserved'],
  ['100::/64', 'reserved'],
  ['2001:db8::/32', 'documentation'],
  ['2001:10::/28', 'reserved'],
  ['2001:20::/28', 'reserved'],
  ['fc00::/7', 'private'],
  ['fe80::/10', 'link_local'],
  ['fec0::/10', 'private'],
  ['ff00::/8', 'multicast'],
]);

export interface ClassifyOptions {
  /** Every address of this host's interfaces (os.networkInterfaces()). */
  hostAddresses: readonly string[];
  /** Operator: refused besides brig's table. */
  denyCidrs: readonly Cidr[];
  /** Operator: private ranges allowed (intranet hosts). Never loopback, metadata or the host's own. */
  allowPrivateCidrs: readonly Cidr[];
  /** Operator, tests only: loopback addresses treated as public (inside 127.0.0.0/8). */
  testPublicCidrs: readonly Cidr[];
}

const v4text = (b: readonly number[], at: number) => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;

/** The IPv4 address an IPv6 one carries (mapped, compatible, NAT64, 6to4, Teredo), else null. */
export function embeddedIPv4(addr: string): string | null {
  const ab = addressBytes(addr);
  if (!ab || ab.v !== 6) return null;
  const b = ab.bytes;
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return v4text(b, 12); // ::ffff:a.b.c.d
  if (zero(0, 12) && !zero(12, 16) && !(zero(12, 15) && b[15] === 1)) return v4text(b, 12); // ::a.b.c.d (deprecated compatible)
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return v4text(b, 12); // 64:ff9b::/96
  if (b[0] === 0x20 && b[1] === 0x02) return v4text(b, 2); // 2002:a.b.c.d::/16
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0 && b[3] === 0) return b.slice(12, 16).map((x) => x ^ 0xff).join('.'); // Teredo client
  return null;
}

function inTable(rows: readonly [Cidr, EgressAddressClass][], addr: string): EgressAddressClass | null {
  for (const [c, k] of rows) if (cidrContains(c, addr)) return k;
  return null;
}

/** See the header. */
export function classifyAddress(addr: string, o: ClassifyOptions): EgressAddressClass {
  const ab = addressBytes(addr);
  if (!ab) return 'reserved';
  if (o.hostAddresses.some((h) => h === addr)) return 'host_own';
  if (o.denyCidrs.some((c) => cidrContains(c, addr))) return 'operator_denied';
  if (ab.v === 4) {
    if (o.testPublicCidrs.some((c) => cidrContains(c, addr))) return 'test_public';
    const k = inTable(V4, addr);
    if (k === null) return 'global';
    if (k === 'private' && o.allowPrivateCidrs.some((c) => cidrContains(c, addr))) return 'allowed_private';
    return k;
  }
  const inner = embeddedIPv4(addr);
  if (inner !== null) {
    const k = classifyAddress(inner, o);
    // An embedded loopback test address is never "public": only a plain IPv4 one is.
    return k === 'test_public' ? 'loopback' : k;
  }
  const k = inTable(V6, addr);
  if (k === null) return ((ab.bytes[0]! & 0xe0) === 0x20 ? 'global' : 'reserved'); // 2000::/3 is the global unicast space
  if (k === 'private' && o.allowPrivateCidrs.some((c) => cidrContains(c, addr))) return 'allowed_private';
  return k;
}

export const DIALLABLE: ReadonlySet<EgressAddressClass> = new Set(['global', 'test_public', 'allowed_private']);
