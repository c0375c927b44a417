import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { attenuate, grantWithin, hasPostureDowngrade, postureRank } from '../../../src/lease/attenuate.js';
import { LIMIT_KEYS, STRICTEST_POSTURE, type Grant } from '../../../src/lease/types.js';
import { denylistArb, grantArb, postureArb, requestArb } from './arbitraries.js';

const RUNS = { numRuns: 10_000 };

// req: lease:caps-intersect
test('[INV-1] child caps ⊆ parent ∩ requested ∩ policy, in requested order, minus the denylist', () => {
  fc.assert(
    fc.property(grantArb, requestArb, grantArb, denylistArb, (parent, req, policy, deny) => {
      const { grant } = attenuate(parent, req, policy, deny);
      const wanted = req.caps ?? parent.caps;
      for (const c of grant.caps) {
        assert.ok(parent.caps.includes(c) && wanted.includes(c) && policy.caps.includes(c) && !deny.includes(c));
      }
      // net.egress is held only with a granted egress rule (never inherited; these requests ask for none).
      const expected = [...new Set(wanted)].filter((c) => parent.caps.includes(c) && policy.caps.includes(c) && !deny.includes(c) && (c !== 'net.egress' || grant.egress !== undefined));
      assert.deepEqual(grant.caps, expected);
    }),
    RUNS,
  );
});

// req: lease:limits-min
test('[INV-1] every limit = min(parent, requested, policy): limits never grow', () => {
  fc.assert(
    fc.property(grantArb, requestArb, grantArb, (parent, req, policy) => {
      const { grant } = attenuate(parent, req, policy);
      for (const k of LIMIT_KEYS) {
        const want = req.limits?.[k] ?? Infinity;
        assert.equal(grant.limits[k], Math.min(parent.limits[k], policy.limits[k], want));
        assert.ok(grant.limits[k] <= parent.limits[k]);
      }
    }),
    RUNS,
  );
});

// req: lease:posture-never-loosens
test('[INV-1] posture never loosens; a looser request is refused with posture_downgrade', () => {
  fc.assert(
    fc.property(grantArb, requestArb, grantArb, (parent, req, policy) => {
      const a = attenuate(parent, req, policy);
      for (const k of ['network', 'runtime', 'user'] as const) {
        assert.ok(postureRank(k, a.grant.posture[k]) <= postureRank(k, parent.posture[k]));
        assert.ok(postureRank(k, a.grant.posture[k]) <= postureRank(k, policy.posture[k]));
        const want = req.posture?.[k];
        const floor = Math.min(postureRank(k, parent.posture[k]), postureRank(k, policy.posture[k]));
        const looser = want !== undefined && postureRank(k, want) > floor;
        assert.equal(a.refused.some((r) => r.what === `posture.${k}` && r.code === 'posture_downgrade'), looser);
      }
    }),
    RUNS,
  );
});

// req: lease:caps-intersect
test('[INV-1] refused caps = requested − granted, each with a reason', () => {
  fc.assert(
    fc.property(grantArb, requestArb, grantArb, denylistArb, (parent, req, policy, deny) => {
      const a = attenuate(parent, req, policy, deny);
      const wanted = [...new Set(req.caps ?? parent.caps)];
      const refusedCaps = a.refused.filter((r) => r.code === 'capability_denied' || r.code === 'denylisted');
      assert.deepEqual(refusedCaps.map((r) => r.what), wanted.filter((c) => !a.grant.caps.includes(c)));
      for (const r of refusedCaps) assert.ok(r.reason.length > 0);
    }),
    RUNS,
  );
});

// req: lease:caps-intersect lease:limits-min lease:posture-never-loosens
test('[INV-1] a chain of attenuations never widens', () => {
  fc.assert(
    fc.property(grantArb, fc.array(fc.tuple(requestArb, grantArb), { minLength: 1, maxLength: 6 }), (root, steps) => {
      let cur: Grant = root;
      for (const [req, policy] of steps) {
        const next = attenuate(cur, req, policy).grant;
        assert.ok(grantWithin(next, cur));
        assert.ok(grantWithin(next, root));
        cur = next;
      }
    }),
    { numRuns: 10_000 },
  );
});

test('attenuation is pure and never throws for a denial', () => {
  fc.assert(
    fc.property(grantArb, requestArb, grantArb, denylistArb, (parent, req, policy, deny) => {
      const before = JSON.stringify([parent, req, policy, deny]);
      const a = attenuate(parent, req, policy, deny);
      const b = attenuate(parent, req, policy, deny);
      assert.deepEqual(a, b);
      assert.equal(JSON.stringify([parent, req, policy, deny]), before);
    }),
    { numRuns: 2_000 },
  );
});

test('no request means everything the parent holds that the policy allows', () => {
  const parent: Grant = {
    caps: ['spawn', 'llm', 'exec'],
    limits: { cpu: 1, memoryMb: 512, pids: 64, diskMb: 1024, timeoutMs: 60_000, maxSteps: 10, tokens: 100, costUsd: 1, resultBytes: 100, maxChildren: 2, maxDepth: 3 },
    posture: STRICTEST_POSTURE,
  };
  const policy: Grant = { ...parent, caps: ['llm', 'exec', 'refs.read'] };
  const a = attenuate(parent, undefined, policy, ['exec']);
  assert.deepEqual(a.grant.caps, ['llm']);
  assert.deepEqual(a.refused.map((r) => [r.what, r.code]), [['spawn', 'capability_denied'], ['exec', 'denylisted']]);
  assert.equal(hasPostureDowngrade(a), false);
});

test('a stricter posture request is honoured; a looser one is refused', () => {
  fc.assert(
    fc.property(postureArb, (p) => {
      const parent: Grant = {
        caps: [],
        limits: { cpu: 1, memoryMb: 1, pids: 1, diskMb: 1024, timeoutMs: 1, maxSteps: 0, tokens: 0, costUsd: 0, resultBytes: 0, maxChildren: 0, maxDepth: 0 },
        posture: STRICTEST_POSTURE,
      };
      const a = attenuate(parent, { posture: p }, parent);
      assert.equal(hasPostureDowngrade(a), p.network !== 'none');
      assert.deepEqual(a.grant.posture, STRICTEST_POSTURE);
    }),
    { numRuns: 200 },
  );
});
