import { test } from 'node:test';
import assert from 'node:assert/strict';
import { egressSettingsChecks } from '../../../src/daemon/doctor-egress.js';

test('doctor shows egress.testPublicCidrs (and upstreamCaFile) when set, and nothing when not', () => {
  assert.deepEqual(egressSettingsChecks({ testPublicCidrs: [] }), []);
  const set = egressSettingsChecks({ testPublicCidrs: ['127.0.0.2/31'], upstreamCaFile: '/etc/brig/up.pem' });
  assert.deepEqual(set.map((c) => c.name), ['egress: testPublicCidrs', 'egress: upstreamCaFile']);
  assert.match(set[0]!.detail, /127\.0\.0\.2\/31 treated as public .*test-only/);
  assert.match(set[1]!.detail, /\/etc\/brig\/up\.pem/);
});
