import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { attenuate } from '../../../src/lease/attenuate.js';
import { attenuateEgress, DEFAULT_EGRESS_BUDGETS, egressWithin, normalizeRule } from '../../../src/lease/egress-attenuate.js';
import { decideEgress, type EgressQuery } from '../../../src/lease/egress-decide.js';
import { canonicalHost, cidrContains, parseAuthority, parseCidr } from '../../../src/lease/egress-host.js';
import { MULTI_TENANT_SUFFIXES, patternProblem, ruleWithin } from '../../../src/lease/egress-rules.js';
import { EGRESS_METHODS, type EgressAsk, type EgressGrant, type EgressRule, type EgressRuleAsk } from '../../../src/protocol/index.js';
import { STRICTEST_POSTURE, type Grant } from '../../../src/lease/types.js';
import { explainPolicy, parsePolicy } from '../../../src/lease/index.js';

const NOPOL = { denyHosts: [] };
const rule = (r: Partial<EgressRule> & { hosts: string[] }): EgressRule => {
  const n = normalizeRule(r);
  if (typeof n === 'string') throw new Error(n);
  return { id: r.id ?? 'r', ...n };
};
const grant = (...rules: EgressRule[]): EgressGrant => ({ rules, budgets: { ...DEFAULT_EGRESS_BUDGETS } });
const connect = (authority: string, first?: EgressQuery['first'], request?: EgressQuery['request']): EgressQuery => ({ authority, via: 'connect', first, request });
const why = (d: ReturnType<typeof decideEgress>) => (d.allow ? `allow:${d.mode}` : d.reason);

test('host spellings: one canonical form, every IPv4 spelling is a literal, the rest refused', () => {
  const cases: [string, string | null][] = [
    ['allowed.test', 'name:allowed.test'],
    ['ALLOWED.Test.', 'name:allowed.test'],
    ['allowed.test..', null],
    ['2130706433', 'ipv4:127.0.0.1'],
    ['0x7f.1', 'ipv4:127.0.0.1'],
    ['127.1', 'ipv4:127.0.0.1'],
    ['0177.0.0.1', 'ipv4:127.0.0.1'],
    ['0x7f000001', 'ipv4:127.0.0.1'],
    ['foo.0x7f', null], // ends in a number, is no address
    ['1.2.3.256', null],
    ['a%2eb.test', null],
    ['ａllowed.test', null], // fullwidth
    ['allowed。test', null], // ideographic full stop
    ['xn--nxasmq6b.test', 'name:xn--nxasmq6b.test'],
    ['-a.test', null],
    ['*.a.test', null],
    ['', null],
    ['[::ffff:169.254.169.254]', 'ipv6:::ffff:a9fe:a9fe'],
    ['[2001:DB8:0:0:0:0:0:1]', 'ipv6:2001:db8::1'],
    ['[fe80::1%25eth0]', null],
    ['[1::2::3]', null],
  ];
  for (const [raw, want] of cases) {
    const h = canonicalHost(raw);
    assert.equal(h ? `${h.kind}:${h.kind === 'name' ? h.name : h.addr}` : null, want, raw);
  }
  assert.equal(parseAuthority('::1:443'), null, 'an unbracketed IPv6 cannot carry a port');
  assert.equal(parseAuthority('a.test:0443'), null);
  assert.equal(parseAuthority('a.test'), null, 'CONNECT needs a port');
  assert.deepEqual(parseAuthority('a.test', 80)?.port, 80);
});

test('rule patterns: leftmost wildcards over two labels or more, never over a multi-tenant suffix', () => {
  assert.equal(patternProblem('*.example.com', MULTI_TENANT_SUFFIXES), null);
  assert.match(patternProblem('*.com', MULTI_TENANT_SUFFIXES)!, /two labels/);
  assert.match(patternProblem('*', MULTI_TENANT_SUFFIXES)!, /leftmost/);
  assert.match(patternProblem('a.*.com', MULTI_TENANT_SUFFIXES)!, /leftmost/);
  assert.match(patternProblem('*.github.io', MULTI_TENANT_SUFFIXES)!, /multi-tenant/);
  assert.match(patternProblem('*.s3.amazonaws.com', MULTI_TENANT_SUFFIXES)!, /multi-tenant/);
  assert.equal(patternProblem('acme.github.io', MULTI_TENANT_SUFFIXES), null, 'an exact name under one is fine');
  assert.match(patternProblem('Example.com', MULTI_TENANT_SUFFIXES)!, /canonical/);
  assert.equal(patternProblem('203.0.113.5', MULTI_TENANT_SUFFIXES), null);
  assert.match(patternProblem('0x7f.1', MULTI_TENANT_SUFFIXES)!, /canonical/);
  assert.match(normalizeRule({ hosts: ['*.a.test'], scheme: 'tcp', ports: [22] }) as string, /exact hosts/);
  assert.match(normalizeRule({ hosts: ['a.test'], methods: ['GET'] }) as string, /inspect/);
  assert.match(normalizeRule({ hosts: ['a.test'], credential: 'x' }) as string, /inspect/);
});

test('decide: the host, then the port, then the traffic; odd spellings match IP rules only', () => {
  const g = grant(rule({ id: 'web', hosts: ['allowed.test', '*.pkgs.test'], ports: [443, 8443] }), rule({ id: 'ip', hosts: ['203.0.113.5'], ports: [443] }));
  assert.equal(why(decideEgress(g, NOPOL, connect('allowed.test:443'))), 'allow:pending');
  assert.equal(why(decideEgress(g, NOPOL, connect('ALLOWED.test.:8443'))), 'allow:pending');
  assert.equal(why(decideEgress(g, NOPOL, connect('a.pkgs.test:443'))), 'allow:pending');
  assert.equal(why(decideEgress(g, NOPOL, connect('pkgs.test:443'))), 'host_not_allowed', 'a wildcard never covers its suffix');
  assert.equal(why(decideEgress(g, NOPOL, connect('denied.test:443'))), 'host_not_allowed');
  assert.equal(why(decideEgress(g, NOPOL, connect('allowed.test:22'))), 'port_not_allowed');
  assert.equal(why(decideEgress(g, NOPOL, connect('allowed.test'))), 'bad_request');
  for (const odd of ['2130706433:443', '0x7f.1:443', '127.1:443', '[::ffff:7f00:1]:443', '3405803782:443']) {
    assert.equal(why(decideEgress(g, NOPOL, connect(odd))), 'host_not_allowed', odd);
  }
  assert.equal(why(decideEgress(g, NOPOL, connect('203.0.113.5:443'))), 'allow:pending');
  assert.equal(why(decideEgress(g, NOPOL, connect('0xcb.0.113.5:443'))), 'allow:pending', 'an IP rule matches every spelling of its address');
  for (const bad of ['a%2etest:443', 'ａllowed.test:443', 'allowed.test..:443', '[fe80::1%eth0]:443']) {
    assert.equal(why(decideEgress(g, NOPOL, connect(bad))), 'bad_host', bad);
  }
  assert.equal(why(decideEgress(g, { denyHosts: ['*.pkgs.test'] }, connect('a.pkgs.test:443'))), 'host_denied');
  assert.equal(why(decideEgress(undefined, NOPOL, connect('allowed.test:443'))), 'host_not_allowed', 'no grant: nothing');
});

test('decide: a tunnel needs a ClientHello naming the CONNECT host, without ECH', () => {
  const g = grant(rule({ id: 'web', hosts: ['allowed.test'] }), rule({ id: 'ip', hosts: ['203.0.113.5'] }));
  const tls = (sni: string | null, ech = false) => ({ kind: 'tls' as const, sni, ech });
  assert.equal(why(decideEgress(g, NOPOL, connect('allowed.test:443', tls('allowed.test')))), 'allow:tunnel');
  assert.equal(why(decideEgress(g, NOPOL, connect('allowed.test:443', tls('Allowed.Test.')))), 'allow:tunnel');
  assert.equal(why(decideEgress(g, NOPOL, connect('allowed.test:443', tls('denied.test')))), 'sni_mismatch');
  assert.equal(why(decideEgress(g, NOPOL, connect('allowed.test:443', tls(null)))), 'no_sni');
  assert.equal(why(decideEgress(g, NOPOL, connect('allowed.test:443', tls('allowed.test', true)))), 'ech_refused');
  assert.equal(why(decideEgress(g, NOPOL, connect('allowed.test:443', { kind: 'http' }))), 'scheme_not_allowed');
  assert.equal(why(decideEgress(g, NOPOL, connect('203.0.113.5:443', tls(null)))), 'allow:tunnel', 'an IP literal carries no SNI');
  assert.equal(why(decideEgress(g, NOPOL, connect('203.0.113.5:443', tls('allowed.test')))), 'sni_mismatch');
});

test('decide: inspected requests — Host, method, path, upgrades; TRACE never', () => {
  const g = grant(rule({ id: 'gh', hosts: ['api.gh.test'], tls: 'inspect', methods: ['GET', 'HEAD'], paths: ['/repos/acme/'] }));
  const hello = { kind: 'tls' as const, sni: 'api.gh.test', ech: false };
  const req = (method: string, path: string, hostHeader: string | null = 'api.gh.test', upgrade?: string) => decideEgress(g, NOPOL, connect('api.gh.test:443', hello, { method, path, hostHeader: hostHeader ?? undefined, upgrade }));
  assert.equal(why(decideEgress(g, NOPOL, connect('api.gh.test:443', hello))), 'allow:inspect');
  assert.equal(why(req('GET', '/repos/acme/widgets')), 'allow:inspect');
  assert.equal(why(req('GET', '/repos/acme/widgets', 'api.gh.test:443')), 'allow:inspect');
  assert.equal(why(req('POST', '/repos/acme/widgets')), 'method_not_allowed');
  assert.equal(why(req('TRACE', '/repos/acme/')), 'method_not_allowed');
  assert.equal(why(req('get', '/repos/acme/')), 'method_not_allowed');
  assert.equal(why(req('GET', '/repos/other/')), 'path_not_allowed');
  assert.equal(why(req('GET', '/repos/acme/../other/x')), 'path_not_allowed');
  assert.equal(why(req('GET', '/repos/acme/%2e%2e/other')), 'path_not_allowed');
  assert.equal(why(req('GET', '/repos/acme%2fx')), 'path_not_allowed');
  assert.equal(why(req('GET', 'http://api.gh.test/repos/acme/')), 'path_not_allowed');
  assert.equal(why(req('GET', '/repos/acme/x', 'other.test')), 'host_mismatch');
  assert.equal(why(req('GET', '/repos/acme/x', null)), 'host_mismatch');
  assert.equal(why(req('GET', '/repos/acme/x', 'api.gh.test:8443')), 'host_mismatch');
  assert.equal(why(req('GET', '/repos/acme/x', 'api.gh.test', 'h2c')), 'upgrade_refused');
  assert.equal(why(req('GET', '/repos/acme/x', 'api.gh.test', 'websocket')), 'upgrade_refused');
  const ws = grant(rule({ id: 'ws', hosts: ['api.gh.test'], tls: 'inspect', websocket: true }));
  assert.equal(why(decideEgress(ws, NOPOL, connect('api.gh.test:443', hello, { method: 'GET', path: '/', hostHeader: 'api.gh.test', upgrade: 'websocket' }))), 'allow:inspect');
  assert.equal(why(decideEgress(ws, NOPOL, connect('api.gh.test:443', hello, { method: 'GET', path: '/', hostHeader: 'api.gh.test', upgrade: 'h2c' }))), 'upgrade_refused');
});

test('decide: plain http absolute-form and opaque tcp', () => {
  const g = grant(rule({ id: 'plain', hosts: ['mirror.test'], scheme: 'http' }), rule({ id: 'ssh', hosts: ['git.test'], scheme: 'tcp', ports: [22] }));
  const abs = (authority: string, method = 'GET', path = '/', hostHeader: string | undefined = authority) => decideEgress(g, NOPOL, { authority, via: 'absolute', request: { method, path, hostHeader, upgrade: undefined } });
  assert.equal(why(abs('mirror.test')), 'allow:plain');
  assert.equal(why(abs('mirror.test:80')), 'allow:plain');
  assert.equal(why(abs('mirror.test', 'GET', '/', 'other.test')), 'host_mismatch');
  assert.equal(why(abs('git.test:22')), 'allow:plain');
  assert.equal(why(decideEgress(g, NOPOL, connect('git.test:22', { kind: 'tls', sni: null, ech: false }))), 'allow:raw');
  assert.equal(why(decideEgress(g, NOPOL, connect('mirror.test:80', { kind: 'http' }, { method: 'GET', path: '/x', hostHeader: 'mirror.test', upgrade: undefined }))), 'allow:plain');
  assert.equal(why(decideEgress(g, NOPOL, connect('mirror.test:80', { kind: 'tls', sni: 'mirror.test', ech: false }))), 'scheme_not_allowed');
});

// -- attenuation ------------------------------------------------------------------------------

const NAMES = ['a.test', 'b.a.test', 'c.b.a.test', 'x.test', 'y.x.test'];
const PATTERNS = [...NAMES, '*.a.test', '*.b.a.test', '*.x.test', '203.0.113.5', '2001:db8::1'];
const patternArb = fc.constantFrom(...PATTERNS);
const portsArb = fc.subarray([22, 80, 443, 8443], { minLength: 1 });
const pathsArb = fc.option(fc.subarray(['/', '/a', '/a/b', '/b'], { minLength: 1 }), { nil: undefined });
const methodsArb = fc.option(fc.subarray([...EGRESS_METHODS], { minLength: 1 }), { nil: undefined });
const askObjArb: fc.Arbitrary<Exclude<EgressRuleAsk, string>> = fc
  .record({
    hosts: fc.uniqueArray(patternArb, { minLength: 1, maxLength: 3 }),
    ports: portsArb,
    scheme: fc.constantFrom('https' as const, 'http' as const, 'tcp' as const),
    tls: fc.constantFrom('tunnel' as const, 'inspect' as const),
    methods: methodsArb,
    paths: pathsArb,
    websocket: fc.boolean(),
    credential: fc.constantFrom(undefined, 'c1', 'c2'),
  })
  .map((a) => {
    // Shape it into a rule normalizeRule accepts: what a tunnel cannot see, it does not name.
    const sees = a.scheme === 'http' || (a.scheme === 'https' && a.tls === 'inspect');
    const hosts = a.scheme === 'tcp' ? a.hosts.filter((h) => !h.startsWith('*.')) : a.hosts;
    return {
      hosts: hosts.length > 0 ? hosts : ['a.test'],
      ports: a.ports,
      scheme: a.scheme,
      tls: a.tls,
      ...(sees && a.methods ? { methods: a.methods } : {}),
      ...(sees && a.paths ? { paths: a.paths } : {}),
      websocket: sees && a.websocket,
      ...(a.scheme === 'https' && a.tls === 'inspect' && a.credential ? { credential: a.credential } : {}),
    };
  });
const ruleArb: fc.Arbitrary<EgressRule> = fc.tuple(fc.constantFrom('r1', 'r2', 'r3'), askObjArb).map(([id, a]) => {
  const n = normalizeRule(a);
  if (typeof n === 'string') throw new Error(`arbitrary made an invalid rule: ${n}`);
  return { id, ...n };
});
const budgetsArb = fc.record({
  connections: fc.nat(300), concurrent: fc.nat(20), bytesUp: fc.nat(1 << 24), bytesDown: fc.nat(1 << 28),
  requestBodyMax: fc.nat(1 << 21), dnsNames: fc.nat(80), idleMs: fc.nat(120_000), lifetimeMs: fc.nat(1_200_000),
});
const grantArbE: fc.Arbitrary<EgressGrant> = fc.record({ rules: fc.array(ruleArb, { minLength: 1, maxLength: 4 }), budgets: budgetsArb });
const askArb: fc.Arbitrary<EgressAsk> = fc.record({
  rules: fc.array(fc.oneof(fc.constantFrom('r1', 'r2', 'r3', 'nope'), askObjArb), { minLength: 1, maxLength: 4 }),
  budgets: fc.option(budgetsArb.map((b) => ({ connections: b.connections, bytesUp: b.bytesUp })), { nil: undefined }),
});
const hostArb = fc.constantFrom(...NAMES, 'z.b.a.test', 'denied.test', '203.0.113.5', '[2001:db8::1]', '3405803781', 'A.TEST.');
const queryArb: fc.Arbitrary<EgressQuery> = fc.record({
  host: hostArb,
  port: fc.constantFrom(22, 80, 443, 8443),
  via: fc.constantFrom('connect' as const, 'absolute' as const),
  first: fc.option(fc.oneof(fc.record({ kind: fc.constant('tls' as const), sni: fc.option(hostArb.filter((h) => !h.startsWith('[')), { nil: null }), ech: fc.boolean() }), fc.constant({ kind: 'http' as const })), { nil: undefined }),
  request: fc.option(
    fc.record({
      method: fc.constantFrom(...EGRESS_METHODS, 'TRACE'),
      path: fc.constantFrom('/', '/a', '/a/b/c', '/b/x', '/a/../b', '/c'),
      hostHeader: fc.option(hostArb, { nil: undefined }),
      upgrade: fc.constantFrom(undefined, 'websocket', 'h2c'),
    }),
    { nil: undefined },
  ),
}).map((q) => ({ authority: `${q.host}:${q.port}`, via: q.via, first: q.via === 'connect' ? q.first : undefined, request: q.request && q.request.hostHeader !== undefined ? { ...q.request, hostHeader: q.request.hostHeader.startsWith('[') ? q.request.hostHeader : `${q.request.hostHeader}:${q.port}` } : q.request }));

// req: lease:egress-narrows
test('[INV-1] egress attenuation: every granted rule fits inside one parent rule, budgets never grow, ids are the parent\'s', () => {
  fc.assert(
    fc.property(grantArbE, grantArbE, askArb, (parent, profile, ask) => {
      const { egress, refused } = attenuateEgress(parent, profile, ask);
      assert.ok(egressWithin(egress, parent));
      assert.ok(egressWithin(egress, profile));
      for (const r of egress?.rules ?? []) {
        assert.ok(parent.rules.some((p) => p.id === r.id && ruleWithin(r, p)), `rule ${r.id} is not the id of a parent rule containing it`);
      }
      for (const x of refused) assert.ok(x.reason.length > 0);
    }),
    { numRuns: 2_000 },
  );
});

/** A rule asked inside `p`, chosen by `pick` (fc.gen's): a copy, or narrower hosts, ports, tls, methods, paths. */
function narrowed(p: EgressRule, pick: <T>(arb: fc.Arbitrary<T>) => T): EgressRuleAsk {
  if (pick(fc.boolean())) return p.id;
  const hosts = p.hosts.flatMap((h) => (h.startsWith('*.') ? [pick(fc.constantFrom(h, `q.${h.slice(2)}`, `*.q.${h.slice(2)}`))] : [h]));
  const sub = <T>(xs: readonly T[]) => pick(fc.subarray([...xs], { minLength: 1 }));
  const inspect = p.scheme === 'https' && (p.tls === 'inspect' || pick(fc.boolean()));
  const sees = p.scheme === 'http' || inspect;
  return {
    hosts: sub(hosts.filter((h) => p.scheme !== 'tcp' || !h.startsWith('*.'))),
    ports: sub(p.ports),
    scheme: p.scheme,
    tls: inspect ? 'inspect' : 'tunnel',
    ...(sees ? { methods: sub(p.methods ?? EGRESS_METHODS) } : {}),
    ...(sees && (p.paths || pick(fc.boolean())) ? { paths: (p.paths ?? ['/']).map((x) => x + pick(fc.constantFrom('', 'a', 'a/'))) } : {}),
    websocket: sees && p.websocket && pick(fc.boolean()),
    ...(p.credential && pick(fc.boolean()) ? { credential: p.credential } : {}),
  };
}

// req: lease:egress-narrows
test('[INV-1] a chain of egress attenuations never widens, and every connection a child is allowed its parent is allowed', () => {
  let allowedSeen = 0;
  fc.assert(
    fc.property(grantArbE, fc.gen(), fc.array(queryArb, { minLength: 12, maxLength: 12 }), (root, g, queries) => {
      const pick = <T>(arb: fc.Arbitrary<T>): T => g(() => arb);
      const chain: EgressGrant[] = [root];
      for (let step = 0; step < 6; step++) {
        const parent = chain[chain.length - 1]!;
        // Mostly narrowed copies of the parent's rules, sometimes a random (usually refused) one.
        const rules = pick(fc.array(fc.nat(parent.rules.length), { minLength: 1, maxLength: 3 })).map((i) => (i < parent.rules.length ? narrowed(parent.rules[i]!, pick) : pick(askObjArb)));
        const profile = pick(fc.boolean()) ? parent : pick(grantArbE);
        const next = attenuateEgress(parent, profile, { rules }).egress;
        if (!next) break;
        assert.ok(egressWithin(next, parent));
        assert.ok(egressWithin(next, root));
        chain.push(next);
      }
      // Besides the random queries, some aimed at the last child's own rules.
      const last = chain[chain.length - 1]!;
      const aimed: EgressQuery[] = last.rules.slice(0, 3).map((r) => {
        const h = pick(fc.constantFrom(...r.hosts));
        const host = h.startsWith('*.') ? `z.${h.slice(2)}` : h.includes(':') ? `[${h}]` : h;
        const port = pick(fc.constantFrom(...r.ports));
        const request = { method: pick(fc.constantFrom(...(r.methods ?? EGRESS_METHODS))), path: `${(r.paths ?? ['/'])[0]}x`, hostHeader: `${host}:${port}`, upgrade: undefined };
        const tls = r.scheme === 'https';
        const sni = host.startsWith('[') || /^[0-9.]+$/.test(host) ? null : host;
        return { authority: `${host}:${port}`, via: r.scheme === 'http' && pick(fc.boolean()) ? 'absolute' : 'connect', first: tls ? { kind: 'tls', sni, ech: false } : { kind: 'http' }, request };
      });
      for (let i = 1; i < chain.length; i++) {
        for (const q of [...queries, ...aimed]) {
          const child = decideEgress(chain[i], NOPOL, q);
          if (!child.allow) continue;
          allowedSeen++;
          for (let j = 0; j < i; j++) {
            const anc = decideEgress(chain[j], NOPOL, q);
            assert.ok(anc.allow, `allowed for the child (${child.mode}, ${child.rule.id}) but not an ancestor: ${anc.allow ? '' : anc.reason} — ${JSON.stringify(q)}`);
          }
        }
      }
    }),
    { numRuns: 1_000 },
  );
  // The property is only as good as the allowed connections it saw.
  assert.ok(allowedSeen > 1_000, `only ${allowedSeen} child-allowed connections were checked`);
});

// req: lease:egress-never-inherited
test('[INV-1] egress is never inherited: no ask, no rule, no net.egress, posture network none', () => {
  const g = grant(rule({ id: 'web', hosts: ['allowed.test'] }));
  const parent: Grant = {
    caps: ['exec', 'net.egress', 'spawn'],
    limits: { cpu: 1, memoryMb: 512, pids: 64, diskMb: 1024, timeoutMs: 60_000, maxSteps: 10, tokens: 100, costUsd: 1, resultBytes: 100, maxChildren: 2, maxDepth: 3 },
    posture: { ...STRICTEST_POSTURE, network: 'egress' },
    egress: g,
  };
  const none = attenuate(parent, undefined, parent);
  assert.equal(none.grant.egress, undefined);
  assert.deepEqual(none.grant.caps, ['exec', 'spawn']);
  assert.equal(none.grant.posture.network, 'none');
  assert.ok(none.refused.some((r) => r.what === 'net.egress' && r.code === 'capability_denied'));
  const asked = attenuate(parent, { caps: ['exec'], egress: { rules: ['web'] } }, parent);
  assert.deepEqual(asked.grant.caps, ['exec', 'net.egress'], 'asking for a rule asks for net.egress');
  assert.equal(asked.grant.posture.network, 'egress');
  assert.deepEqual(asked.grant.egress?.rules.map((r) => r.id), ['web']);
  const wider = attenuate(parent, { egress: { rules: [{ hosts: ['*.test'] }, { hosts: ['allowed.test'], ports: [8443] }, 'other'] } }, parent);
  assert.equal(wider.grant.egress, undefined);
  assert.deepEqual(wider.refused.filter((r) => r.code === 'egress_rule_denied').map((r) => r.what), ['egress.rules[0]', 'egress.rules[1]', 'egress.rules[2]']);
  const strict = attenuate(parent, { egress: { rules: ['web'] }, posture: { network: 'none' } }, parent);
  assert.equal(strict.grant.egress, undefined, 'a request for network none holds no egress');
  const denylisted = attenuate(parent, { egress: { rules: ['web'] } }, parent, ['net.egress']);
  assert.equal(denylisted.grant.egress, undefined);
  assert.ok(denylisted.refused.some((r) => r.code === 'denylisted' && r.what === 'net.egress'));
});

test('address ranges', () => {
  const c = parseCidr('127.0.0.2/31')!;
  assert.ok(cidrContains(c, '127.0.0.2') && cidrContains(c, '127.0.0.3') && !cidrContains(c, '127.0.0.4'));
  assert.ok(!cidrContains(c, '::ffff:7f00:2'), 'an IPv4 range holds no IPv6 text');
  assert.ok(cidrContains(parseCidr('fd00::/8')!, 'fd12::1'));
  assert.equal(parseCidr('10.0.0.0/33'), null);
  assert.equal(parseCidr('10.0.0/8'), null);
});

test('ruleWithin: a parent that sees requests never admits a blind tunnel (found by the chain property)', () => {
  const parent = rule({ id: 'r1', hosts: ['a.test'], tls: 'inspect', methods: ['HEAD'], paths: ['/a/b'] });
  assert.equal(ruleWithin(rule({ id: 'r1', hosts: ['a.test'], tls: 'tunnel' }), parent), false);
  assert.equal(ruleWithin(rule({ id: 'r1', hosts: ['a.test'], tls: 'inspect', methods: ['HEAD'], paths: ['/a/b/c'] }), parent), true);
  assert.equal(ruleWithin(rule({ id: 'r1', hosts: ['a.test'], tls: 'inspect' }), rule({ id: 'r1', hosts: ['a.test'], tls: 'tunnel' })), true);
});

const POLICY = (rules: string) => `version: 1
groups:
  workspace: { caps: [exec] }
  web: { caps: [net.egress] }
egress:
  rules:
${rules}
  denyHosts: [metadata.google.internal]
profiles:
  root:
    groups: [workspace, web]
    limits: { cpu: 1, memoryMb: 512, pids: 64, diskMb: 256, timeoutMs: 60000, maxSteps: 10, tokens: 100, costUsd: 1, resultBytes: 1000, maxChildren: 1, maxDepth: 2 }
    posture: { network: egress, runtime: docker-hardened, user: nonroot }
`;

test('brig policy check explains each egress rule; a wildcard over a multi-tenant suffix or one label does not load', () => {
  const ok = parsePolicy(POLICY('    pypi: { hosts: [pypi.org, files.pythonhosted.org], scheme: https }\n    api: { hosts: ["*.api.example"], ports: [80], scheme: http, methods: [GET] }'), 'p.yaml');
  assert.ok(ok.ok, ok.ok ? '' : ok.error.message);
  const lines = explainPolicy(ok.value).join('\n');
  assert.match(lines, /egress rule pypi: pypi\.org, files\.pythonhosted\.org on port 443 — TLS tunnel, its ClientHello must name the host \(SNI\), no ECH/);
  assert.match(lines, /egress rule api: \*\.api\.example on port 80 — plain HTTP, each request decided \(methods GET\)/);
  assert.match(lines, /profile root.*\n(.*\n)*\s+egress: rules pypi, api/);
  assert.match(lines, /egress denyHosts: metadata\.google\.internal/);
  const withCred = parsePolicy(POLICY('    gh: { hosts: [api.github.com], scheme: https, tls: inspect, credential: gh }').replace('  denyHosts:', '  credentials:\n    gh: { secretEnv: GH_TOKEN, header: authorization, format: "Bearer {}", hosts: [api.github.com], paths: [/repos/], placeholderEnv: GH }\n  denyHosts:'), 'p.yaml');
  assert.ok(withCred.ok, withCred.ok ? '' : withCred.error.message);
  assert.match(explainPolicy(withCred.value).join('\n'), /egress credential gh: the supervisor's \$GH_TOKEN set as "authorization: Bearer <secret>" on inspected requests to api\.github\.com under \/repos\/ .*\$GH placeholder/);
  for (const bad of ['    x: { hosts: ["*.github.io"] }', '    x: { hosts: ["*.com"] }', '    x: { hosts: ["a*.example.com"] }', '    x: { hosts: [pypi.org], tls: tunnel, methods: [GET] }']) {
    const r = parsePolicy(POLICY(bad), 'p.yaml');
    assert.equal(r.ok, false, bad);
  }
});
