/**
 * Egress rules as sets: which hosts a pattern names, whether one rule fits inside another.
 *
 * Guarantees: a host pattern is an exact canonical name, a wildcard in the leftmost label only
 * (`*.example.com`: every name under it, never the suffix itself) over at least two labels and
 * not over an operator-listed multi-tenant suffix, or an exact IP literal; IP literals match
 * only IP patterns, names only name patterns. `ruleWithin(child, parent)` holds only when every
 * connection and request the child rule allows, the parent rule allows (hosts, ports, scheme,
 * tls, methods, path prefixes, websocket, credential): what attenuation grants and what the
 * property tests check. Threat: a child widening its egress through a copy of a rule (a
 * broader pattern, another port, tunnel instead of inspect, a credential). Fails closed: a
 * pattern that does not parse names nothing. Pure.
 */
import { EGRESS_METHODS, type EgressMethod, type EgressRule } from '../protocol/index.js';
import { canonicalHost, formatIPv6, isDottedQuad, parseIPv6, type CanonHost } from './egress-host.js';

export type HostPattern = { kind: 'exact'; name: string } | { kind: 'wildcard'; suffix: string } | { kind: 'ip'; addr: string };

/**
 * Suffixes under which anyone can get a name (hosting, buckets, tunnels): a wildcard over one
 * of them is an exfiltration endpoint for whoever registers a name there. Refused in a
 * wildcard (exact names under them are fine); the policy adds its own (`multiTenantSuffixes`).
 */
export const MULTI_TENANT_SUFFIXES: readonly string[] = Object.freeze([
  'github.io', 'githubusercontent.com', 'gitlab.io', 'amazonaws.com', 'cloudfront.net', 'blob.core.windows.net',
  'azurewebsites.net', 'azureedge.net', 'web.core.windows.net', 'workers.dev', 'pages.dev', 'vercel.app', 'netlify.app',
  'herokuapp.com', 'ngrok.io', 'ngrok-free.app', 'ngrok.app', 'appspot.com', 'web.app', 'firebaseapp.com',
  'cloudfunctions.net', 'run.app', 'fly.dev', 'onrender.com', 'glitch.me', 'repl.co', 'trycloudflare.com',
  'r2.dev', 'deno.dev', 'surge.sh', 'bitbucket.io', 'blogspot.com', 'wordpress.com', 'duckdns.org', 'no-ip.org',
  'requestbin.net', 'pipedream.net', 'webhook.site', 'oastify.com', 'burpcollaborator.net', 'interact.sh',
  'storage.googleapis.com', 'googleusercontent.com', 'digitaloceanspaces.com', 'linodeobjects.com',
]);

/** A pattern as a policy or a request writes it; null when it is not one (the reason is the caller's). */
export function parsePattern(text: string): HostPattern | null {
  if (text.startsWith('*.')) {
    const rest = canonicalHost(text.slice(2));
    if (!rest || rest.kind !== 'name' || rest.name.split('.').length < 2) return null;
    return { kind: 'wildcard', suffix: rest.name };
  }
  // An IP pattern is written plainly (a dotted quad, an IPv6 without brackets): no numeric spellings.
  if (isDottedQuad(text)) return { kind: 'ip', addr: text };
  if (text.includes(':')) {
    const g = parseIPv6(text);
    return g ? { kind: 'ip', addr: formatIPv6(g) } : null;
  }
  const h = canonicalHost(text);
  if (!h || h.kind !== 'name' || text !== h.name) return null; // the pattern must already be canonical (lower case, no trailing dot)
  return { kind: 'exact', name: h.name };
}

/** Why a pattern is refused for a rule, or null when it is fine. */
export function patternProblem(text: string, multiTenant: readonly string[]): string | null {
  const p = parsePattern(text);
  if (!p) {
    if (text === '*' || /^\*[^.]/.test(text) || /.\*/.test(text)) return `"${text}": a wildcard only as the whole leftmost label (*.example.com)`;
    if (text.startsWith('*.')) return `"${text}": a wildcard needs at least two labels after it (*.example.com, never *.com)`;
    return `"${text}" is not a canonical host name (lower case ASCII, no trailing dot) or an IP address`;
  }
  if (p.kind === 'wildcard') {
    const over = multiTenant.find((m) => p.suffix === m || p.suffix.endsWith(`.${m}`));
    if (over) return `"${text}": ${over} is a multi-tenant suffix (anyone can get a name under it); list the exact hosts instead`;
  }
  return null;
}

export function patternMatches(p: HostPattern, h: CanonHost): boolean {
  if (p.kind === 'ip') return h.kind !== 'name' && h.addr === p.addr;
  if (h.kind !== 'name') return false;
  return p.kind === 'exact' ? h.name === p.name : h.name.endsWith(`.${p.suffix}`);
}

/** Every host `inner` names, `outer` names too. */
export function patternWithin(inner: HostPattern, outer: HostPattern): boolean {
  if (outer.kind === 'ip' || inner.kind === 'ip') return inner.kind === 'ip' && outer.kind === 'ip' && inner.addr === outer.addr;
  if (outer.kind === 'exact') return inner.kind === 'exact' && inner.name === outer.name;
  const name = inner.kind === 'exact' ? inner.name : inner.suffix;
  // *.a.example.com ⊆ *.example.com; *.example.com ⊆ *.example.com; never the suffix itself as an exact name.
  return name.endsWith(`.${outer.suffix}`) || (inner.kind === 'wildcard' && inner.suffix === outer.suffix);
}

function patterns(hosts: readonly string[]): HostPattern[] {
  return hosts.map(parsePattern).filter((p): p is HostPattern => p !== null);
}

export function ruleMatchesHost(r: EgressRule, h: CanonHost): boolean {
  return patterns(r.hosts).some((p) => patternMatches(p, h));
}

export function methodsOf(r: Pick<EgressRule, 'methods'>): readonly EgressMethod[] {
  return r.methods ?? EGRESS_METHODS;
}

/** A child rule that names no path prefix allows every path: it fits only a parent that does the same. */
function pathsWithin(child: readonly string[] | undefined, parent: readonly string[] | undefined): boolean {
  if (parent === undefined) return true;
  if (child === undefined) return false;
  return child.every((c) => parent.some((p) => c.startsWith(p)));
}

/** Whether every connection and request `child` allows, `parent` allows too (see the header). */
export function ruleWithin(child: EgressRule, parent: EgressRule): boolean {
  if (child.scheme !== parent.scheme) return false;
  const outer = patterns(parent.hosts);
  const inner = child.hosts.map(parsePattern);
  if (inner.length === 0 || inner.some((p) => p === null || !outer.some((o) => patternWithin(p, o)))) return false;
  if (!child.ports.every((p) => parent.ports.includes(p))) return false;
  if (child.websocket && !parent.websocket) return false;
  if (child.credential !== undefined && child.credential !== parent.credential) return false;
  // What requests a rule sees depends on its scheme and tls: tcp and an https tunnel see none.
  const seesRequests = (r: EgressRule) => r.scheme === 'http' || (r.scheme === 'https' && r.tls === 'inspect');
  // A parent that sees no requests (tcp, an https tunnel) admits the same, or an inspected copy.
  if (!seesRequests(parent)) return true;
  // A parent that sees requests admits only a child that sees them too (never a blind tunnel).
  if (!seesRequests(child)) return false;
  return methodsOf(child).every((m) => methodsOf(parent).includes(m)) && pathsWithin(child.paths, parent.paths);
}

/** The kind of traffic a rule carries on a tunnel, as the gate tells it from the first bytes. */
export function ruleSeesRequests(r: EgressRule): boolean {
  return r.scheme === 'http' || (r.scheme === 'https' && r.tls === 'inspect');
}
