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
  EgressAskSchema,
  EgressGrantSchema,
  EgressRuleSchema,
} from './types.js';
export type { Capability, LimitKey, Limits, Posture, Grant, LeaseRequest, Refusal, LeaseRecord } from './types.js';
export { attenuate, grantAllows, grantWithin, hasPostureDowngrade, postureWithin, type Attenuation } from './attenuate.js';
export { canonicalHost, parseAuthority, hostText, parseCidr, cidrContains, addressBytes, parseIPv4, parseIPv6, formatIPv6, type CanonHost, type Cidr } from './egress-host.js';
export { parsePattern, patternMatches, patternWithin, patternProblem, ruleWithin, ruleMatchesHost, MULTI_TENANT_SUFFIXES, type HostPattern } from './egress-rules.js';
export { decideEgress, parseAbsoluteTarget, plainPath, type EgressDecision, type EgressMode, type EgressPolicyView, type EgressQuery, type EgressRequest } from './egress-decide.js';
export { attenuateEgress, egressWithin, normalizeRule, DEFAULT_EGRESS_BUDGETS } from './egress-attenuate.js';
export { EMPTY_EGRESS_POLICY, type EgressPolicy } from './policy-egress.js';
export type { CredentialBinding } from './policy-schema.js';
export { parsePolicy, loadPolicyFile, profileOf, imageAllowed, shippedPoliciesDir, policyFileFor, policyFilesIn, type Policy, type ResolvedProfile } from './policy.js';
export { explainPolicy } from './policy-explain.js';
export { loadPolicyCached } from './policy-cache.js';
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
