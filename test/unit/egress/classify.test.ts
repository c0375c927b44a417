import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classifyAddress, embeddedIPv4, readFirstBytes } from '../../../src/egress/index.js';
import { DEFAULT_EGRESS_BUDGETS, decideEgress, parseCidr } from '../../../src/lease/index.js';

const opts = { hostAddresses: ['192.0.2.77', '2001:4860::77'], denyCidrs: [parseCidr('8.8.4.0/24')!], allowPrivateCidrs: [parseCidr('10.1.0.0/16')!], testPublicCidrs: [parseCidr('127.0.0.2/31')!] };

test('classify: every embedded IPv4 form is judged by the address it carries; only global unicast is public', () => {
  const cases: [string, string][] = [
    ['8.8.8.8', 'global'], ['1.1.1.1', 'global'], ['2606:4700::1111', 'global'],
    ['10.0.0.5', 'private'], ['10.1.2.3', 'allowed_private'], ['172.16.0.1', 'private'], ['192.168.1.1', 'private'],
    ['127.0.0.1', 'loopback'], ['127.0.0.2', 'test_public'], ['127.0.0.3', 'test_public'], ['127.0.0.4', 'loopback'], ['::1', 'loopback'],
    ['0.0.0.0', 'unspecified'], ['::', 'unspecified'], ['169.254.169.254', 'metadata'], ['169.254.1.1', 'link_local'], ['fe80::1', 'link_local'],
    ['100.64.0.1', 'cgnat'], ['100.100.100.200', 'metadata'], ['168.63.129.16', 'metadata'], ['fd00:ec2::254', 'metadata'],
    ['224.0.0.1', 'multicast'], ['255.255.255.255', 'reserved'], ['ff02::1', 'multicast'], ['fc00::1', 'private'], ['fd12::1', 'private'],
    ['::ffff:169.254.169.254', 'metadata'], ['::ffff:a9fe:a9fe', 'metadata'], ['64:ff9b::a9fe:a9fe', 'metadata'], ['64:ff9b::a00:5', 'private'],
    ['2002:a00:5::1', 'private'], ['2002:7f00:1::', 'loopback'], ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'private'], // Teredo client 10.0.0.1
    ['::ffff:127.0.0.2', 'loopback'], // a test-public address is public only spelled as plain IPv4
    ['192.0.2.77', 'host_own'], ['2001:4860::77', 'host_own'], ['8.8.4.4', 'operator_denied'], ['2001:db8::1', 'documentation'], ['203.0.113.9', 'documentation'],
    ['not-an-ip', 'reserved'],
  ];
  for (const [a, want] of cases) assert.equal(classifyAddress(a, opts), want, a);
  assert.equal(embeddedIPv4('2606:4700::1111'), null);
});

test('first bytes: plain HTTP, a truncated or malformed record, not TLS', () => {
  assert.deepEqual(readFirstBytes(Buffer.from('GET / HTTP/1.1\r\n')), { kind: 'http' });
  assert.deepEqual(readFirstBytes(Buffer.from([0x16, 3, 1, 0, 200, 1])), { kind: 'need_more' });
  assert.deepEqual(readFirstBytes(Buffer.from([0x16, 3, 1, 0, 4, 2, 0, 0, 0])), { kind: 'not_tls' });
  assert.deepEqual(readFirstBytes(Buffer.from([0x00, 1, 2, 3, 4, 5, 6, 7, 8])), { kind: 'not_tls' });
});

/** A minimal TLS 1.2/1.3-shaped ClientHello record with the given extensions. */
function hello(exts: [number, Buffer][]): Buffer {
  const ext = Buffer.concat(exts.map(([t, b]) => Buffer.concat([Buffer.from([t >> 8, t & 255, b.length >> 8, b.length & 255]), b])));
  const body = Buffer.concat([Buffer.from([3, 3]), Buffer.alloc(32), Buffer.from([0]), Buffer.from([0, 2, 0x13, 0x01]), Buffer.from([1, 0]), Buffer.from([ext.length >> 8, ext.length & 255]), ext]);
  const hs = Buffer.concat([Buffer.from([1, 0, body.length >> 8, body.length & 255]), body]);
  return Buffer.concat([Buffer.from([0x16, 3, 1, hs.length >> 8, hs.length & 255]), hs]);
}
const sniExt = (name: string) => {
  const n = Buffer.from(name);
  return Buffer.concat([Buffer.from([(n.length + 3) >> 8, (n.length + 3) & 255, 0, n.length >> 8, n.length & 255]), n]);
};

test('first bytes: the SNI of a ClientHello, its absence, and Encrypted Client Hello (which the gate refuses)', () => {
  assert.deepEqual(readFirstBytes(hello([[0, sniExt('allowed.test')]])), { kind: 'tls', sni: 'allowed.test', ech: false });
  assert.deepEqual(readFirstBytes(hello([[10, Buffer.from([0, 2, 0, 29])]])), { kind: 'tls', sni: null, ech: false });
  assert.deepEqual(readFirstBytes(hello([[0, sniExt('cover.example')], [0xfe0d, Buffer.alloc(40, 1)]])), { kind: 'tls', sni: 'cover.example', ech: true });
  const cut = hello([[0, sniExt('allowed.test')]]);
  assert.deepEqual(readFirstBytes(cut.subarray(0, cut.length - 3)), { kind: 'need_more' });
  // And the one decision refuses ECH even when the outer SNI is the allowed name.
  const grant = { rules: [{ id: 'w', hosts: ['allowed.test'], ports: [443], scheme: 'https' as const, tls: 'tunnel' as const, websocket: false }], budgets: { ...DEFAULT_EGRESS_BUDGETS } };
  const d = decideEgress(grant, { denyHosts: [] }, { authority: 'allowed.test:443', via: 'connect', first: { kind: 'tls', sni: 'allowed.test', ech: true } });
  assert.equal(d.allow ? 'allowed' : d.reason, 'ech_refused');
});
