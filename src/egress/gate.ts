/**
 * The egress gate: one unix socket per run with egress (`egress.sock` beside `broker.sock`),
 * speaking the HTTP proxy protocol; the only way a jail's bytes reach a network.
 *
 * Guarantees (INV-2 stays: the jail has no network; this is the door its lease names): every
 * CONNECT and every absolute-form request is decided by lease/'s `decideEgress` on the lease's
 * rules before any name is resolved, so a host no rule names causes zero DNS queries; a tunnel
 * is answered 200 and then its first bytes must be a TLS ClientHello whose SNI is the CONNECT
 * host, without ECH (else refused and closed before anything is dialled); names are resolved
 * by the gate's own resolver (A and AAAA), every answer classified (classify.ts) and the name
 * refused when any answer is not public; the address checked is the address dialled (no second
 * lookup); a plain-HTTP request is forwarded once, its response relayed as is — a redirect is
 * the client's next request, decided again; TRACE/TRACK, h2c and unasked upgrades refused; a
 * refusal is an immediate `403` with `X-Brig-Egress: <reason>` (never a connection that looks
 * open); budgets: connections over the lease's life, concurrent connections, bytes up and down,
 * distinct names, idle and lifetime limits. Ledger, content-free: `egress.conn` at close
 * (rule, canonical host, port, mode, address class, bytes, duration, requests by method) and
 * `egress.deny` at once (a denied host only as its last two labels, its length and a short
 * hash). Closing a run (end, kill, revoke) destroys its open connections.
 * `tls: inspect`: the tunnel's TLS is terminated with a leaf of the run's own CA (run-ca.ts; its
 * key never leaves memory; ALPN http/1.1 only), every request on it decided (Host, method, path)
 * and re-originated once over TLS verified for the host. Credential bindings (credentials.ts)
 * ride on inspect: the secret injected on its own hosts and paths, a request carrying it (or the
 * run's placeholder) anywhere else refused, its echo masked in the response. A websocket (a
 * rule with `websocket: true`): `ws://` as an absolute-form upgrade and `wss://` on an inspected
 * connection, the handshake decided, then the frames piped unread within the budgets. Plain
 * HTTP inside a CONNECT to an http rule: every request on the tunnel decided as on an inspected
 * connection, forwarded as plain HTTP to the vetted address.
 * Threat: a hostile child choosing every byte it sends, a hostile DNS answer. Trusts: the lease
 * as issued, the operator's resolvers. Fails closed: any error is a refusal or a close.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import type { EgressAddressClass, EgressBudgets, EgressDenyReason, EgressGrant, EgressRule } from '../protocol/index.js';
import { decideEgress, hostText, parseAbsoluteTarget, type CanonHost, type EgressDecision, type EgressPolicyView, type EgressQuery } from '../lease/index.js';
import type { LedgerEvent } from '../ledger/index.js';
import { readFirstBytes } from './client-hello.js';
import { DIALLABLE } from './classify.js';
import { listenOn } from '../util/listen.js';
import { RunCa } from './run-ca.js';
import { bindingCovers, bindingsOf, carried, CLIENT_CREDENTIAL_HEADERS, leakNeedles, maskText, NeedleScan, placeholderFor, type EgressCredential } from './credentials.js';

export interface EgressResolver {
  resolve4(name: string): Promise<string[]>;
  resolve6(name: string): Promise<string[]>;
}

export interface EgressGateDeps {
  ledger: { append(ev: LedgerEvent): void };
  resolver: EgressResolver;
  classify: (addr: string) => EgressAddressClass;
  policy: EgressPolicyView;
  now?: () => number;
  /** How a vetted address is dialled (tests spy on it). */
  dial?: (addr: string, port: number) => net.Socket;
  /** After listen: hand the socket to the jail's user (broker's grantRunSocket rules). */
  grantSocket?: (dir: string, socketPath: string) => Promise<void>;
  helloTimeoutMs?: number;
  /** Extra roots the gate trusts when it re-originates an inspected connection (PEM; egress.upstreamCaFile), beside the system's. */
  upstreamCa?: string;
  /** The operator's credential bindings by name (policy egress.credentials, each secret from the supervisor's environment). */
  credentials?: Readonly<Record<string, EgressCredential>>;
}

export interface EgressRunArgs {
  runId: string;
  leaseId: string;
  dir: string;
  grant: EgressGrant;
  /** Each ancestor lease's budgets, nearest first: this run's connections and bytes count against them too. */
  ancestors?: { leaseId: string; budgets: EgressBudgets }[];
}

/** What one lease (with all its descendants) has used: budgets bind across the tree. */
interface Usage {
  budgets: EgressBudgets;
  connections: number;
  open: number;
  bytesUp: number;
  bytesDown: number;
}

export interface EgressRunHandle {
  socketPath: string;
  close(reason?: 'ended' | 'lease_revoked'): Promise<void>;
}

interface RunUse {
  args: EgressRunArgs;
  server: http.Server;
  sockets: Set<net.Socket>;
  connections: number;
  open: number;
  bytesUp: number;
  bytesDown: number;
  names: Set<string>;
  closed: boolean;
  /** This lease's usage, then each ancestor's (shared with the runs under it). */
  chain: Usage[];
  /** A lease with an inspect rule: its CA (key in memory only) and the server its terminated connections are handed to. */
  ca?: RunCa;
  inspector?: http.Server;
  /** What a request to each host must not carry (credentials.ts leakNeedles), worked out once per host for the run. */
  needles: Map<string, { binding: string; needle: Buffer }[]>;
}

/** One terminated (inspected) connection: what every request on it is decided and forwarded against. */
interface InspectConn {
  authority: string;
  /** The tunnel's first bytes: a ClientHello (inspect: the gate terminates TLS) or an HTTP request (plain HTTP inside a CONNECT). */
  first: { kind: 'tls'; sni: string | null; ech: boolean } | { kind: 'http' };
  host: CanonHost;
  port: number;
  addr: string;
  cls: EgressAddressClass;
  rule: EgressRule;
  t0: number;
  bytesUp: number;
  bytesDown: number;
  requests: number;
  methods: Set<string>;
  statusClasses: Set<string>;
  closedBy: string;
  /** Requests the binding's secret was set on. */
  injected: number;
}

const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'http2-settings']);
const CA_FILE = 'egress-ca.pem';
/** Whether a grant needs the per-run CA. */
export const grantInspects = (g: EgressGrant): boolean => g.rules.some((r) => r.scheme === 'https' && r.tls === 'inspect');

const SOCKET = 'egress.sock';
const MAX_HEADER = 64 * 1024;

/** A denied host as the ledger keeps it: never verbatim (the name itself may be the data). */
export function deniedHostDigest(raw: string): { hostTail: string; hostLen: number; hostHash: string } {
  const labels = raw.toLowerCase().split('.').filter((l) => l !== '');
  const tail = labels.slice(-2).join('.').replace(/[^a-z0-9.-]/g, '?').slice(0, 64);
  return { hostTail: tail, hostLen: raw.length, hostHash: crypto.createHash('sha256').update(raw).digest('hex').slice(0, 16) };
}

function refuseRaw(s: net.Socket, reason: EgressDenyReason, status = 403): void {
  const text = status === 421 ? 'Misdirected Request' : status === 405 ? 'Method Not Allowed' : status === 400 ? 'Bad Request' : status === 502 ? 'Bad Gateway' : 'Forbidden';
  const body = `brig egress: ${reason}\n`;
  if (!s.destroyed && s.writable) s.end(`HTTP/1.1 ${status} ${text}\r\nX-Brig-Egress: ${reason}\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
  setTimeout(() => s.destroy(), 1000).unref();
}

const fbTls = (b: Buffer): { kind: 'tls'; sni: string | null; ech: boolean } | null => {
  const f = readFirstBytes(b);
  return f.kind === 'tls' ? f : null;
};

const statusOf = (r: EgressDenyReason): number => (r === 'host_mismatch' ? 421 : r === 'dns_failed' || r === 'upstream_unreachable' ? 502 : r === 'bad_request' ? 400 : 403);

export class EgressGate {
  readonly #d: Required<Omit<EgressGateDeps, 'grantSocket' | 'upstreamCa'>> & Pick<EgressGateDeps, 'grantSocket' | 'upstreamCa'>;
  readonly #runs = new Map<string, RunUse>();
  readonly #usage = new Map<string, Usage>();

  constructor(deps: EgressGateDeps) {
    this.#d = {
      now: () => Date.now(),
      dial: (addr, port) => net.connect({ host: addr, port, family: net.isIPv6(addr) ? 6 : 4 }),
      helloTimeoutMs: 10_000,
      credentials: {},
      ...deps,
    };
  }

  /**
   * The environment a run's child gets for its lease's bindings that ask for one: each
   * binding's placeholderEnv set to the run's placeholder (never the secret). Empty without.
   */
  placeholders(runId: string, grant: EgressGrant): Record<string, string> {
    const env: Record<string, string> = {};
    for (const b of bindingsOf(grant, this.#d.credentials)) if (b.placeholderEnv !== undefined) env[b.placeholderEnv] = placeholderFor(b, runId);
    return env;
  }

  /** A request carrying a bound secret or placeholder to a host its binding does not cover: refused and ledgered (the binding's name only). */
  #leak(use: RunUse, host: CanonHost, headers: NodeJS.Dict<string | string[]>, target: string): { binding: string | null; scan: NeedleScan; bindingAt(i: number): string } {
    const key = hostText(host);
    let needles = use.needles.get(key);
    if (!needles) use.needles.set(key, (needles = leakNeedles(this.#d.credentials, use.args.runId, host)));
    const binding = carried(needles, headers, target) ?? null;
    return { binding, scan: new NeedleScan(needles.map((n) => n.needle)), bindingAt: (i) => needles[i]?.binding ?? 'unknown' };
  }

  /**
   * The rule's credential binding on one request: none; refused (`credential_unavailable`: the
   * binding is undefined, or covers this host and path and the supervisor holds no secret); or
   * the headers to drop (every client credential header and the binding's own) and, where the
   * binding covers host and path, the header to set and the secret to mask in what comes back.
   */
  #credential(rule: EgressRule, host: CanonHost, path: string): { refused: true } | { refused: false; drop(k: string): boolean; set?: [string, string]; mask: Buffer[] } {
    if (rule.credential === undefined) return { refused: false, drop: () => false, mask: [] };
    const b = this.#d.credentials[rule.credential];
    if (!b) return { refused: true };
    const drop = (k: string) => CLIENT_CREDENTIAL_HEADERS.has(k) || k === b.header;
    if (!bindingCovers(b, host, path)) return { refused: false, drop, mask: [] };
    const secret = b.secret();
    if (secret === undefined) return { refused: true };
    return { refused: false, drop, set: [b.header, b.format.replaceAll('{}', secret)], mask: [Buffer.from(secret)] };
  }

  #leakDenied(use: RunUse, host: CanonHost, port: number, ruleId: string, binding: string): void {
    this.#d.ledger.append({ type: 'egress.deny', runId: use.args.runId, leaseId: use.args.leaseId, reason: 'credential_leak', host: hostText(host), ruleId, port, credential: binding });
  }

  async openRun(a: EgressRunArgs): Promise<EgressRunHandle> {
    if (this.#runs.has(a.runId)) throw new Error(`run ${a.runId} already has an egress socket`);
    const socketPath = path.join(a.dir, SOCKET);
    await fs.promises.rm(socketPath, { force: true });
    const server = http.createServer({ maxHeaderSize: MAX_HEADER, requestTimeout: 60_000 });
    const usage = (leaseId: string, budgets: EgressBudgets): Usage => {
      let u = this.#usage.get(leaseId);
      if (!u) this.#usage.set(leaseId, (u = { budgets, connections: 0, open: 0, bytesUp: 0, bytesDown: 0 }));
      return u;
    };
    const chain = [usage(a.leaseId, a.grant.budgets), ...(a.ancestors ?? []).map((x) => usage(x.leaseId, x.budgets))];
    const use: RunUse = { args: a, server, sockets: new Set(), connections: 0, open: 0, bytesUp: 0, bytesDown: 0, names: new Set(), closed: false, chain, needles: new Map() };
    server.on('connection', (s: net.Socket) => {
      use.sockets.add(s);
      s.once('close', () => use.sockets.delete(s));
    });
    server.on('connect', (req: http.IncomingMessage, s: net.Socket, head: Buffer) => void this.#connect(use, req, s, head).catch(() => s.destroy()));
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => void this.#plain(use, req, res).catch(() => res.destroy()));
    server.on('upgrade', (req: http.IncomingMessage, s: net.Socket, head: Buffer) => void this.#plainUpgrade(use, req, s, head).catch(() => s.destroy()));
    server.on('clientError', (_e, s: net.Socket) => refuseRaw(s, 'bad_request', 400));
    if (grantInspects(a.grant)) this.#openInspect(use);
    await listenOn(server, socketPath);
    if (this.#d.grantSocket) await this.#d.grantSocket(a.dir, socketPath);
    else await fs.promises.chmod(socketPath, 0o600);
    this.#runs.set(a.runId, use);
    this.#d.ledger.append({ type: 'egress.opened', runId: a.runId, leaseId: a.leaseId, rules: [...new Set(a.grant.rules.map((r) => r.id))] });
    return { socketPath, close: (reason) => this.closeRun(a.runId, reason) };
  }

  /** Stops accepting and destroys every open connection of the run (its end, a kill, a revoked lease). */
  async closeRun(runId: string, reason: 'ended' | 'lease_revoked' = 'ended'): Promise<void> {
    const use = this.#runs.get(runId);
    if (!use) return;
    this.#runs.delete(runId);
    use.closed = true;
    for (const s of use.sockets) s.destroy();
    use.inspector?.closeAllConnections();
    await new Promise<void>((resolve) => use.server.close(() => resolve()));
    await fs.promises.rm(path.join(use.args.dir, SOCKET), { force: true }).catch(() => {});
    if (use.ca) await fs.promises.rm(path.join(use.args.dir, CA_FILE), { force: true }).catch(() => {});
    this.#d.ledger.append({ type: 'egress.closed', runId, leaseId: use.args.leaseId, reason, connections: use.connections, bytesUp: use.bytesUp, bytesDown: use.bytesDown });
  }

  async close(): Promise<void> {
    await Promise.all([...this.#runs.keys()].map((id) => this.closeRun(id)));
  }

  #deny(use: RunUse, rawHost: string, reason: EgressDenyReason, d?: EgressDecision, extra: Record<string, string | number> = {}): void {
    const allowedHost = d && !d.allow && d.rule && d.host ? { host: hostText(d.host), ruleId: d.rule.id } : undefined;
    this.#d.ledger.append({
      type: 'egress.deny',
      runId: use.args.runId,
      leaseId: use.args.leaseId,
      reason,
      ...(allowedHost ?? deniedHostDigest(rawHost.replace(/:\d+$/, ''))),
      ...(d?.port !== undefined ? { port: d.port } : {}),
      ...extra,
    });
  }

  /** Budget check for a new connection (its name counted once resolved). */
  #budget(use: RunUse): boolean {
    return use.chain.every((u) => u.connections < u.budgets.connections && u.open < u.budgets.concurrent && u.bytesUp < u.budgets.bytesUp && u.bytesDown < u.budgets.bytesDown);
  }

  /** Counts against this lease and every ancestor; false when any budget is now spent. */
  #count(use: RunUse, k: 'connections' | 'open' | 'bytesUp' | 'bytesDown', n: number): boolean {
    use[k] += n;
    let within = true;
    for (const u of use.chain) {
      u[k] += n;
      const cap = k === 'open' ? u.budgets.concurrent : u.budgets[k];
      if (u[k] > cap) within = false;
    }
    return within;
  }

  /** Resolve once, classify every answer; the address to dial, or why not. */
  async #vet(use: RunUse, host: CanonHost): Promise<{ addr: string; cls: EgressAddressClass } | { reason: EgressDenyReason; cls?: EgressAddressClass }> {
    let addrs: string[];
    if (host.kind !== 'name') addrs = [host.addr];
    else {
      if (!use.names.has(host.name) && use.names.size >= use.args.grant.budgets.dnsNames) return { reason: 'budget_exhausted' };
      use.names.add(host.name);
      const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 2000).unref());
      const settle = (p: Promise<string[]>) => p.catch(() => [] as string[]);
      const got = await Promise.race([Promise.all([settle(this.#d.resolver.resolve4(host.name)), settle(this.#d.resolver.resolve6(host.name))]), timeout]);
      if (got === 'timeout') return { reason: 'dns_failed' };
      addrs = [...got[0], ...got[1]];
      if (addrs.length === 0) return { reason: 'dns_failed' };
    }
    let first: { addr: string; cls: EgressAddressClass } | undefined;
    for (const a of addrs) {
      const cls = this.#d.classify(a);
      if (!DIALLABLE.has(cls)) return { reason: 'address_not_allowed', cls };
      first ??= { addr: a, cls };
    }
    return first!;
  }

  #dial(addr: string, port: number): Promise<net.Socket | null> {
    return new Promise((resolve) => {
      const up = this.#d.dial(addr, port);
      const fail = () => {
        up.destroy();
        resolve(null);
      };
      up.once('error', fail);
      up.setTimeout(10_000, fail);
      up.once('connect', () => {
        up.off('error', fail);
        up.setTimeout(0);
        resolve(up);
      });
    });
  }

  /** Pipes both ways with counters and limits; one ledger record at close. */
  #pipe(use: RunUse, down: net.Socket, up: net.Socket, first: Buffer, meta: { rule: EgressRule; host: CanonHost; port: number; mode: string; cls: EgressAddressClass }): void {
    const b = use.args.grant.budgets;
    const t0 = this.#d.now();
    let bytesUp = 0;
    let bytesDown = 0;
    let why: EgressDenyReason | 'closed' = 'closed';
    const end = (r: EgressDenyReason | 'closed') => {
      if (why === 'closed') why = r;
      down.destroy();
      up.destroy();
    };
    const countUp = (n: number) => {
      bytesUp += n;
      if (!this.#count(use, 'bytesUp', n)) end('budget_exhausted');
    };
    if (first.length > 0) {
      countUp(first.length);
      up.write(first);
    }
    down.on('data', (c: Buffer) => countUp(c.length));
    up.on('data', (c: Buffer) => {
      bytesDown += c.length;
      if (!this.#count(use, 'bytesDown', c.length)) end('budget_exhausted');
    });
    down.pipe(up);
    up.pipe(down);
    down.setTimeout(b.idleMs, () => end('idle'));
    const life = setTimeout(() => end('lifetime'), b.lifetimeMs);
    life.unref();
    let done = false;
    const closed = () => {
      if (done) return;
      done = true;
      clearTimeout(life);
      this.#count(use, 'open', -1);
      down.destroy();
      up.destroy();
      this.#d.ledger.append({
        type: 'egress.conn',
        runId: use.args.runId,
        leaseId: use.args.leaseId,
        ruleId: meta.rule.id,
        host: hostText(meta.host),
        port: meta.port,
        scheme: meta.rule.scheme,
        mode: meta.mode,
        addrClass: meta.cls,
        decision: 'allow',
        closedBy: use.closed ? 'run_closed' : why,
        bytesUp,
        bytesDown,
        durationMs: this.#d.now() - t0,
      });
    };
    down.once('close', closed);
    up.once('close', closed);
    down.on('error', () => end('closed'));
    up.on('error', () => end('closed'));
  }

  async #connect(use: RunUse, req: http.IncomingMessage, s: net.Socket, head: Buffer): Promise<void> {
    const authority = req.url ?? '';
    const q: EgressQuery = { authority, via: 'connect' };
    const d0 = decideEgress(use.args.grant, this.#d.policy, q);
    if (!d0.allow) {
      this.#deny(use, authority, d0.reason, d0);
      return refuseRaw(s, d0.reason, statusOf(d0.reason));
    }
    if (use.closed) return refuseRaw(s, 'lease_revoked');
    if (!this.#budget(use)) {
      this.#deny(use, authority, 'budget_exhausted', { ...d0, allow: false, reason: 'budget_exhausted' } as EgressDecision);
      return refuseRaw(s, 'budget_exhausted');
    }
    this.#count(use, 'connections', 1);
    this.#count(use, 'open', 1);
    let counted = true;
    const release = () => {
      if (counted) this.#count(use, 'open', -1);
      counted = false;
    };
    let decision: EgressDecision = d0;
    let first = head;
    if (d0.mode !== 'raw') {
      // Answer 200, then read the tunnel's first bytes before anything is resolved or dialled.
      s.write('HTTP/1.1 200 Connection established\r\n\r\n');
      const got = await this.#firstBytes(s, head);
      if (got.kind === 'timeout' || got.kind === 'closed') {
        release();
        this.#deny(use, authority, 'hello_timeout', { allow: false, reason: 'hello_timeout', host: d0.host, port: d0.port, rule: d0.rule });
        return void s.destroy();
      }
      first = got.buf;
      const fb = readFirstBytes(first);
      const q2: EgressQuery = fb.kind === 'tls' ? { ...q, first: { kind: 'tls', sni: fb.sni, ech: fb.ech } } : fb.kind === 'http' ? { ...q, first: { kind: 'http' } } : q;
      decision = fb.kind === 'not_tls' || fb.kind === 'need_more' ? { allow: false, reason: 'not_tls', host: d0.host, port: d0.port, rule: d0.rule } : decideEgress(use.args.grant, this.#d.policy, q2);
      // A tunnel, an inspected TLS connection (with the run's CA) or plain HTTP requests (each decided); nothing else.
      if (decision.allow && decision.mode !== 'tunnel' && !(decision.mode === 'inspect' && use.ca) && !(decision.mode === 'plain' && fb.kind === 'http')) decision = { allow: false, reason: 'scheme_not_allowed', host: d0.host, port: d0.port, rule: decision.rule };
      if (!decision.allow) {
        release();
        this.#deny(use, authority, decision.reason, decision);
        // The tunnel is open: a TLS client sees a closed connection; nothing was dialled.
        return void s.destroy();
      }
    }
    const vet = await this.#vet(use, decision.host);
    if (!('addr' in vet)) {
      release();
      this.#deny(use, authority, vet.reason, decision, vet.cls ? { addrClass: vet.cls } : {});
      if (d0.mode === 'raw') return refuseRaw(s, vet.reason, statusOf(vet.reason));
      return void s.destroy();
    }
    if (decision.mode === 'inspect' && fbTls(first)) {
      counted = false; // the inspected connection's close releases it
      return this.#terminate(use, s, first, { authority, first: fbTls(first)!, host: decision.host, port: decision.port, addr: vet.addr, cls: vet.cls, rule: decision.rule });
    }
    if (decision.mode === 'plain' && readFirstBytes(first).kind === 'http') {
      counted = false;
      return this.#terminate(use, s, first, { authority, first: { kind: 'http' }, host: decision.host, port: decision.port, addr: vet.addr, cls: vet.cls, rule: decision.rule });
    }
    const up = await this.#dial(vet.addr, decision.port);
    if (!up || s.destroyed || use.closed) {
      release();
      up?.destroy();
      this.#deny(use, authority, use.closed ? 'lease_revoked' : 'upstream_unreachable', decision);
      if (d0.mode === 'raw') return refuseRaw(s, 'upstream_unreachable', 502);
      return void s.destroy();
    }
    if (d0.mode === 'raw') s.write('HTTP/1.1 200 Connection established\r\n\r\n');
    counted = false; // #pipe's close releases it
    this.#pipe(use, s, up, first, { rule: decision.rule, host: decision.host, port: decision.port, mode: decision.mode, cls: vet.cls });
  }

  /**
   * A lease with an inspect rule: a CA made now (its key never leaves this process), its
   * certificate with the system's roots written beside the socket (what the jail's CA
   * variables name), and the HTTP server its terminated connections are handed to.
   */
  #openInspect(use: RunUse): void {
    use.ca = new RunCa(use.args.runId, this.#d.now);
    const bundle = path.join(use.args.dir, CA_FILE);
    fs.writeFileSync(bundle, [use.ca.certPem, ...tls.rootCertificates].join('\n'), { mode: 0o644 });
    fs.chmodSync(bundle, 0o644);
    this.#inspectorOf(use);
  }

  /** The run's HTTP server its terminated connections (TLS, or plain HTTP inside a CONNECT) are handed to; made once. */
  #inspectorOf(use: RunUse): http.Server {
    if (use.inspector) return use.inspector;
    const srv = http.createServer({ maxHeaderSize: MAX_HEADER, requestTimeout: 60_000 });
    srv.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      const c = this.#conns.get(req.socket);
      if (!c) return void res.destroy();
      void this.#inspected(use, c, req, res).catch(() => res.destroy());
    });
    // Inside a terminated connection: no CONNECT; an upgrade only to a websocket a rule allows.
    srv.on('connect', (req: http.IncomingMessage, s: net.Socket) => this.#refuseInside(use, req, s, 'method_not_allowed'));
    srv.on('upgrade', (req: http.IncomingMessage, s: net.Socket, head: Buffer) => {
      const c = this.#conns.get(s);
      if (!c) return void s.destroy();
      void this.#inspectedUpgrade(use, c, req, s, head).catch(() => s.destroy());
    });
    srv.on('clientError', (_e, s: net.Socket) => refuseRaw(s, 'bad_request', 400));
    use.inspector = srv;
    return srv;
  }

  readonly #conns = new WeakMap<net.Socket, InspectConn>();

  #refuseInside(use: RunUse, _req: http.IncomingMessage, s: net.Socket, reason: EgressDenyReason): void {
    const c = this.#conns.get(s);
    if (c) this.#d.ledger.append({ type: 'egress.deny', runId: use.args.runId, leaseId: use.args.leaseId, reason, host: hostText(c.host), ruleId: c.rule.id, port: c.port });
    refuseRaw(s, reason);
  }

  /** Terminates the client's TLS with a leaf for the CONNECT host (ALPN pinned to http/1.1); each request on it is then decided and re-originated. */
  #terminate(use: RunUse, s: net.Socket, first: Buffer, m: Omit<InspectConn, 't0' | 'bytesUp' | 'bytesDown' | 'requests' | 'methods' | 'statusClasses' | 'closedBy' | 'injected'>): void {
    const isTls = m.first.kind === 'tls';
    const leaf = isTls ? use.ca?.leaf(hostText(m.host)) : undefined;
    if (isTls && (!leaf || !use.inspector)) {
      this.#count(use, 'open', -1);
      return void s.destroy();
    }
    const c: InspectConn = { ...m, t0: this.#d.now(), bytesUp: 0, bytesDown: 0, requests: 0, methods: new Set(), statusClasses: new Set(), closedBy: 'closed', injected: 0 };
    s.unshift(first);
    // Plain HTTP inside a CONNECT: the tunnel's own socket carries the requests, each decided as on an inspected one.
    const t: net.Socket = leaf ? new tls.TLSSocket(s, { isServer: true, key: leaf.key, cert: leaf.cert, ALPNProtocols: ['http/1.1'] }) : s;
    const inspector = this.#inspectorOf(use);
    this.#conns.set(t, c);
    use.sockets.add(t);
    const b = use.args.grant.budgets;
    t.setTimeout(b.idleMs, () => {
      c.closedBy = 'idle';
      t.destroy();
    });
    const life = setTimeout(() => {
      c.closedBy = 'lifetime';
      t.destroy();
    }, b.lifetimeMs);
    life.unref();
    let done = false;
    const closed = () => {
      if (done) return;
      done = true;
      clearTimeout(life);
      use.sockets.delete(t);
      this.#count(use, 'open', -1);
      s.destroy();
      this.#d.ledger.append({
        type: 'egress.conn', runId: use.args.runId, leaseId: use.args.leaseId, ruleId: c.rule.id, host: hostText(c.host), port: c.port, scheme: isTls ? 'https' : 'http', mode: isTls ? 'inspect' : 'plain',
        addrClass: c.cls, decision: 'allow', closedBy: use.closed ? 'run_closed' : c.closedBy, bytesUp: c.bytesUp, bytesDown: c.bytesDown, durationMs: this.#d.now() - c.t0,
        requests: c.requests, methods: [...c.methods], statusClasses: [...c.statusClasses],
        ...(c.rule.credential !== undefined ? { credential: c.rule.credential, credentialInjected: c.injected } : {}),
      });
    };
    t.once('close', closed);
    s.once('close', closed);
    t.on('error', () => t.destroy());
    s.on('error', () => t.destroy());
    inspector.emit('connection', t);
    if (!leaf) s.resume(); // #firstBytes paused it: the inspector's parser reads on
  }

  /** One request on an inspected connection: decided (Host, method, path against the rules), forwarded once over TLS verified to the host, its response relayed. */
  async #inspected(use: RunUse, c: InspectConn, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const request = { method: req.method ?? '', path: req.url ?? '', hostHeader: req.headers.host, upgrade: req.headers.upgrade ?? (req.headers['http2-settings'] !== undefined ? 'h2c' : undefined) };
    const d = decideEgress(use.args.grant, this.#d.policy, { authority: c.authority, via: 'connect', first: c.first, request });
    const refuse = (reason: EgressDenyReason, rule?: EgressRule) => {
      this.#d.ledger.append({ type: 'egress.deny', runId: use.args.runId, leaseId: use.args.leaseId, reason, host: hostText(c.host), ruleId: (rule ?? c.rule).id, port: c.port });
      res.writeHead(statusOf(reason), { 'X-Brig-Egress': reason, 'Content-Type': 'text/plain', Connection: 'close' });
      res.end(`brig egress: ${reason}\n`);
    };
    if (!d.allow) return refuse(d.reason, d.rule);
    if (use.closed) return refuse('lease_revoked');
    const b = use.args.grant.budgets;
    const len = Number(req.headers['content-length'] ?? 0);
    if (!(len <= b.requestBodyMax)) return refuse('body_too_large', d.rule);
    if (!use.chain.every((u) => u.bytesUp < u.budgets.bytesUp && u.bytesDown < u.budgets.bytesDown)) return refuse('budget_exhausted', d.rule);
    // Credentials: nothing bound goes to a host its binding does not cover; a rule naming a
    // binding gets the client's credential headers removed and the secret set on its own hosts and paths.
    const leak = this.#leak(use, c.host, req.headers, request.path);
    if (leak.binding !== null) {
      this.#leakDenied(use, c.host, c.port, d.rule.id, leak.binding);
      res.writeHead(403, { 'X-Brig-Egress': 'credential_leak', 'Content-Type': 'text/plain', Connection: 'close' });
      return void res.end('brig egress: credential_leak\n');
    }
    const cred = this.#credential(d.rule, c.host, request.path);
    if (cred.refused) return refuse('credential_unavailable', d.rule);
    c.requests++;
    c.methods.add(request.method);
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP.has(k) && !cred.drop(k)) headers[k] = v;
    if (req.headers['transfer-encoding'] !== undefined) headers['transfer-encoding'] = 'chunked';
    // The secret's echo is masked in the response: asked unencoded, so it can be scanned.
    const mask = cred.mask;
    if (cred.set) {
      headers[cred.set[0]] = cred.set[1];
      headers['accept-encoding'] = 'identity';
      c.injected++;
    }
    const name = c.host.kind === 'name' ? c.host.name : undefined;
    const opts: https.RequestOptions & tls.ConnectionOptions = {
      host: c.addr, port: c.port, method: request.method, path: request.path, headers, setHost: false, agent: false,
      ...(name ? { servername: name } : {}), ALPNProtocols: ['http/1.1'],
      ...(this.#d.upstreamCa ? { ca: [...tls.rootCertificates, this.#d.upstreamCa] } : {}),
      checkServerIdentity: (_h: string, cert: tls.PeerCertificate) => tls.checkServerIdentity(hostText(c.host), cert),
      timeout: b.idleMs,
    };
    // Plain HTTP inside a CONNECT goes on as plain HTTP to the same vetted address.
    const up = c.first.kind === 'tls' ? https.request(opts) : http.request({ host: c.addr, port: c.port, method: request.method, path: request.path, headers, setHost: false, agent: false, timeout: b.idleMs });
    let status = 0;
    up.on('response', (ur) => {
      const encoding = String(ur.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
      if (mask.length > 0 && encoding !== 'identity' && encoding !== '') {
        // An encoded body cannot be scanned for the secret: refused, never relayed.
        ur.destroy();
        this.#d.ledger.append({ type: 'egress.deny', runId: use.args.runId, leaseId: use.args.leaseId, reason: 'response_unscannable', host: hostText(c.host), ruleId: d.rule.id, port: c.port });
        res.writeHead(502, { 'X-Brig-Egress': 'response_unscannable', 'Content-Type': 'text/plain', Connection: 'close' });
        return void res.end('brig egress: response_unscannable\n');
      }
      status = ur.statusCode ?? 0;
      c.statusClasses.add(`${Math.floor(status / 100)}xx`);
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(ur.headers)) if (v !== undefined && !HOP.has(k)) out[k] = mask.length === 0 ? v : Array.isArray(v) ? v.map((x) => maskText(x, mask)) : maskText(v, mask);
      res.writeHead(status, out);
      const echo = new NeedleScan(mask, { mask: true });
      ur.on('data', (chunk: Buffer) => {
        c.bytesDown += chunk.length;
        if (!this.#count(use, 'bytesDown', chunk.length)) {
          c.closedBy = 'budget_exhausted';
          ur.destroy();
          req.socket.destroy();
          return;
        }
        if (!echo.empty) {
          const safe = echo.push(chunk)!;
          if (safe.length > 0 && !res.write(safe)) ur.pause();
        }
      });
      if (echo.empty) ur.pipe(res);
      else {
        res.on('drain', () => ur.resume());
        ur.once('end', () => res.end(echo.end()));
      }
    });
    res.once('close', () => up.destroy());
    up.on('timeout', () => up.destroy());
    up.on('error', (e: NodeJS.ErrnoException) => {
      if (status !== 0) return void req.socket.destroy();
      const reason: EgressDenyReason = /CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS|altname/i.test(`${e.code ?? ''} ${e.message}`) ? 'upstream_tls_failed' : 'upstream_unreachable';
      this.#d.ledger.append({ type: 'egress.deny', runId: use.args.runId, leaseId: use.args.leaseId, reason, host: hostText(c.host), ruleId: d.rule.id, port: c.port });
      if (!res.headersSent) {
        res.writeHead(502, { 'X-Brig-Egress': reason, Connection: 'close' });
        res.end(`brig egress: ${reason}\n`);
      }
    });
    this.#sendBody(req, up, leak.scan, b.requestBodyMax, {
      counted: (n) => {
        c.bytesUp += n;
        return this.#count(use, 'bytesUp', n);
      },
      stop: (why) => {
        c.closedBy = why;
        if (why === 'credential_leak') this.#leakDenied(use, c.host, c.port, d.rule.id, leak.bindingAt(leak.scan.foundAt));
        up.destroy();
        req.socket.destroy();
      },
    });
  }

  /**
   * A request body to the upstream: counted, capped at requestBodyMax, and scanned for bound
   * needles (held back by the longest one's length, so a needle split over two chunks never
   * leaves in part); pauses the client while the upstream is full.
   */
  #sendBody(req: http.IncomingMessage, up: http.ClientRequest, scan: NeedleScan, max: number, o: { counted(n: number): boolean; stop(why: 'body_too_large' | 'budget_exhausted' | 'credential_leak'): void }): void {
    let sent = 0;
    let stopped = false;
    req.on('data', (chunk: Buffer) => {
      if (stopped) return;
      sent += chunk.length;
      const within = o.counted(chunk.length);
      const why = sent > max ? 'body_too_large' : !within ? 'budget_exhausted' : null;
      const safe = why === null ? scan.push(chunk) : null;
      if (why !== null || safe === null) {
        stopped = true;
        return o.stop(why ?? 'credential_leak');
      }
      if (safe.length > 0 && !up.write(safe)) {
        req.pause();
        up.once('drain', () => req.resume());
      }
    });
    req.once('end', () => {
      if (!stopped) up.end(scan.end());
    });
  }

  /** A request head as the upstream gets it: the client's headers less the hop ones (Upgrade and Connection kept for the handshake). */
  #head(method: string, path: string, headers: Record<string, string | string[]>): Buffer {
    const lines = [`${method} ${path} HTTP/1.1`];
    for (const [k, v] of Object.entries(headers)) for (const x of Array.isArray(v) ? v : [v]) lines.push(`${k}: ${x.replace(/[\r\n]/g, '')}`);
    return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  }

  /** The client's headers for an upgrade: hop headers out, `connection: Upgrade` and its `upgrade` kept. */
  #upgradeHeaders(req: http.IncomingMessage, drop: (k: string) => boolean = () => false): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP.has(k) && !drop(k)) out[k] = v;
    out.connection = 'Upgrade';
    out.upgrade = String(req.headers.upgrade ?? 'websocket');
    return out;
  }

  /**
   * `ws://` through the proxy (an absolute-form GET with `Upgrade: websocket`): decided like any
   * plain request (the rule must allow websocket), the vetted address dialled, the handshake
   * forwarded once, then both ways piped with the connection's budgets — one `egress.conn` (mode
   * websocket) at close. The frames are not read; a bound needle in the handshake is refused.
   */
  async #plainUpgrade(use: RunUse, req: http.IncomingMessage, s: net.Socket, head: Buffer): Promise<void> {
    const target = parseAbsoluteTarget(req.url ?? '');
    if (!target) {
      this.#deny(use, '', 'bad_request');
      return refuseRaw(s, 'bad_request', 400);
    }
    const request = { method: req.method ?? '', path: target.path, hostHeader: req.headers.host, upgrade: req.headers.upgrade ?? (req.headers['http2-settings'] !== undefined ? 'h2c' : undefined) };
    const d = decideEgress(use.args.grant, this.#d.policy, { authority: target.authority, via: 'absolute', request });
    if (!d.allow) {
      this.#deny(use, target.authority, d.reason, d);
      return refuseRaw(s, d.reason, statusOf(d.reason));
    }
    if (use.closed) return refuseRaw(s, 'lease_revoked');
    const leak = this.#leak(use, d.host, req.headers, target.path);
    if (leak.binding !== null) {
      this.#leakDenied(use, d.host, d.port, d.rule.id, leak.binding);
      return refuseRaw(s, 'credential_leak');
    }
    if (!this.#budget(use)) {
      this.#deny(use, target.authority, 'budget_exhausted', { allow: false, reason: 'budget_exhausted', host: d.host, port: d.port, rule: d.rule });
      return refuseRaw(s, 'budget_exhausted');
    }
    this.#count(use, 'connections', 1);
    this.#count(use, 'open', 1);
    const vet = await this.#vet(use, d.host);
    const up = 'addr' in vet ? await this.#dial(vet.addr, d.port) : null;
    if (!('addr' in vet) || !up || s.destroyed || use.closed) {
      this.#count(use, 'open', -1);
      up?.destroy();
      const reason: EgressDenyReason = !('addr' in vet) ? vet.reason : use.closed ? 'lease_revoked' : 'upstream_unreachable';
      this.#deny(use, target.authority, reason, d, !('addr' in vet) && vet.cls ? { addrClass: vet.cls } : {});
      return refuseRaw(s, reason, statusOf(reason));
    }
    const first = Buffer.concat([this.#head(request.method, target.path, this.#upgradeHeaders(req)), head]);
    this.#pipe(use, s, up, first, { rule: d.rule, host: d.host, port: d.port, mode: 'websocket', cls: vet.cls });
  }

  /**
   * `wss://` on an inspected connection: the upgrade request decided like every request on it
   * (Host, method, path, a rule that allows websocket), a credential binding applied to its
   * headers, then re-originated over TLS verified for the host and both ways piped, counted on
   * the inspected connection (its `egress.conn` at close says `websocket`). The frames are not read.
   */
  async #inspectedUpgrade(use: RunUse, c: InspectConn, req: http.IncomingMessage, s: net.Socket, head: Buffer): Promise<void> {
    const request = { method: req.method ?? '', path: req.url ?? '', hostHeader: req.headers.host, upgrade: req.headers.upgrade ?? (req.headers['http2-settings'] !== undefined ? 'h2c' : undefined) };
    const d = decideEgress(use.args.grant, this.#d.policy, { authority: c.authority, via: 'connect', first: c.first, request });
    const refuse = (reason: EgressDenyReason, rule?: EgressRule) => {
      this.#d.ledger.append({ type: 'egress.deny', runId: use.args.runId, leaseId: use.args.leaseId, reason, host: hostText(c.host), ruleId: (rule ?? c.rule).id, port: c.port, ...(reason === 'credential_leak' ? { credential: leakName } : {}) });
      refuseRaw(s, reason, statusOf(reason));
    };
    let leakName = '';
    if (!d.allow) return refuse(d.reason, d.rule);
    if (use.closed) return refuse('lease_revoked');
    const leak = this.#leak(use, c.host, req.headers, request.path);
    if (leak.binding !== null) {
      leakName = leak.binding;
      return refuse('credential_leak', d.rule);
    }
    const cred = this.#credential(d.rule, c.host, request.path);
    if (cred.refused) return refuse('credential_unavailable', d.rule);
    const headers = this.#upgradeHeaders(req, cred.drop);
    if (cred.set) {
      headers[cred.set[0]] = cred.set[1];
      c.injected++;
    }
    c.requests++;
    c.methods.add(request.method);
    c.statusClasses.add('websocket');
    const name = c.host.kind === 'name' ? c.host.name : undefined;
    const secure = c.first.kind === 'tls';
    const up: net.Socket = secure
      ? tls.connect({
          host: c.addr, port: c.port, ...(name ? { servername: name } : {}), ALPNProtocols: ['http/1.1'],
          ...(this.#d.upstreamCa ? { ca: [...tls.rootCertificates, this.#d.upstreamCa] } : {}),
          checkServerIdentity: (_h: string, cert: tls.PeerCertificate) => tls.checkServerIdentity(hostText(c.host), cert),
        })
      : this.#d.dial(c.addr, c.port);
    const ok = await new Promise<boolean>((resolve) => {
      up.once(secure ? 'secureConnect' : 'connect', () => resolve(true));
      up.once('error', () => resolve(false));
      up.setTimeout(10_000, () => resolve(false));
    });
    if (!ok || s.destroyed || use.closed) {
      up.destroy();
      return refuse(use.closed ? 'lease_revoked' : 'upstream_unreachable', d.rule);
    }
    up.setTimeout(0);
    // The secret's echo is masked in what comes back (a handshake header or a frame's bytes).
    const echo = new NeedleScan(cred.mask, { mask: true });
    up.write(Buffer.concat([this.#head(request.method, request.path, headers), head]));
    s.on('data', (chunk: Buffer) => {
      c.bytesUp += chunk.length;
      if (!this.#count(use, 'bytesUp', chunk.length)) {
        c.closedBy = 'budget_exhausted';
        return void s.destroy();
      }
      if (!up.write(chunk)) s.pause();
    });
    up.on('drain', () => s.resume());
    up.on('data', (chunk: Buffer) => {
      c.bytesDown += chunk.length;
      if (!this.#count(use, 'bytesDown', chunk.length)) {
        c.closedBy = 'budget_exhausted';
        return void s.destroy();
      }
      const out = echo.push(chunk)!;
      if (out.length > 0 && !s.write(out)) up.pause();
    });
    s.on('drain', () => up.resume());
    // A half-close goes on to the other side, as a tunnel's does.
    s.once('end', () => up.end());
    up.once('end', () => s.end(echo.end()));
    up.once('close', () => s.destroy());
    s.once('close', () => up.destroy());
    up.on('error', () => s.destroy());
  }

  /** The first bytes of a tunnel: until a whole ClientHello record (or clearly not one), within the hello timeout. */
  #firstBytes(s: net.Socket, head: Buffer): Promise<{ kind: 'ok'; buf: Buffer } | { kind: 'timeout' } | { kind: 'closed' }> {
    return new Promise((resolve) => {
      let buf = head;
      const done = (r: { kind: 'ok'; buf: Buffer } | { kind: 'timeout' } | { kind: 'closed' }) => {
        clearTimeout(timer);
        s.off('data', onData);
        s.off('close', onClose);
        s.pause();
        resolve(r);
      };
      const check = () => {
        if (readFirstBytes(buf).kind !== 'need_more' || buf.length > 16384 + 5) done({ kind: 'ok', buf });
      };
      const onData = (c: Buffer) => {
        buf = Buffer.concat([buf, c]);
        check();
      };
      const onClose = () => done({ kind: 'closed' });
      const timer = setTimeout(() => done({ kind: 'timeout' }), this.#d.helloTimeoutMs);
      s.on('data', onData);
      s.once('close', onClose);
      s.resume();
      if (buf.length > 0) check();
    });
  }

  /** An absolute-form request (`GET http://host/path`): decided, forwarded once to the vetted address, its response relayed (redirects included, never followed). */
  async #plain(use: RunUse, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const refuse = (reason: EgressDenyReason, rawHost: string, d?: EgressDecision) => {
      this.#deny(use, rawHost, reason, d);
      res.writeHead(statusOf(reason), { 'X-Brig-Egress': reason, 'Content-Type': 'text/plain', Connection: 'close' });
      res.end(`brig egress: ${reason}\n`);
    };
    const target = parseAbsoluteTarget(req.url ?? '');
    if (!target) return refuse('bad_request', '');
    const request = { method: req.method ?? '', path: target.path, hostHeader: req.headers.host, upgrade: req.headers.upgrade ?? (req.headers['http2-settings'] !== undefined ? 'h2c' : undefined) };
    const d = decideEgress(use.args.grant, this.#d.policy, { authority: target.authority, via: 'absolute', request });
    if (!d.allow) return refuse(d.reason, target.authority, d);
    if (use.closed) return refuse('lease_revoked', target.authority);
    if (!this.#budget(use)) return refuse('budget_exhausted', target.authority, { allow: false, reason: 'budget_exhausted', host: d.host, port: d.port, rule: d.rule });
    const len = Number(req.headers['content-length'] ?? 0);
    if (req.headers['transfer-encoding'] !== undefined || !(len <= use.args.grant.budgets.requestBodyMax)) return refuse('body_too_large', target.authority, { allow: false, reason: 'body_too_large', host: d.host, port: d.port, rule: d.rule });
    // A bound secret (or the run's placeholder) never rides plain HTTP to a host its binding does not cover.
    const leak = this.#leak(use, d.host, req.headers, target.path);
    if (leak.binding !== null) {
      this.#leakDenied(use, d.host, d.port, d.rule.id, leak.binding);
      res.writeHead(403, { 'X-Brig-Egress': 'credential_leak', 'Content-Type': 'text/plain', Connection: 'close' });
      return void res.end('brig egress: credential_leak\n');
    }
    this.#count(use, 'connections', 1);
    this.#count(use, 'open', 1);
    const vet = await this.#vet(use, d.host);
    if (!('addr' in vet)) {
      this.#count(use, 'open', -1);
      this.#deny(use, target.authority, vet.reason, d, vet.cls ? { addrClass: vet.cls } : {});
      res.writeHead(statusOf(vet.reason), { 'X-Brig-Egress': vet.reason, Connection: 'close' });
      return void res.end(`brig egress: ${vet.reason}\n`);
    }
    const t0 = this.#d.now();
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP.has(k)) headers[k] = v;
    headers.connection = 'close';
    let bytesUp = 0;
    let bytesDown = 0;
    let status = 0;
    let finished = false;
    const finish = (closedBy: string) => {
      if (finished) return;
      finished = true;
      this.#count(use, 'open', -1);
      this.#count(use, 'bytesUp', bytesUp);
      this.#d.ledger.append({
        type: 'egress.conn', runId: use.args.runId, leaseId: use.args.leaseId, ruleId: d.rule.id, host: hostText(d.host), port: d.port, scheme: d.rule.scheme, mode: 'plain',
        addrClass: vet.cls, decision: 'allow', closedBy, bytesUp, bytesDown, durationMs: this.#d.now() - t0, requests: 1, methods: [request.method], statusClass: status ? `${Math.floor(status / 100)}xx` : 'none',
      });
    };
    const up = http.request({ host: vet.addr, port: d.port, method: request.method, path: target.path, headers, setHost: false, agent: false, timeout: use.args.grant.budgets.idleMs });
    up.on('response', (ur) => {
      status = ur.statusCode ?? 0;
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(ur.headers)) if (v !== undefined && !HOP.has(k)) out[k] = v;
      res.writeHead(status, out);
      ur.on('data', (c: Buffer) => {
        bytesDown += c.length;
        if (!this.#count(use, 'bytesDown', c.length)) {
          ur.destroy();
          res.destroy();
        }
      });
      ur.pipe(res);
      res.once('close', () => {
        // The client (or the run's close) went: the upstream request goes with it.
        up.destroy();
        finish('closed');
      });
    });
    up.on('timeout', () => up.destroy());
    up.on('error', () => {
      if (!res.headersSent) {
        res.writeHead(502, { 'X-Brig-Egress': 'upstream_unreachable', Connection: 'close' });
        res.end('brig egress: upstream_unreachable\n');
      }
      if (status === 0) finish('upstream_unreachable');
    });
    this.#sendBody(req, up, leak.scan, use.args.grant.budgets.requestBodyMax, {
      counted: (n) => {
        bytesUp += n;
        return true;
      },
      stop: (why) => {
        if (why === 'credential_leak') this.#leakDenied(use, d.host, d.port, d.rule.id, leak.bindingAt(leak.scan.foundAt));
        up.destroy();
        res.destroy();
        finish(why);
      },
    });
  }
}
