import assert from 'node:assert/strict';
import { test } from 'node:test';
import { egressConfigFrom } from '../../../src/config/index.js';

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
