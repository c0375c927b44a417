/**
 * The egress vocabulary: a lease's `egress` field (rules and budgets), what a spawn may ask
 * for, the gate's closed set of refusal reasons and the content-free summary a run keeps.
 * Plain data; lease/ declares the schemas against these types and holds the one decision
 * (`decideEgress`), egress/ the gate that applies it.
 *
 * A jail never has a network (INV-2); a lease with egress rules reaches exactly the hosts they
 * name, through the per-run egress socket, where the supervisor decides (docs/egress.md).
 */

/**
 * How a rule's traffic is carried. `https`: a CONNECT tunnel whose first bytes must be a TLS
 * ClientHello naming the host; `http`: plain HTTP/1.1 (absolute-form, or inside a CONNECT),
 * every request inspected; `tcp`: an opaque stream to exact hosts and ports only.
 */
export const EGRESS_SCHEMES = ['https', 'http', 'tcp'] as const;
export type EgressScheme = (typeof EGRESS_SCHEMES)[number];

/** For `https`: `tunnel` checks the ClientHello's SNI and relays bytes; `inspect` terminates TLS with a per-run CA and checks every request. */
export const EGRESS_TLS = ['tunnel', 'inspect'] as const;
export type EgressTls = (typeof EGRESS_TLS)[number];

/** Methods a rule may allow where requests are seen (inspect, http). TRACE, TRACK and CONNECT are never among them. */
export const EGRESS_METHODS = ['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type EgressMethod = (typeof EGRESS_METHODS)[number];

/**
 * One egress rule. `id` always comes from the operator's policy (a child's narrowed copy takes
 * the id of the policy rule that contains it), so nothing a child writes lands in the ledger
 * as a rule id.
 */
export interface EgressRule {
  id: string;
  /** Exact names (`api.example.com`), leftmost-label wildcards (`*.example.com`: any name under it, not itself), or IP literals. */
  hosts: string[];
  ports: number[];
  scheme: EgressScheme;
  /** Meaningful for `https` only; `http` is always inspected, `tcp` never. */
  tls: EgressTls;
  /** Where requests are seen (inspect, http): the methods allowed; absent: every method of EGRESS_METHODS. */
  methods?: EgressMethod[];
  /** Where requests are seen: path prefixes (each starts with `/`); absent: any path. */
  paths?: string[];
  /** An `Upgrade: websocket` request may pass (inspect, http). */
  websocket: boolean;
  /** An operator-defined credential binding injected on inspected requests to the binding's hosts. */
  credential?: string;
}

/** Budgets of one lease; each counts the lease's own connections and every descendant's. */
export interface EgressBudgets {
  /** Connections over the lease's lifetime. */
  connections: number;
  /** Connections open at once. */
  concurrent: number;
  bytesUp: number;
  bytesDown: number;
  /** One request body, where requests are seen. */
  requestBodyMax: number;
  /** Distinct host names resolved. */
  dnsNames: number;
  /** A connection with no byte either way for this long is closed. */
  idleMs: number;
  /** A connection open this long is closed. */
  lifetimeMs: number;
}
export const EGRESS_BUDGET_KEYS = ['connections', 'concurrent', 'bytesUp', 'bytesDown', 'requestBodyMax', 'dnsNames', 'idleMs', 'lifetimeMs'] as const satisfies readonly (keyof EgressBudgets)[];

/** A lease's egress: rules (none: no egress at all) and budgets. */
export interface EgressGrant {
  rules: EgressRule[];
  budgets: EgressBudgets;
}

/**
 * A rule as a spawn asks for it: a policy rule's id (`pypi`), or a rule that must fit inside
 * one rule the parent holds (narrower hosts, ports, methods, paths; tunnel → inspect; the
 * parent's credential or none). A child never names a credential its parent's rule lacks.
 */
export type EgressRuleAsk =
  | string
  | {
      hosts: string[];
      ports?: number[] | undefined;
      scheme?: EgressScheme | undefined;
      tls?: EgressTls | undefined;
      methods?: EgressMethod[] | undefined;
      paths?: string[] | undefined;
      websocket?: boolean | undefined;
      credential?: string | undefined;
    };

/** What a spawn asks for. Egress is never inherited: no ask, no egress. */
export interface EgressAsk {
  rules: EgressRuleAsk[];
  budgets?: Partial<EgressBudgets> | undefined;
}

/**
 * Why the gate refused a connection or a request (its 403's `X-Brig-Egress` header, the
 * ledger's `reason`). A closed set: every refusal is one of these.
 */
export const EGRESS_DENY_REASONS = [
  'bad_request', // not a proxy request brig serves (origin-form to the proxy, an https:// absolute URI, a malformed line)
  'bad_host', // a host that is not a plain ASCII name or IP literal (non-ASCII, percent-encoded, empty label, zone id, …)
  'host_not_allowed', // no rule names the host
  'port_not_allowed', // a rule names the host, none on this port
  'scheme_not_allowed', // a rule names host and port, but not for this kind of traffic (TLS, plain HTTP, an opaque stream)
  'host_denied', // on the operator's deny list
  'address_not_allowed', // a resolved address (or the literal) is not a public one: private, loopback, link-local, CGNAT, metadata, the host's own, …
  'dns_failed', // the name did not resolve (or not in time)
  'upstream_unreachable', // the vetted address did not accept the connection
  'upstream_tls_failed', // inspect: the upstream's certificate did not verify for the host (the gate re-originates TLS and checks it)
  'no_sni', // a TLS ClientHello without a server name
  'sni_mismatch', // the ClientHello names another host than the CONNECT
  'ech_refused', // a ClientHello with Encrypted Client Hello (its real name is hidden)
  'not_tls', // an https rule's tunnel did not start with a TLS ClientHello
  'hello_timeout', // no ClientHello (or first request) in time
  'host_mismatch', // an inspected request's Host is not the tunnel's host (421)
  'method_not_allowed', // the rule does not allow this method (TRACE and TRACK never)
  'path_not_allowed', // the path is outside the rule's prefixes, or not a plain origin-form path
  'upgrade_refused', // Upgrade (h2c always; websocket unless the rule allows it)
  'body_too_large', // a request body over requestBodyMax
  'credential_leak', // a request carrying a bound secret (or its placeholder) to a host it is not bound to
  'credential_unavailable', // the rule's binding is not defined, or its secret is not in the supervisor's environment
  'response_unscannable', // a response to a request the secret was injected into came encoded (it cannot be scanned for the secret's echo)
  'budget_exhausted', // a connection, concurrency, byte or name budget of the lease or an ancestor is spent
  'lease_revoked', // the lease is revoked or expired
  'idle', // no byte either way for idleMs
  'lifetime', // open past lifetimeMs
] as const;
export type EgressDenyReason = (typeof EGRESS_DENY_REASONS)[number];

/** The class of an address the gate resolved: `global` and `test_public` are dialled, and `allowed_private` only under the operator's allowPrivateCidrs. */
export const EGRESS_ADDRESS_CLASSES = [
  'global',
  'test_public', // egress.testPublicCidrs: a loopback address a test treats as public
  'allowed_private', // policy egress.allowPrivateCidrs
  'unspecified',
  'loopback',
  'private',
  'link_local',
  'cgnat',
  'metadata',
  'multicast',
  'reserved',
  'documentation',
  'host_own', // an address of one of this host's interfaces
  'operator_denied', // policy egress.denyCidrs
] as const;
export type EgressAddressClass = (typeof EGRESS_ADDRESS_CLASSES)[number];

/** A run's egress, content-free: what `brig explain` and the console show (the ledger has each connection). */
export interface EgressSummary {
  connections: number;
  refused: number;
  bytesUp: number;
  bytesDown: number;
  /** Per rule id: connections and bytes. */
  byRule: Record<string, { connections: number; bytesUp: number; bytesDown: number }>;
  /** Per refusal reason: how many. */
  byReason: Partial<Record<EgressDenyReason, number>>;
}

/** Inside the jail: the relay's address and the files the gate puts beside the broker socket. */
export const EGRESS_JAIL = {
  /** The relay listens here, on the jail's own loopback. */
  proxyHost: '127.0.0.1',
  proxyPort: 3128,
  /** The egress socket, beside broker.sock. */
  socket: '/run/brig/egress.sock',
  /** The per-run CA (inspect rules) with the host's roots: what the CA variables name. */
  caBundle: '/run/brig/egress-ca.pem',
} as const;
