/**
 * One broker line → one reply. The order is the security argument: bound and parse the
 * line, rate-limit the run, validate the envelope, resolve the method in the one table,
 * verify the bearer for THIS run, check the capability with the lease code's own predicate
 * (grantAllows), strip identity fields, validate params, then — only then — call a handler.
 * Every refusal is a reply value plus a content-free ledger event; nothing here throws.
 */
import { grantAllows, type LeaseRecord } from '../lease/index.js';
import type { Ledger } from '../ledger/index.js';
import { nearest } from '../util/nearest.js';
import { BrigError, ERROR_CODES, isErrorCode, type ErrorCode, type Result } from '../util/errors.js';
import {
  MAX_NESTING,
  MAX_REPLY_BYTES,
  METHODS,
  METHOD_NAMES,
  PROTOCOL_VERSION,
  RequestSchema,
  jsonNesting,
  requiredCapability,
  resolveMethod,
  stripParams,
  type BrokerReply,
  type Method,
  type ParamsOf,
} from './protocol.js';
import type { StrikeCounter, TokenBucket } from './rate-limit.js';

export interface LeaseVerifier {
  verify(token: unknown, runId: string): Result<LeaseRecord>;
}

export interface BrokerCall<M extends Method = Method> {
  runId: string;
  rootRunId: string;
  leaseId: string;
  lease: LeaseRecord;
  method: M;
  params: ParamsOf<M>;
}
export type Handler<M extends Method = Method> = (call: BrokerCall<M>) => unknown;
export type Handlers = { [M in Method]?: Handler<M> };

export interface RunState {
  runId: string;
  leaseId: string;
  packet: unknown;
  bucket: TokenBucket;
  strikes: StrikeCounter;
  abused: boolean;
  inflight: number;
  calls: number;
  denied: number;
  rateLimited: number;
  logs: { at: string; level: string; message: string }[];
}

export interface DispatchDeps {
  leases: LeaseVerifier;
  ledger: Ledger;
  handlers: Handlers;
  now: () => number;
  maxInflight: number;
  logTail: number;
  /** Called once per run when its strikes cross the abuse threshold. */
  abuse: (run: RunState) => void;
}

type Id = string | number | null;

function errorReply(id: Id, code: ErrorCode, message: string, hint?: string): BrokerReply {
  return { v: PROTOCOL_VERSION, id, ok: false, error: { code, message, hint: hint ?? ERROR_CODES[code].hint } };
}

function safeLedger(ledger: Ledger, ev: Parameters<Ledger['append']>[0]): void {
  try {
    ledger.append(ev);
  } catch {
    // The ledger failing must not let a child crash the supervisor; the write error surfaces
    // through the ledger's own owner.
  }
}

/** A refusal: counted, struck, logged (rate limits aggregated), answered. */
export function deny(run: RunState, deps: DispatchDeps, id: Id, method: string, code: ErrorCode, message: string, hint?: string): BrokerReply {
  run.denied++;
  if (code === 'rate_limited') {
    run.rateLimited++;
    // A flood would otherwise write one ledger line per message: log the 1st and every 1000th.
    if (run.rateLimited % 1000 === 1) safeLedger(deps.ledger, { type: 'broker.denied', runId: run.runId, leaseId: run.leaseId, method, code, count: run.rateLimited });
  } else {
    safeLedger(deps.ledger, { type: 'broker.denied', runId: run.runId, leaseId: run.leaseId, method, code });
  }
  if (run.strikes.strike(deps.now()) && !run.abused) {
    run.abused = true;
    safeLedger(deps.ledger, { type: 'broker.abuse', runId: run.runId, leaseId: run.leaseId, denied: run.denied });
    deps.abuse(run);
  }
  return errorReply(id, code, message, hint);
}

function builtin(method: Method, run: RunState, call: BrokerCall, deps: DispatchDeps): { value: unknown } | undefined {
  if (method === 'hello') {
    const methods = METHOD_NAMES.filter((m) => grantAllows(call.lease, requiredCapability(m)));
    return { value: { v: PROTOCOL_VERSION, runId: run.runId, packet: run.packet, methods } };
  }
  if (method === 'log') {
    const p = call.params as ParamsOf<'log'>;
    run.logs.push({ at: new Date(deps.now()).toISOString(), level: p.level, message: p.message });
    if (run.logs.length > deps.logTail) run.logs.splice(0, run.logs.length - deps.logTail);
    return { value: { logged: true } };
  }
  return undefined;
}

function encode(reply: BrokerReply): string {
  try {
    const text = JSON.stringify(reply);
    if (Buffer.byteLength(text) <= MAX_REPLY_BYTES) return text;
    return JSON.stringify(errorReply(reply.id, 'output_too_large', `the reply is over ${MAX_REPLY_BYTES} bytes`));
  } catch {
    return JSON.stringify(errorReply(reply.id, 'internal', 'the reply could not be encoded'));
  }
}

/** Handles one line; resolves to the reply line (without newline) and whether it succeeded. Never rejects. */
export async function dispatchLine(
  line: string,
  run: RunState,
  deps: DispatchDeps,
  seen: { authenticated: boolean; onAuthenticated?: () => void } = { authenticated: false },
): Promise<{ line: string; ok: boolean; authenticated: boolean }> {
  let reply: BrokerReply;
  try {
    reply = await decide(line, run, deps, seen);
  } catch {
    // A dependency failing (the leases directory vanished, a verifier bug) is an internal
    // error for this call, never an exception that could take the supervisor down.
    reply = errorReply(null, 'internal', 'the broker could not serve this call');
  }
  return { line: encode(reply), ok: reply.ok, authenticated: seen.authenticated };
}

async function decide(line: string, run: RunState, deps: DispatchDeps, seen: { authenticated: boolean; onAuthenticated?: () => void }): Promise<BrokerReply> {
  if (jsonNesting(line) > MAX_NESTING) return deny(run, deps, null, 'unknown', 'invalid_input', `JSON nested deeper than ${MAX_NESTING}`);
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return deny(run, deps, null, 'unknown', 'invalid_input', 'not valid JSON', 'Send one JSON object per line.');
  }
  const rawId = raw && typeof raw === 'object' ? (raw as { id?: unknown }).id : undefined;
  const id: Id = typeof rawId === 'string' && rawId.length <= 64 ? rawId : Number.isSafeInteger(rawId) ? (rawId as number) : null;
  if (!run.bucket.take(deps.now())) return deny(run, deps, id, 'unknown', 'rate_limited', 'too many calls');
  const env = RequestSchema.safeParse(raw);
  if (!env.success) {
    return deny(run, deps, id, 'unknown', 'invalid_input', `bad envelope: ${env.error.issues[0]?.path.join('.') || '(top)'} ${env.error.issues[0]?.message ?? ''}`.trim(), 'Send {v:1, id, method, token, params}.');
  }
  const method = resolveMethod(env.data.method);
  if (!method) {
    const near = nearest(env.data.method, METHOD_NAMES);
    return deny(run, deps, id, 'unknown', 'invalid_input', 'unknown method', near ? `Did you mean "${near}"?` : `Methods: ${METHOD_NAMES.join(', ')}.`);
  }
  const auth = deps.leases.verify(env.data.token, run.runId);
  if (!auth.ok) return deny(run, deps, id, method, auth.error.code, auth.error.message);
  const lease = auth.value;
  if (lease.id !== run.leaseId) return deny(run, deps, id, method, 'unauthenticated', 'bad bearer token for this run');
  // Known before the handler runs: a call that takes an hour (a synchronous spawn) keeps its connection.
  if (!seen.authenticated) {
    seen.authenticated = true;
    seen.onAuthenticated?.();
  }
  const cap = requiredCapability(method);
  if (!grantAllows(lease, cap)) return deny(run, deps, id, method, 'capability_denied', `the lease does not grant ${cap}`);
  const { params: cleaned, stripped } = stripParams(method, env.data.params);
  if (stripped.length > 0) safeLedger(deps.ledger, { type: 'broker.stripped', runId: run.runId, leaseId: lease.id, method, fields: stripped });
  const parsed = METHODS[method].params.safeParse(cleaned);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    return deny(run, deps, id, method, 'invalid_input', `bad params for ${method}: ${i?.path.join('.') || '(top)'} ${i?.message ?? ''}`.trim());
  }
  const call = { runId: run.runId, rootRunId: lease.rootRunId, leaseId: lease.id, lease, method, params: parsed.data } as BrokerCall;
  const handler = deps.handlers[method] as Handler | undefined;
  if (!handler) {
    const b = builtin(method, run, call, deps);
    if (b) {
      run.calls++;
      return { v: PROTOCOL_VERSION, id, ok: true, result: b.value };
    }
    // A refusal like any other: answered, struck and ledgered (the method name is from the table).
    return deny(run, deps, id, method, 'invalid_input', `method ${method} is not available from this broker yet`, 'This supervisor does not serve it; the method is reserved in protocol v1.');
  }
  if (run.inflight >= deps.maxInflight) return deny(run, deps, id, method, 'rate_limited', `more than ${deps.maxInflight} calls in flight`);
  run.inflight++;
  try {
    const result = await handler(call);
    run.calls++;
    return { v: PROTOCOL_VERSION, id, ok: true, result: result ?? null };
  } catch (e) {
    // Handler errors are the supervisor's words (BrigError); anything else is reported without
    // its message, which could carry host paths.
    if (e instanceof BrigError) return errorReply(id, e.code, e.message, e.hint);
    const code = e && typeof e === 'object' && 'code' in e && isErrorCode((e as { code: unknown }).code) ? ((e as { code: ErrorCode }).code) : 'internal';
    return errorReply(id, code, code === 'internal' ? 'the handler failed' : String((e as { message?: unknown }).message ?? code));
  } finally {
    run.inflight--;
  }
}
