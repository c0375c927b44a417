/** Leases: the closed capability set, attenuation, policies, persisted lease records. */
export {
  CAPABILITIES,
  CapabilitySchema,
  LIMIT_KEYS,
  LimitsSchema,
  POSTURE_ORDER,
  PostureSchema,
  STRICTEST_POSTURE,
  GrantSchema,
  LeaseRequestSchema,
  RefusalSchema,
  LeaseRecordSchema,
} from './types.js';
export type { Capability, LimitKey, Limits, Posture, Grant, LeaseRequest, Refusal, LeaseRecord } from './types.js';
export { attenuate, grantAllows, grantWithin, hasPostureDowngrade, postureWithin, type Attenuation } from './attenuate.js';
export { parsePolicy, loadPolicyFile, profileOf, shippedPoliciesDir, policyFileFor, policyFilesIn, type Policy, type ResolvedProfile } from './policy.js';
export { explainPolicy } from './policy-explain.js';
export {
  LeaseStore,
  leaseLive,
  leaseState,
  hashToken,
  type LeaseStoreOptions,
  type LeaseEventSink,
  type IssuedLease,
  type IssueRootArgs,
  type IssueChildArgs,
  type RevokedListener,
} from './lease-store.js';
export { LEASE_ID_RE } from './lease-files.js';
export { profileFor, OPERATOR_PROFILE } from './default-profile.js';
