import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadPolicyFile, parsePolicy, policyFilesIn, profileOf, shippedPoliciesDir } from '../../../src/lease/policy.js';
import { explainPolicy } from '../../../src/lease/policy-explain.js';
import { grantWithin } from '../../../src/lease/attenuate.js';

const MINIMAL = `version: 1
groups:
  models: { caps: [llm], tools: [llm_complete] }
profiles:
  root:
    groups: [models]
    limits: { cpu: 1, memoryMb: 256, pids: 32, timeoutMs: 1000, maxSteps: 1, tokens: 1, costUsd: 1, resultBytes: 1, maxChildren: 1, maxDepth: 1 }
    posture: { network: none, runtime: docker-hardened, user: nonroot }
  worker:
    groups: [models]
    limits: { memoryMb: 128 }
`;

test('every file in policies/ parses, has root/worker, and no shipped policy grants net.egress', () => {
  const files = policyFilesIn(shippedPoliciesDir());
  assert.ok(files.length >= 1);
  for (const f of files) {
    const r = loadPolicyFile(f);
    assert.ok(r.ok, r.ok ? '' : `${f}: ${r.error.message}`);
    assert.ok(r.value.profiles.root && r.value.profiles.worker, f);
    for (const p of Object.values(r.value.profiles)) {
      assert.ok(!p.grant.caps.includes('net.egress'), `${f}: ${p.name} grants net.egress`);
      assert.equal(p.grant.posture.network, 'none');
      assert.ok(grantWithin(p.grant, r.value.profiles.root!.grant));
    }
    assert.ok(explainPolicy(r.value).length > 3);
  }
});

test('the default policy ships root, worker, researcher and coordinator', () => {
  const r = loadPolicyFile(`${shippedPoliciesDir()}/default.yaml`);
  assert.ok(r.ok);
  assert.deepEqual(Object.keys(r.value.profiles).sort(), ['coordinator', 'researcher', 'root', 'worker']);
  assert.ok(!r.value.profiles.worker!.grant.caps.includes('spawn'));
  assert.ok(r.value.profiles.coordinator!.grant.caps.includes('spawn'));
});

test('a misspelled key fails with the file, line, key path and nearest valid key', () => {
  const r = parsePolicy(MINIMAL.replace('limits: { memoryMb: 128 }', 'limts: { memoryMb: 128 }'), 'p.yaml');
  assert.ok(!r.ok);
  assert.equal(r.error.code, 'invalid_policy');
  assert.match(r.error.message, /^p\.yaml:11: unknown key "profiles\.worker\.limts"/);
  assert.match(r.error.hint, /Did you mean "profiles\.worker\.limits"\?/);
});

test('a misspelled nested limit key and a misspelled capability name the nearest', () => {
  const a = parsePolicy(MINIMAL.replace('{ memoryMb: 128 }', '{ memroyMb: 128 }'), 'p.yaml');
  assert.ok(!a.ok);
  assert.match(a.error.message, /unknown key "profiles\.worker\.limits\.memroyMb"/);
  assert.match(a.error.hint, /memoryMb/);
  const b = parsePolicy(MINIMAL.replace('caps: [llm]', 'caps: [lmm]'), 'p.yaml');
  assert.ok(!b.ok);
  assert.match(b.error.message, /groups\.models\.caps\.0/);
  assert.match(b.error.hint, /Did you mean "llm"/);
  const c = parsePolicy(MINIMAL.replace('version: 1', 'version: 1\nprofile: {}'), 'p.yaml');
  assert.ok(!c.ok);
  assert.match(c.error.hint, /Did you mean "profiles"/);
});

test('a profile wider than root, a denylisted grant or an unknown group is refused', () => {
  const wider = parsePolicy(MINIMAL.replace('{ memoryMb: 128 }', '{ memoryMb: 4096 }'), 'p.yaml');
  assert.ok(!wider.ok);
  assert.match(wider.error.message, /wider than profiles\.root/);
  const deny = parsePolicy(MINIMAL.replace('profiles:', 'denylist: { caps: [llm] }\nprofiles:'), 'p.yaml');
  assert.ok(!deny.ok);
  assert.match(deny.error.message, /denylisted capability "llm"/);
  const group = parsePolicy(MINIMAL.replace('  worker:\n    groups: [models]', '  worker:\n    groups: [modles]'), 'p.yaml');
  assert.ok(!group.ok);
  assert.match(group.error.hint, /models/);
  const noRoot = parsePolicy('version: 1\nprofiles: {}\n', 'p.yaml');
  assert.ok(!noRoot.ok);
});

test('non-root profiles inherit root limits where silent; unknown profile names the nearest', () => {
  const r = parsePolicy(MINIMAL, 'p.yaml');
  assert.ok(r.ok);
  assert.equal(r.value.profiles.worker!.grant.limits.memoryMb, 128);
  assert.equal(r.value.profiles.worker!.grant.limits.pids, 32);
  const miss = profileOf(r.value, 'wroker');
  assert.ok(!miss.ok);
  assert.match(miss.error.hint, /worker/);
});

test('invalid YAML is an invalid_policy error, not a throw', () => {
  const r = parsePolicy('version: 1\nprofiles: [\n', 'bad.yaml');
  assert.ok(!r.ok);
  assert.equal(r.error.code, 'invalid_policy');
  // A duplicate key names its line and says what is wrong, not only a code.
  const dup = parsePolicy('version: 1\nprofiles: {}\nversion: 1\n', 'dup.yaml');
  assert.ok(!dup.ok);
  assert.match(dup.error.message, /^dup\.yaml:3: YAML DUPLICATE_KEY: .*unique/);
});
