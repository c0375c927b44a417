/**
 * The egress section of a policy: the operator's rules by id, credential bindings, deny lists,
 * the multi-tenant suffixes and web_search's endpoint, and each profile's egress ceiling.
 *
 * Guarantees: a rule is refused at load when normalizeRule refuses it (a wildcard over a
 * multi-tenant suffix or over one label, a tcp wildcard, methods or paths a tunnel cannot see,
 * a credential off an inspect rule), when it names a credential no binding defines, or a
 * binding's hosts cover a multi-tenant suffix; a profile names only rules the policy defines;
 * root without `rules` may grant every policy rule, any other profile none unless it lists
 * them. A shipped policy defines no rule, so it grants no egress. Fails closed: each problem
 * keeps the policy from loading (`invalid_policy`).
 */
import type { EgressBudgets, EgressGrant, EgressRule } from '../protocol/index.js';
import { DEFAULT_EGRESS_BUDGETS, normalizeRule } from './egress-attenuate.js';
import { parseCidr } from './egress-host.js';
import { MULTI_TENANT_SUFFIXES, parsePattern, patternProblem } from './egress-rules.js';
import type { CredentialBinding, PolicyFile } from './policy-schema.js';
import { nearest } from '../util/nearest.js';

export interface EgressPolicy {
  rules: Record<string, EgressRule>;
  credentials: Record<string, CredentialBinding>;
  search: { url: string; query: string } | undefined;
  denyHosts: string[];
  denyCidrs: string[];
  allowPrivateCidrs: string[];
  /** brig's list and the operator's additions. */
  multiTenantSuffixes: string[];
}

type Problems = { text: string; hint?: string }[];

export const EMPTY_EGRESS_POLICY: EgressPolicy = Object.freeze({
  rules: {},
  credentials: {},
  search: undefined,
  denyHosts: [],
  denyCidrs: [],
  allowPrivateCidrs: [],
  multiTenantSuffixes: [...MULTI_TENANT_SUFFIXES],
}) as EgressPolicy;

export function resolveEgressPolicy(e: PolicyFile['egress'], source: string, problems: Problems): EgressPolicy {
  if (!e) return { ...EMPTY_EGRESS_POLICY, multiTenantSuffixes: [...MULTI_TENANT_SUFFIXES] };
  const multi = [...new Set([...MULTI_TENANT_SUFFIXES, ...e.multiTenantSuffixes.map((s) => s.toLowerCase())])];
  const rules: Record<string, EgressRule> = {};
  for (const [id, body] of Object.entries(e.rules)) {
    const r = normalizeRule(body, multi);
    if (typeof r === 'string') {
      problems.push({ text: `${source}: egress.rules.${id}: ${r}` });
      continue;
    }
    if (r.credential !== undefined && !Object.hasOwn(e.credentials, r.credential)) {
      const near = nearest(r.credential, Object.keys(e.credentials));
      problems.push({ text: `${source}: egress.rules.${id} names credential "${r.credential}", which egress.credentials does not define`, ...(near ? { hint: `Did you mean "${near}"?` } : {}) });
    }
    rules[id] = { id, ...r };
  }
  for (const [name, b] of Object.entries(e.credentials)) {
    for (const h of b.hosts) {
      const p = patternProblem(h, multi);
      if (p) problems.push({ text: `${source}: egress.credentials.${name}.hosts: ${p}` });
    }
    if (b.paths?.some((p) => !p.startsWith('/') || /%|\/\.\.?(\/|$)/.test(p))) problems.push({ text: `${source}: egress.credentials.${name}.paths are plain prefixes starting with /` });
  }
  for (const h of e.denyHosts) if (!parsePattern(h)) problems.push({ text: `${source}: egress.denyHosts: "${h}" is not a host pattern` });
  for (const [key, list] of [['denyCidrs', e.denyCidrs], ['allowPrivateCidrs', e.allowPrivateCidrs]] as const) {
    for (const c of list) if (!parseCidr(c)) problems.push({ text: `${source}: egress.${key}: "${c}" is not an address range (10.0.0.0/8, fd00::/8)` });
  }
  if (e.search) {
    let ok = false;
    try {
      const u = new URL(e.search.url);
      ok = u.protocol === 'https:' && u.username === '' && u.password === '' && u.hash === '';
    } catch {
      ok = false;
    }
    if (!ok) problems.push({ text: `${source}: egress.search.url must be an https URL without credentials or a fragment` });
  }
  return {
    rules,
    credentials: e.credentials,
    search: e.search,
    denyHosts: e.denyHosts,
    denyCidrs: e.denyCidrs,
    allowPrivateCidrs: e.allowPrivateCidrs,
    multiTenantSuffixes: multi,
  };
}

/** A profile's egress ceiling: the policy rules it lists (root: every rule unless it lists some) and its budgets within root's. */
export function profileEgress(
  name: string,
  p: { rules?: string[] | undefined; budgets?: Partial<EgressBudgets> | undefined } | undefined,
  root: EgressGrant | undefined,
  policy: EgressPolicy,
  source: string,
  problems: Problems,
): EgressGrant | undefined {
  const ids = p?.rules ?? (name === 'root' ? Object.keys(policy.rules) : []);
  const rules: EgressRule[] = [];
  for (const id of ids) {
    const r = policy.rules[id];
    if (r) rules.push(r);
    else {
      const near = nearest(id, Object.keys(policy.rules));
      problems.push({ text: `${source}: profiles.${name}.egress.rules names "${id}", which egress.rules does not define`, ...(near ? { hint: `Did you mean "${near}"?` } : {}) });
    }
  }
  if (rules.length === 0) return undefined;
  const base = root?.budgets ?? DEFAULT_EGRESS_BUDGETS;
  return { rules, budgets: { ...base, ...(p?.budgets ?? {}) } };
}
