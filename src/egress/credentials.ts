/**
 * Credential bindings at the gate: the operator's secret set as one header on inspected requests
 * to the binding's hosts and paths, and kept from going anywhere else.
 *
 * Guarantees: a binding's secret is read from the supervisor's environment (config/ reads only
 * the variables the policy names) and used only here — never in the jail, the ledger, a log or a
 * record. On a request whose rule names a binding, every client credential header (any spelling:
 * Node lower-cases them) and the binding's own header are removed first, then the binding's set
 * once when host and path are the binding's. A request carrying any binding's secret or its
 * run's placeholder — in a header, the request-target or the body — to a host that binding does
 * not cover is refused before a byte of it reaches that host (the body is held back by the
 * longest needle's length). A response to a request the secret was injected into is asked for
 * `identity` and scanned: every copy of the secret (an echoing endpoint) is masked to `*` of the
 * same length, headers and body, so the secret never enters the jail; an encoded body cannot be
 * scanned and is refused. The placeholder a child may get in its environment (for SDKs that
 * refuse to start without a key) is derived from the secret and the run id (HMAC), so a
 * restarted supervisor knows it again and it says nothing of the secret.
 * Threat: a hostile child laundering a secret (or the placeholder) to another host, or asking a
 * bound echo endpoint to reflect it. Not covered: a secret transformed by the upstream (base64,
 * hashed, split) — never bind a credential to paths that echo requests (docs/egress.md).
 */
import crypto from 'node:crypto';
import type { EgressGrant } from '../protocol/index.js';
import { parsePattern, patternMatches, type CanonHost } from '../lease/index.js';

/** One operator binding as the gate holds it (the policy's, with its secret behind a function). */
export interface EgressCredential {
  name: string;
  /** A lower-case header name (`authorization`). */
  header: string;
  /** `{}` stands for the secret (`Bearer {}`). */
  format: string;
  hosts: readonly string[];
  paths?: readonly string[] | undefined;
  placeholderEnv?: string | undefined;
  /** The secret, when the supervisor's environment holds it. */
  secret(): string | undefined;
}

/**
 * The gate's bindings from the policy's and the secrets config/ read (by env name): a binding
 * whose variable is unset has no secret, and its requests are refused `credential_unavailable`.
 */
export function egressCredentials(
  bindings: Readonly<Record<string, { secretEnv: string; header: string; format: string; hosts: string[]; paths?: string[] | undefined; placeholderEnv?: string | undefined }>>,
  secrets: Readonly<Record<string, { reveal(): string }>>,
): Record<string, EgressCredential> {
  const out: Record<string, EgressCredential> = {};
  for (const [name, b] of Object.entries(bindings)) {
    const s = secrets[b.secretEnv];
    out[name] = { name, header: b.header, format: b.format, hosts: b.hosts, paths: b.paths, placeholderEnv: b.placeholderEnv, secret: () => s?.reveal() };
  }
  return out;
}

/** Where clients carry credentials: removed from every request whose rule names a binding. */
export const CLIENT_CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'x-api-key',
  'api-key',
  'x-auth-token',
  'x-access-token',
  'x-goog-api-key',
  'private-token',
]);

/** A secret shorter than this is never scanned for (it would match ordinary text): policy check says so. */
export const MIN_SCANNED_SECRET = 8;

/** Whether the binding covers this host (its patterns) and path (its prefixes, the query left out). */
export function bindingCovers(b: Pick<EgressCredential, 'hosts' | 'paths'>, host: CanonHost, path?: string): boolean {
  const hostOk = b.hosts.some((t) => {
    const p = parsePattern(t);
    return p !== null && patternMatches(p, host);
  });
  if (!hostOk) return false;
  if (path === undefined || b.paths === undefined) return true;
  const bare = path.split('?')[0]!;
  return b.paths.some((p) => bare.startsWith(p));
}

/** The run's placeholder for a binding: stable for the run (a restart derives it again), unrelated to the secret's value. */
export function placeholderFor(b: EgressCredential, runId: string): string {
  const mac = crypto.createHmac('sha256', b.secret() ?? 'brig-no-secret').update(`${runId}\0${b.name}`).digest('hex').slice(0, 40);
  return `brig-placeholder-${mac}`;
}

/** The bindings a grant's rules name. */
export function bindingsOf(grant: EgressGrant, all: Readonly<Record<string, EgressCredential>>): EgressCredential[] {
  const names = new Set(grant.rules.map((r) => r.credential).filter((n): n is string => n !== undefined));
  return [...names].map((n) => all[n]).filter((b): b is EgressCredential => b !== undefined);
}

/** What a request to `host` must not carry: each binding's secret and the run's placeholder, unless the binding covers the host. */
export function leakNeedles(all: Readonly<Record<string, EgressCredential>>, runId: string, host: CanonHost): { binding: string; needle: Buffer }[] {
  const out: { binding: string; needle: Buffer }[] = [];
  for (const b of Object.values(all)) {
    if (bindingCovers(b, host)) continue;
    const s = b.secret();
    if (s !== undefined && s.length >= MIN_SCANNED_SECRET) out.push({ binding: b.name, needle: Buffer.from(s) });
    if (b.placeholderEnv !== undefined) out.push({ binding: b.name, needle: Buffer.from(placeholderFor(b, runId)) });
  }
  return out;
}

/** The first binding whose needle is in the request's headers or request-target (raw and percent-decoded). */
export function carried(needles: readonly { binding: string; needle: Buffer }[], headers: NodeJS.Dict<string | string[]>, target: string): string | undefined {
  if (needles.length === 0) return undefined;
  const texts = [target, decodedOr(target)];
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    texts.push(k);
    for (const x of Array.isArray(v) ? v : [v]) texts.push(x, decodedOr(x));
  }
  for (const n of needles) {
    const s = n.needle.toString();
    if (texts.some((t) => t.includes(s))) return n.binding;
  }
  return undefined;
}

function decodedOr(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

/**
 * Scans a stream for needles across chunk boundaries, holding back only a tail that could begin
 * a needle (at most the longest needle's length less one): `push` gives the bytes safe to pass
 * on (and, with `mask`, every needle masked to `*`), or null at the first needle when not masking.
 */
export class NeedleScan {
  readonly #needles: readonly Buffer[];
  readonly #hold: number;
  readonly #mask: boolean;
  #tail = Buffer.alloc(0);
  /** How many needles were met (masked ones counted). */
  found = 0;
  /** The index (in the constructor's list) of the needle met last. */
  foundAt = -1;

  constructor(needles: readonly Buffer[], o: { mask?: boolean } = {}) {
    this.#needles = needles;
    this.#hold = Math.max(0, ...needles.map((n) => n.length - 1));
    this.#mask = o.mask === true;
  }

  get empty(): boolean {
    return !this.#needles.some((n) => n.length > 0);
  }

  push(chunk: Buffer): Buffer | null {
    if (this.empty) return chunk;
    const buf = this.#tail.length > 0 ? Buffer.concat([this.#tail, chunk]) : Buffer.from(chunk);
    for (const [i, n] of this.#needles.entries()) {
      if (n.length === 0) continue;
      let at = buf.indexOf(n);
      while (at !== -1) {
        this.found++;
        this.foundAt = i;
        if (!this.#mask) return null;
        buf.fill(0x2a, at, at + n.length);
        at = buf.indexOf(n, at + n.length);
      }
    }
    const keep = this.#pending(buf);
    this.#tail = Buffer.from(buf.subarray(buf.length - keep));
    return buf.subarray(0, buf.length - keep);
  }

  /** How many of the last bytes could begin a needle (the longest such suffix): only those are held back, so a stream that pauses loses no time unless its end looks like a needle's start. */
  #pending(buf: Buffer): number {
    for (let k = Math.min(this.#hold, buf.length); k > 0; k--) {
      const suffix = buf.subarray(buf.length - k);
      if (this.#needles.some((n) => n.length > k && n.subarray(0, k).equals(suffix))) return k;
    }
    return 0;
  }

  /** What was held back, once the stream ended (already scanned). */
  end(): Buffer {
    const t = this.#tail;
    this.#tail = Buffer.alloc(0);
    return t;
  }
}

/** A header value with every needle masked (same length). */
export function maskText(v: string, needles: readonly Buffer[]): string {
  let out = v;
  for (const n of needles) {
    const s = n.toString();
    if (s.length > 0) out = out.split(s).join('*'.repeat(s.length));
  }
  return out;
}
