import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bindingCovers, carried, leakNeedles, maskText, NeedleScan, placeholderFor, type EgressCredential } from '../../../src/egress/credentials.js';
import { canonicalHost } from '../../../src/lease/index.js';

const host = (h: string) => canonicalHost(h)!;
const binding = (o: Partial<EgressCredential> = {}): EgressCredential => ({ name: 'gh', header: 'authorization', format: 'token {}', hosts: ['api.github.com', '*.gh.example'], paths: ['/repos/'], placeholderEnv: 'GH_TOKEN', secret: () => 'secret-value-123', ...o });

test('a binding covers its hosts (wildcards as in rules) and its path prefixes, the query left out', () => {
  const b = binding();
  assert.equal(bindingCovers(b, host('api.github.com'), '/repos/x?a=1'), true);
  assert.equal(bindingCovers(b, host('a.gh.example'), '/repos/'), true);
  assert.equal(bindingCovers(b, host('gh.example'), '/repos/'), false, 'a wildcard never covers its suffix');
  assert.equal(bindingCovers(b, host('api.github.com'), '/user'), false);
  assert.equal(bindingCovers(b, host('api.github.com')), true, 'no path: the host alone');
  assert.equal(bindingCovers(b, host('API.GITHUB.COM.'), '/repos/'), true, 'canonical names');
});

test('leak needles: every binding not covering the host gives its secret and the run’s placeholder; a short secret is not scanned', () => {
  const all = { gh: binding(), short: binding({ name: 'short', hosts: ['s.example'], placeholderEnv: undefined, secret: () => 'abc' }) };
  const toOther = leakNeedles(all, 'r-1', host('evil.example')).map((n) => `${n.binding}:${n.needle}`);
  assert.deepEqual(toOther, ['gh:secret-value-123', `gh:${placeholderFor(all.gh, 'r-1')}`]);
  assert.deepEqual(leakNeedles(all, 'r-1', host('api.github.com')).length, 0, 'the covered host: none of gh, and short has nothing scannable');
});

test('carried: a needle in a header value, a header name, the target or its percent-decoded form', () => {
  const n = [{ binding: 'gh', needle: Buffer.from('secret-value-123') }];
  assert.equal(carried(n, { 'x-a': 'v secret-value-123' }, '/'), 'gh');
  assert.equal(carried(n, { 'secret-value-123': 'v' }, '/'), 'gh');
  assert.equal(carried(n, { a: ['x', 'secret-value-123'] }, '/'), 'gh');
  assert.equal(carried(n, {}, '/p?q=secret%2Dvalue%2D123'), 'gh');
  assert.equal(carried(n, {}, '/p?q=secret+value'), undefined);
  assert.equal(carried([], { a: 'secret-value-123' }, '/'), undefined);
});

test('NeedleScan: a needle split over chunks is found, nothing of it passed on; a clean stream passes whole, in order', () => {
  const needle = Buffer.from('NEEDLE-0123');
  const s = new NeedleScan([needle]);
  const a = s.push(Buffer.from('hello world NEED'));
  assert.equal(a!.toString(), 'hello world ', 'holds back only what could begin the needle');
  assert.equal(s.push(Buffer.from('LE-0123 world')), null);
  assert.equal(s.foundAt, 0);
  const clean = new NeedleScan([needle]);
  const parts = ['a'.repeat(5), 'NEEDLE-012', 'x', 'NEEDLE', '-01', '2'].map((p) => clean.push(Buffer.from(p)));
  assert.ok(parts.every((p) => p !== null));
  assert.equal(Buffer.concat([...(parts as Buffer[]), clean.end()]).toString(), 'aaaaaNEEDLE-012xNEEDLE-012');
  assert.equal(new NeedleScan([]).empty, true);
  // A stream that pauses on bytes no needle begins with has nothing held (a websocket frame is not delayed).
  const ws = new NeedleScan([needle], { mask: true });
  assert.equal(ws.push(Buffer.from('{"msg":"hi"}'))!.toString(), '{"msg":"hi"}');
  assert.equal(ws.push(Buffer.from('x NEE'))!.toString(), 'x ', 'a possible start is held');
  assert.equal(ws.push(Buffer.from('DLE-0123!'))!.toString(), '***********!');
});

test('NeedleScan with mask: every copy masked to the same length, across chunks; maskText the same for a header', () => {
  const s = new NeedleScan([Buffer.from('tok-SECRET')], { mask: true });
  const out = Buffer.concat([s.push(Buffer.from('a tok-SEC'))!, s.push(Buffer.from('RET b tok-SECRET'))!, s.push(Buffer.from(' c'))!, s.end()]).toString();
  assert.equal(out, 'a ********** b ********** c');
  assert.equal(s.found, 2);
  assert.equal(maskText('token tok-SECRET, tok-SECRET', [Buffer.from('tok-SECRET')]), 'token **********, **********');
});

test('placeholderFor: brig-placeholder- and 40 hex, the same for the same run and secret, never the secret', () => {
  const b = binding();
  assert.match(placeholderFor(b, 'r-1'), /^brig-placeholder-[0-9a-f]{40}$/);
  assert.equal(placeholderFor(b, 'r-1'), placeholderFor(binding(), 'r-1'));
  assert.notEqual(placeholderFor(b, 'r-1'), placeholderFor(b, 'r-2'));
  assert.notEqual(placeholderFor(b, 'r-1'), placeholderFor(binding({ secret: () => 'another-secret' }), 'r-1'));
});
