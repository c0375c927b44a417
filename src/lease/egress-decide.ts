/**
 * The one egress decision: may this lease open this connection, or send this request on it?
 * The gate asks it at every step of a connection (the CONNECT or absolute URI, the tunnel's
 * first bytes, each request it sees), `brig explain` and `brig policy check` ask it for an
 * operator, and the property tests ask it for parent and child.
 *
 * Guarantees: decided from the lease's rules and the operator's deny list alone — no name is
 * resolved here, so a host no rule names never reaches DNS; a host is matched only in its
 * canonical spelling (egress-host.ts) and an IP literal only against IP rules; the widest mode
 * the matching rules allow is taken (an opaque tcp rule, else an https tunnel with its SNI equal
 * to the host and no ECH, else inspected requests), so a child whose rules each fit inside one
 * of its parent's is never allowed what the parent is not; TRACE, TRACK and CONNECT inside a
 * tunnel, h2c and unasked upgrades, paths with dot segments or encoded separators are refused,
 * never normalized. Threat: a hostile child choosing every byte of its proxy requests. Trusts:
 * the lease as issued. Fails closed: anything not allowed by a rule is a refusal with a reason
 * of the closed set (EGRESS_DENY_REASONS). Pure and total.
 */
import { EGRESS_METHODS, type EgressDenyReason, type EgressGrant, type EgressMethod, type EgressRule } from '../protocol/index.js';
import { canonicalHost, parseAuthority, type CanonHost } from './egress-host.js';
import { methodsOf, parsePattern, patternMatches, ruleMatchesHost, ruleSeesRequests } from './egress-rules.js';

/** What of the operator's egress policy a decision needs. */
export interface EgressPolicyView {
  /** Host patterns no rule can open (exact names, `*.suffix`, IP literals). */
  denyHosts: readonly string[];
}

/** A request as the gate saw it (nothing of it is kept: the decision is content-free). */
export interface EgressRequest {
  method: string;
  /** The request-target of an inspected request (origin form); the path of an absolute URI. */
  path: string;
  /** The Host header, when there was one. */
  hostHeader: string | undefined;
  /** The Upgrade header, when there was one (`HTTP2-Settings` counts as h2c). */
  upgrade: string | undefined;
}

export interface EgressQuery {
  /** CONNECT's authority (`host:port`, a port required), or an absolute URI's authority (port 80 by default). */
  authority: string;
  via: 'connect' | 'absolute';
  /** A tunnel's first bytes, once read: a ClientHello (its SNI, whether it carries ECH) or plain HTTP. */
  first?: { kind: 'tls'; sni: string | null; ech: boolean } | { kind: 'http' } | undefined;
  /** A request seen on the connection (inspect, plain HTTP, absolute-form). */
  request?: EgressRequest | undefined;
}

/**
 * `pending`: allowed so far, decided again once the first bytes are read. `raw`: an opaque tcp
 * stream. `tunnel`: TLS relayed as bytes after the SNI check. `inspect`: TLS terminated, each
 * request decided. `plain`: HTTP in the clear, each request decided.
 */
export type EgressMode = 'pending' | 'raw' | 'tunnel' | 'inspect' | 'plain';

export type EgressDecision =
  | { allow: true; host: CanonHost; port: number; mode: EgressMode; rule: EgressRule; candidates: EgressRule[] }
  | { allow: false; reason: EgressDenyReason; host?: CanonHost; port?: number; rule?: EgressRule };

const deny = (reason: EgressDenyReason, at?: { host: CanonHost; port: number }, rule?: EgressRule): EgressDecision => ({
  allow: false,
  reason,
  ...(at ? { host: at.host, port: at.port } : {}),
  ...(rule ? { rule } : {}),
});

/** `http://authority/path?query` → its authority and path (with the query); null for anything else (https://, userinfo, a fragment). */
export function parseAbsoluteTarget(target: string): { authority: string; path: string } | null {
  const m = /^http:\/\/([^/?#@\\]*)(\/[^#]*|\?[^#]*)?$/i.exec(target);
  if (!m) return null;
  const path = m[2] ?? '/';
  return { authority: m[1]!, path: path.startsWith('?') ? `/${path}` : path };
}

/** A path a prefix can be judged on: origin form, printable ASCII, no dot segment, no encoded dot, slash or backslash. */
export function plainPath(path: string): boolean {
  if (!path.startsWith('/') || path.length > 8192 || !/^[\x21-\x7e]*$/.test(path) || path.includes('\\')) return false;
  if (/%(2e|2f|5c|00)/i.test(path)) return false;
  const p = path.split('?')[0]!;
  return !p.split('/').some((seg) => seg === '.' || seg === '..');
}

/** The Host header names the target (its port may be left out only when it is the default one). */
function hostHeaderMatches(header: string | undefined, host: CanonHost, port: number, defaultPort: number): boolean {
  if (header === undefined) return false;
  const a = parseAuthority(header, defaultPort);
  if (!a || a.port !== port) return false;
  if (!header.includes(':') && port !== defaultPort) return false;
  if (header.startsWith('[') && !header.includes(']:') && port !== defaultPort) return false;
  return a.host.kind === host.kind && (a.host.kind === 'name' ? a.host.name === (host as { name: string }).name : a.host.addr === (host as { addr: string }).addr);
}

function decideRequest(rules: EgressRule[], req: EgressRequest, at: { host: CanonHost; port: number }, defaultPort: number): EgressDecision {
  const method = req.method;
  if (method === 'TRACE' || method === 'TRACK' || method === 'CONNECT' || !(EGRESS_METHODS as readonly string[]).includes(method)) return deny('method_not_allowed', at);
  if (!hostHeaderMatches(req.hostHeader, at.host, at.port, defaultPort)) return deny('host_mismatch', at);
  if (!plainPath(req.path)) return deny('path_not_allowed', at);
  const upgrade = req.upgrade?.trim().toLowerCase();
  if (upgrade !== undefined && upgrade !== 'websocket') return deny('upgrade_refused', at);
  const byMethod = rules.filter((r) => methodsOf(r).includes(method as EgressMethod));
  if (byMethod.length === 0) return deny('method_not_allowed', at, rules[0]);
  const bare = req.path.split('?')[0]!;
  const byPath = byMethod.filter((r) => r.paths === undefined || r.paths.some((p) => bare.startsWith(p)));
  if (byPath.length === 0) return deny('path_not_allowed', at, byMethod[0]);
  const rule = upgrade === undefined ? byPath[0] : byPath.find((r) => r.websocket);
  if (!rule) return deny('upgrade_refused', at, byPath[0]);
  return { allow: true, host: at.host, port: at.port, mode: 'plain', rule, candidates: byPath };
}

/** The one decision (see the header). `grant` absent or without rules: nothing is allowed. */
export function decideEgress(grant: EgressGrant | undefined, policy: EgressPolicyView, q: EgressQuery): EgressDecision {
  const target = parseAuthority(q.authority, q.via === 'absolute' ? 80 : undefined);
  if (!target) return deny(q.via === 'connect' && canonicalHost(q.authority) ? 'bad_request' : 'bad_host');
  const at = { host: target.host, port: target.port };
  if (policy.denyHosts.some((d) => {
    const p = parsePattern(d);
    return p !== null && patternMatches(p, target.host);
  })) return deny('host_denied', at);
  const byHost = (grant?.rules ?? []).filter((r) => ruleMatchesHost(r, target.host));
  if (byHost.length === 0) return deny('host_not_allowed', at);
  const candidates = byHost.filter((r) => r.ports.includes(target.port));
  if (candidates.length === 0) return deny('port_not_allowed', at, byHost[0]);
  const allow = (mode: EgressMode, rule: EgressRule, cs: EgressRule[]): EgressDecision => ({ allow: true, host: at.host, port: at.port, mode, rule, candidates: cs });

  if (q.via === 'absolute') {
    // The client asked the proxy to speak HTTP for it: plain requests, each one decided.
    const plain = candidates.filter((r) => r.scheme === 'http' || r.scheme === 'tcp');
    if (plain.length === 0) return deny('scheme_not_allowed', at, candidates[0]);
    if (!q.request) return allow('plain', plain[0]!, plain);
    return decideRequest(plain, q.request, at, 80);
  }
  const raw = candidates.find((r) => r.scheme === 'tcp');
  if (raw) return allow('raw', raw, [raw]);
  if (!q.first) return allow('pending', candidates[0]!, candidates);
  if (q.first.kind === 'tls') {
    const tls = candidates.filter((r) => r.scheme === 'https');
    if (tls.length === 0) return deny('scheme_not_allowed', at, candidates[0]);
    if (q.first.ech) return deny('ech_refused', at, tls[0]);
    // A name must be sent as SNI and be the CONNECT's; an IP literal is never sent as SNI (RFC 6066).
    if (target.host.kind === 'name') {
      if (q.first.sni === null) return deny('no_sni', at, tls[0]);
      const sni = canonicalHost(q.first.sni);
      if (!sni || sni.kind !== 'name' || sni.name !== target.host.name) return deny('sni_mismatch', at, tls[0]);
    } else if (q.first.sni !== null) return deny('sni_mismatch', at, tls[0]);
    const tunnel = tls.find((r) => r.tls === 'tunnel');
    if (tunnel) return allow('tunnel', tunnel, [tunnel]);
    if (!q.request) return allow('inspect', tls[0]!, tls);
    const d = decideRequest(tls, q.request, at, 443);
    return d.allow ? { ...d, mode: 'inspect' } : d;
  }
  const plain = candidates.filter((r) => r.scheme === 'http');
  if (plain.length === 0) return deny('scheme_not_allowed', at, candidates[0]);
  if (!q.request) return allow('plain', plain[0]!, plain);
  return decideRequest(plain, q.request, at, 80);
}

/** The rules a lease's tunnel on this mode may check requests against (inspect and plain see requests). */
export function requestRules(rules: readonly EgressRule[]): EgressRule[] {
  return rules.filter(ruleSeesRequests);
}
