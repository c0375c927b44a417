import fc from 'fast-check';
import { CAPABILITIES, POSTURE_ORDER, type Grant, type LeaseRequest, type Limits, type Posture } from '../../../src/lease/types.js';

const int = (max: number) => fc.integer({ min: 1, max });
export const limitsArb: fc.Arbitrary<Limits> = fc.record({
  cpu: fc.double({ min: 0.01, max: 64, noNaN: true }),
  memoryMb: int(1 << 16),
  pids: int(4096),
  diskMb: int(1 << 20),
  timeoutMs: int(3_600_000),
  maxSteps: fc.nat(10_000),
  tokens: fc.nat(1_000_000),
  costUsd: fc.double({ min: 0, max: 1000, noNaN: true }),
  resultBytes: fc.nat(1 << 30),
  maxChildren: fc.nat(50),
  maxDepth: fc.nat(10),
});
export const postureArb: fc.Arbitrary<Posture> = fc.record({
  network: fc.constantFrom(...POSTURE_ORDER.network),
  runtime: fc.constantFrom(...POSTURE_ORDER.runtime),
  user: fc.constantFrom(...POSTURE_ORDER.user),
});
export const capsArb = fc.subarray([...CAPABILITIES]).chain((s) => fc.shuffledSubarray(s, { minLength: s.length }));
export const grantArb: fc.Arbitrary<Grant> = fc.record({ caps: capsArb, limits: limitsArb, posture: postureArb });
export const requestArb: fc.Arbitrary<LeaseRequest> = fc.record(
  {
    caps: fc.array(fc.constantFrom(...CAPABILITIES), { maxLength: 12 }),
    limits: fc.record(
      {
        cpu: fc.double({ min: 0.01, max: 128, noNaN: true }),
        memoryMb: int(1 << 17),
        pids: int(8192),
        diskMb: int(1 << 21),
        timeoutMs: int(7_200_000),
        maxSteps: fc.nat(20_000),
        tokens: fc.nat(2_000_000),
        costUsd: fc.double({ min: 0, max: 2000, noNaN: true }),
        resultBytes: fc.nat(2 ** 31),
        maxChildren: fc.nat(100),
        maxDepth: fc.nat(20),
      },
      { requiredKeys: [] },
    ),
    posture: fc.record(
      {
        network: fc.constantFrom(...POSTURE_ORDER.network),
        runtime: fc.constantFrom(...POSTURE_ORDER.runtime),
        user: fc.constantFrom(...POSTURE_ORDER.user),
      },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: [] },
);
export const denylistArb = fc.subarray([...CAPABILITIES]);
