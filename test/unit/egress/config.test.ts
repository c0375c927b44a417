import assert from 'node:assert/strict';
import { test } from 'node:test';
import { egressConfigFrom, egressSecretsFrom } from '../../../src/config/index.js';

test('egress settings: config.yaml egress.resolvers/testPublicCidrs, the env wins per key; a test-public range outside 127.0.0.0/8 is refused', () => {
  const file = 'egress:\n  resolvers: [127.0.0.53:5300]\n  testPublicCidrs: [127.0.0.2/31]\n';
  assert.deepEqual(egressConfigFrom({}, file), { resolvers: ['127.0.0.53:5300'], testPublicCidrs: ['127.0.0.2/31'] });
  assert.deepEqual(egressConfigFrom({ BRIG_EGRESS_RESOLVERS: '127.0.0.9:53' }, file), { resolvers: ['127.0.0.9:53'], testPublicCidrs: ['127.0.0.2/31'] });
  assert.deepEqual(egressConfigFrom({}, null), { resolvers: [], testPublicCidrs: [] });
  for (const bad of ['10.0.0.0/8', '0.0.0.0/0', '127.0.0.0/4', '128.0.0.1', '::1']) {
    assert.throws(() => egressConfigFrom({ BRIG_EGRESS_TEST_PUBLIC_CIDRS: bad }), /inside 127\.0\.0\.0\/8/, bad);
    assert.throws(() => egressConfigFrom({}, `egress:\n  testPublicCidrs: ["${bad}"]\n`), /inside 127\.0\.0\.0\/8/, bad);
  }
  assert.throws(() => egressConfigFrom({ BRIG_EGRESS_RESOLVERS: 'dns.example' }), /not an address/);
  assert.throws(() => egressConfigFrom({}, 'egress:\n  resolverz: [1.1.1.1]\n'), /config\.yaml egress/);
});

test('egress.upstreamCaFile / BRIG_EGRESS_UPSTREAM_CA_FILE: an absolute path, the env wins; a relative one is refused', () => {
  assert.deepEqual(egressConfigFrom({}, 'egress:\n  upstreamCaFile: /etc/brig/up.pem\n'), { resolvers: [], testPublicCidrs: [], upstreamCaFile: '/etc/brig/up.pem' });
  assert.equal(egressConfigFrom({ BRIG_EGRESS_UPSTREAM_CA_FILE: '/tmp/x.pem' }, 'egress:\n  upstreamCaFile: /etc/brig/up.pem\n').upstreamCaFile, '/tmp/x.pem');
  assert.throws(() => egressConfigFrom({ BRIG_EGRESS_UPSTREAM_CA_FILE: 'up.pem' }), /not an absolute path/);
});

test('credential secrets: only the variables policy.yaml names as secretEnv are read, unset ones left out, none printable', async () => {
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-secrets-'));
  try {
    assert.deepEqual(egressSecretsFrom({ GH: 'x' }, home), {}, 'no policy.yaml: nothing read');
    fs.writeFileSync(path.join(home, 'policy.yaml'), 'egress:\n  credentials:\n    gh: { secretEnv: GH, header: authorization, hosts: [api.github.com] }\n    s: { secretEnv: SEARCH_KEY, header: x-api-key, hosts: [s.example] }\n    bad: { secretEnv: "lower", header: x, hosts: [x.example] }\n');
    const got = egressSecretsFrom({ GH: ' tok-123 ', OTHER: 'not named', lower: 'not an env name' }, home);
    assert.deepEqual(Object.keys(got), ['GH'], 'the named, set variable only');
    assert.equal(got.GH!.reveal(), 'tok-123');
    assert.equal(JSON.stringify(got), '{"GH":"[redacted]"}');
    fs.writeFileSync(path.join(home, 'policy.yaml'), 'egress: [broken');
    assert.deepEqual(egressSecretsFrom({ GH: 'x' }, home), {}, 'a broken policy yields nothing (the policy loader reports it)');
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});
