/**
 * Lease attenuation: what a child gets, given its parent, its request and its policy profile.
 *
 * Guarantees (INV-1): granted caps ⊆ parent ∩ requested ∩ policy, minus the denylist, in the
 * requested order; every numeric limit is min(parent, requested, policy); posture is the
 * strictest of the three and a request for a looser posture is reported as
 * `posture_downgrade` (the caller refuses the spawn); egress is never inherited: a child holds
 * the rules it named that fit inside its parent's and its profile's (egress-attenuate.ts), and
 * `net.egress` and the posture `network: egress` exactly when it holds one. Threat: a child (or a compromised
 * parent) asking for more than it holds. Trusts: only the parent grant and the policy, both
 * already validated. Fails closed: anything not positively allowed is refused. Pure: no
 * clock, no I/O, never throws for a denial.
 */
import {
  LIMIT_KEYS,
  POSTURE_ORDER,
  type Capability,
  type Grant,
  type LeaseRequest,
  type Limits,
  type Posture,
  type Refusal,
} from './types.js';
import { attenuateEgress, egressWithin } from './egress-attenuate.js';
import { MULTI_TENANT_SUFFIXES } from './egress-rules.js';

export interface Attenuation {
  grant: Grant;
  /** Every refused or clamped item with its code and reason (content-free). */
  refused: Refusal[];
}

/**
 * The one capability predicate. The lease code uses it to decide what a child may hold and
 * the broker uses it to decide what a call may do; the supervisor (spawn, exec, llm,
 * artifacts) and the agent tool surface ask it too. `null` means "any valid lease". The
 * grant's list may be a lease's or a packet's read back from disk (plain names).
 */
export function grantAllows(grant: { readonly caps: readonly string[] }, cap: Capability | null): boolean {
  return cap === null || grant.caps.includes(cap);
}

type PostureKey = keyof typeof POSTURE_ORDER;
const POSTURE_KEYS = Object.keys(POSTURE_ORDER) as PostureKey[];

/** Rank in the posture order: 0 is strictest. Unknown values rank as loosest (fail closed). */
export function postureRank(key: PostureKey, value: string): number {
  const order = POSTURE_ORDER[key] as readonly string[];
  const i = order.indexOf(value);
  return i === -1 ? Number.POSITIVE_INFINITY : i;
}

/** True when `a` is at least as strict as `b` on every posture field. */
export function postureWithin(a: Posture, b: Posture): boolean {
  return POSTURE_KEYS.every((k) => postureRank(k, a[k]) <= postureRank(k, b[k]));
}

function stricter<K extends PostureKey>(key: K, a: Posture[K], b: Posture[K]): Posture[K] {
  return postureRank(key, a) <= postureRank(key, b) ? a : b;
}

function intersectCaps(
  parent: Grant,
  policy: Grant,
  wanted: readonly Capability[],
  denylist: readonly Capability[],
  egressHeld: boolean,
): { caps: Capability[]; refused: Refusal[] } {
  const caps: Capability[] = [];
  const refused: Refusal[] = [];
  const seen = new Set<Capability>();
  for (const cap of wanted) {
    if (seen.has(cap)) continue;
    seen.add(cap);
    if (denylist.includes(cap)) {
      refused.push({ what: cap, code: 'denylisted', reason: 'on the policy denylist: never given to any child' });
    } else if (!grantAllows(parent, cap)) {
      refused.push({ what: cap, code: 'capability_denied', reason: 'the parent lease does not hold it' });
    } else if (!grantAllows(policy, cap)) {
      refused.push({ what: cap, code: 'capability_denied', reason: 'the policy profile does not allow it' });
    } else if (cap === 'net.egress' && !egressHeld) {
      refused.push({ what: cap, code: 'capability_denied', reason: 'no egress rule was asked for and granted: egress is never inherited' });
    } else {
      caps.push(cap);
    }
  }
  return { caps, refused };
}

function intersectLimits(parent: Limits, policy: Limits, asked: Partial<Limits> | undefined): { limits: Limits; refused: Refusal[] } {
  const limits = { ...parent };
  const refused: Refusal[] = [];
  for (const key of LIMIT_KEYS) {
    const want = asked?.[key];
    const ceiling = Math.min(parent[key], policy[key]);
    // A NaN or missing request means "as much as allowed"; NaN never reaches the grant.
    const value = want === undefined || Number.isNaN(want) ? ceiling : Math.min(ceiling, want);
    limits[key] = value;
    if (want !== undefined && !(want <= ceiling)) {
      const by = parent[key] <= policy[key] ? 'the parent lease' : 'the policy profile';
      refused.push({ what: key, code: 'limit_clamped', reason: `asked more than ${by} allows; clamped to its limit` });
    }
  }
  return { limits, refused };
}

function intersectPosture(parent: Posture, policy: Posture, asked: Partial<Posture> | undefined): { posture: Posture; refused: Refusal[] } {
  const posture = { ...parent };
  const refused: Refusal[] = [];
  for (const key of POSTURE_KEYS) {
    const floor = stricter(key, parent[key], policy[key]);
    const want = asked?.[key];
    if (want === undefined) {
      (posture as Record<PostureKey, string>)[key] = floor;
    } else if (postureRank(key, want) <= postureRank(key, floor)) {
      (posture as Record<PostureKey, string>)[key] = want;
    } else {
      (posture as Record<PostureKey, string>)[key] = floor;
      refused.push({ what: `posture.${key}`, code: 'posture_downgrade', reason: `asked a looser ${key} posture than the parent or policy holds` });
    }
  }
  return { posture, refused };
}

/**
 * parent ∩ request ∩ policy. With no requested caps, the request is "everything the parent
 * holds", so `refused` then lists the parent's caps the policy or denylist take away. Egress
 * comes only from `request.egress` (asking for it asks for `net.egress` too); without a granted
 * rule the lease holds neither `net.egress` nor the posture `network: egress`.
 */
export function attenuate(
  parent: Grant,
  request: LeaseRequest | undefined,
  policy: Grant,
  denylist: readonly Capability[] = [],
  multiTenant: readonly string[] = MULTI_TENANT_SUFFIXES,
): Attenuation {
  const asksEgress = (request?.egress?.rules.length ?? 0) > 0;
  const wanted = request?.caps ? (asksEgress && !request.caps.includes('net.egress') ? [...request.caps, 'net.egress' as const] : request.caps) : parent.caps;
  const p = intersectPosture(parent.posture, policy.posture, request?.posture);
  const e = attenuateEgress(parent.egress, policy.egress, request?.egress, multiTenant);
  const c = intersectCaps(parent, policy, wanted, denylist, e.egress !== undefined && p.posture.network === 'egress');
  const l = intersectLimits(parent.limits, policy.limits, request?.limits);
  const refused = [...c.refused, ...l.refused, ...p.refused, ...e.refused];
  let egress = e.egress;
  if (egress && (!c.caps.includes('net.egress') || p.posture.network !== 'egress')) {
    const why = p.posture.network !== 'egress' ? 'the posture is network: none (the parent, the profile or the request)' : 'the lease cannot hold net.egress';
    egress.rules.forEach((_, i) => refused.push({ what: `egress.granted[${i}]`, code: 'egress_rule_denied', reason: why }));
    egress = undefined;
  }
  const caps = c.caps;
  return {
    grant: { caps, limits: l.limits, posture: { ...p.posture, network: egress ? 'egress' : 'none' }, ...(egress ? { egress } : {}) },
    refused,
  };
}

/** True when the attenuation asked for a looser posture: the spawn must be refused. */
export function hasPostureDowngrade(a: Attenuation): boolean {
  return a.refused.some((r) => r.code === 'posture_downgrade');
}

/** `child` never exceeds `parent`: caps subset, every limit ≤, posture at least as strict, egress within. */
export function grantWithin(child: Grant, parent: Grant): boolean {
  return (
    child.caps.every((c) => grantAllows(parent, c)) &&
    LIMIT_KEYS.every((k) => child.limits[k] <= parent.limits[k]) &&
    postureWithin(child.posture, parent.posture) &&
    egressWithin(child.egress, parent.egress)
  );
}
