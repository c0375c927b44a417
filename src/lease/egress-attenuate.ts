/**
 * Egress attenuation: the rules and budgets a child gets, given its parent's, its profile's
 * and what it asked for.
 *
 * Guarantees (INV-1): egress is never inherited — a child holds only rules it named;
 * each granted rule fits inside one rule of the parent and one of the profile (ruleWithin),
 * and takes the id of the parent's rule (ids are the operator's, never a child's text); every
 * budget is min(parent, profile, asked); a rule that fits nowhere is refused
 * (`egress_rule_denied`), a larger budget clamped (`limit_clamped`), each listed. Threat: a
 * child (or a prompt-injected parent) widening its egress through its spawn request. Trusts:
 * the parent grant and the profile, already validated. Fails closed. Pure.
 */
import { EGRESS_BUDGET_KEYS, type EgressAsk, type EgressBudgets, type EgressGrant, type EgressRule, type EgressRuleAsk, type Refusal } from '../protocol/index.js';
import { MULTI_TENANT_SUFFIXES, patternProblem, ruleWithin } from './egress-rules.js';

/** Budgets when the policy's root names none. */
export const DEFAULT_EGRESS_BUDGETS: Readonly<EgressBudgets> = Object.freeze({
  connections: 256,
  concurrent: 16,
  bytesUp: 8 * 1024 * 1024,
  bytesDown: 256 * 1024 * 1024,
  requestBodyMax: 1024 * 1024,
  dnsNames: 64,
  idleMs: 60_000,
  lifetimeMs: 600_000,
});

/** Ports a rule gets when it names none. */
const DEFAULT_PORTS = { https: [443], http: [80], tcp: [] as number[] } as const;

/**
 * A rule written without an id (an ask, or a policy rule's body) with its defaults filled, or
 * the reason it is not a rule. `multiTenant`: suffixes a wildcard may not cover.
 */
export function normalizeRule(a: Exclude<EgressRuleAsk, string>, multiTenant: readonly string[] = MULTI_TENANT_SUFFIXES): Omit<EgressRule, 'id'> | string {
  const scheme = a.scheme ?? 'https';
  const hosts = [...new Set(a.hosts)];
  if (hosts.length === 0) return 'a rule names at least one host';
  for (const h of hosts) {
    const problem = patternProblem(h, multiTenant);
    if (problem) return problem;
  }
  const ports = [...new Set(a.ports ?? DEFAULT_PORTS[scheme])].sort((x, y) => x - y);
  if (ports.length === 0) return 'a tcp rule names its ports';
  if (ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65535)) return 'ports are whole numbers 1–65535';
  if (scheme === 'tcp' && hosts.some((h) => h.startsWith('*.'))) return 'a tcp rule names exact hosts only';
  const tls = scheme === 'https' ? a.tls ?? 'tunnel' : 'tunnel';
  const sees = scheme === 'http' || tls === 'inspect';
  if (!sees && (a.methods !== undefined || a.paths !== undefined || a.websocket)) return 'methods, paths and websocket need requests the gate can see: tls inspect, or scheme http';
  if (a.credential !== undefined && !(scheme === 'https' && tls === 'inspect')) return 'a credential is injected only on inspected https (tls: inspect)';
  if (a.paths !== undefined && (a.paths.length === 0 || a.paths.some((p) => !p.startsWith('/') || !/^[\x21-\x7e]+$/.test(p) || /%|\/\.\.?(\/|$)/.test(p)))) {
    return 'paths are plain prefixes starting with /';
  }
  if (a.methods !== undefined && a.methods.length === 0) return 'methods, when given, name at least one';
  return {
    hosts,
    ports,
    scheme,
    tls,
    ...(a.methods !== undefined ? { methods: [...new Set(a.methods)] } : {}),
    ...(a.paths !== undefined ? { paths: [...new Set(a.paths)] } : {}),
    websocket: a.websocket === true,
    ...(a.credential !== undefined ? { credential: a.credential } : {}),
  };
}

function minBudgets(parent: EgressBudgets, profile: EgressBudgets, asked: Partial<EgressBudgets> | undefined): { budgets: EgressBudgets; refused: Refusal[] } {
  const budgets = { ...parent };
  const refused: Refusal[] = [];
  for (const k of EGRESS_BUDGET_KEYS) {
    const ceiling = Math.min(parent[k], profile[k]);
    const want = asked?.[k];
    budgets[k] = want === undefined || Number.isNaN(want) ? ceiling : Math.min(ceiling, Math.max(0, want));
    if (want !== undefined && !(want <= ceiling)) {
      refused.push({ what: `egress.budgets.${k}`, code: 'limit_clamped', reason: `asked more than ${parent[k] <= profile[k] ? 'the parent lease' : 'the policy profile'} allows; clamped to its limit` });
    }
  }
  return { budgets, refused };
}

const same = (a: EgressRule, b: EgressRule) => JSON.stringify(a) === JSON.stringify(b);

/** parent ∩ profile ∩ asked (see the header). No ask, or no rule granted: no egress. */
export function attenuateEgress(
  parent: EgressGrant | undefined,
  profile: EgressGrant | undefined,
  ask: EgressAsk | undefined,
  multiTenant: readonly string[] = MULTI_TENANT_SUFFIXES,
): { egress: EgressGrant | undefined; refused: Refusal[] } {
  if (!ask || ask.rules.length === 0) return { egress: undefined, refused: [] };
  const refused: Refusal[] = [];
  const granted: EgressRule[] = [];
  const parentRules = parent?.rules ?? [];
  const profileRules = profile?.rules ?? [];
  const inProfile = (r: EgressRule | Omit<EgressRule, 'id'>) => profileRules.some((p) => ruleWithin(r as EgressRule, p));
  ask.rules.forEach((a, i) => {
    const what = `egress.rules[${i}]`;
    const refuse = (reason: string) => refused.push({ what, code: 'egress_rule_denied', reason });
    if (typeof a === 'string') {
      const held = parentRules.filter((r) => r.id === a);
      if (held.length === 0) return refuse(`the parent holds no egress rule "${a.slice(0, 32)}"`);
      const fits = held.filter(inProfile);
      if (fits.length === 0) return refuse(`rule "${a}" is outside what the policy profile may grant`);
      for (const r of fits) if (!granted.some((g) => same(g, r))) granted.push({ ...r });
      return;
    }
    const rule = normalizeRule(a, multiTenant);
    if (typeof rule === 'string') return refuse(rule);
    const outer = parentRules.find((p) => ruleWithin(rule as EgressRule, p));
    if (!outer) return refuse('it fits inside no rule the parent holds (hosts, ports, scheme, tls, methods, paths, websocket and credential must each be within one)');
    if (!inProfile(rule)) return refuse('it fits inside no rule the policy profile may grant');
    const r: EgressRule = { id: outer.id, ...rule };
    if (!granted.some((g) => same(g, r))) granted.push(r);
  });
  if (granted.length === 0) return { egress: undefined, refused };
  if (!parent || !profile) return { egress: undefined, refused };
  const b = minBudgets(parent.budgets, profile.budgets, ask.budgets);
  return { egress: { rules: granted, budgets: b.budgets }, refused: [...refused, ...b.refused] };
}

/** `child` allows nothing `parent` does not: each rule within one of the parent's, every budget ≤. */
export function egressWithin(child: EgressGrant | undefined, parent: EgressGrant | undefined): boolean {
  if (!child || child.rules.length === 0) return true;
  if (!parent) return false;
  return child.rules.every((c) => parent.rules.some((p) => ruleWithin(c, p))) && EGRESS_BUDGET_KEYS.every((k) => child.budgets[k] <= parent.budgets[k]);
}
