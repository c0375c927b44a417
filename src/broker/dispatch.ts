/**
 * One broker line → one reply. The order is the security argument: bound the line, charge
 * the run's rate limit before anything parses it (chargeLine), bound its nesting and parse
 * it, validate the envelope, resolve the method in the one table, verify the bearer for THIS
 * run, check the capability with the lease code's own predicate (grantAllows) and the method
 * against the run's tool surface (an agent's bearer calls only what its tools call), strip
 * identity fields, validate params, then — only then — call a handler.
 * Every error reply, whoever decided it (these checks or a handler's BrigError), is a reply
 * value plus a content-free ledger event (ledger/refusal-log.ts aggregates repeats); nothing here
 * throws.
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
import type { RefusalLog } from '../ledger/index.js';

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
  /** The call's id as the child sent it (null when it sent none the envelope accepts). */
  callId: string | number | null;
  /** The child's client re-sends it after a reconnect: it may have been applied already. */
  resent: boolean;
}
export type Handler<M extends Method = Method> = (call: BrokerCall<M>) => unknown;
export type Handlers = { [M in Method]?: Handler<M> };

export interface RunState {
  runId: string;
  leaseId: string;
  packet: unknown;
  /** The methods this run's bearer may call at all (an agent's tool surface); absent: the lease alone decides. */
  surface?: ReadonlySet<string>;
  bucket: TokenBucket;
  strikes: StrikeCounter;
  abused: boolean;
  inflight: number;
  calls: number;
  denied: number;
  rateLimited: number;
  /** Where this run's refusals go into the ledger (first of a kind at once, repeats counted). */
  refusals: RefusalLog;
  /** Methods whose stripped identity fields were ledgered already (once per method: repeats are the same fact). */
  stripped?: Set<string>;
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
  /** Every answered call, by method (the table's names or `unknown`) and outcome (`ok` or the refusal's code): metrics. */
  count?: (method: string, outcome: string) => void;
}

type Id = string | number | null;

function errorReply(id: Id, code: ErrorCode, message: string, hint?: string): BrokerReply {
  return { v: PROTOCOL_VERSION, id, ok: false, error: { code, message, hint: hint ?? ERROR_CODES[code].hint } };
}

export function safeLedger(ledger: Ledger, ev: Parameters<Ledger['append']>[0]): void {
  try {
    ledger.append(ev);
  } catch {
    // The ledger failing must not let a child crash the supervisor; the write error surfaces
    // through the ledger's own owner.
  }
}

const LEDGERED = Symbol('brig.broker.refusal-ledgered');

/**
 * For a handler that ledgered its own refusal with a reason only it knows (child-refs'
 * `not_descendant`): the broker writes no second line for it.
 */
export function alreadyLedgered<E extends Error>(e: E): E {
  Object.defineProperty(e, LEDGERED, { value: true });
  return e;
}

/** A handler's error reply: counted and ledgered like any refusal, but not a strike. */
function handlerRefusal(run: RunState, deps: DispatchDeps, method: string, code: ErrorCode, e: unknown): void {
  run.denied++;
  deps.count?.(method, code);
  if (!(e && typeof e === 'object' && LEDGERED in e)) run.refusals.note({ method, code });
}

/** A refusal by the broker's own checks: counted, ledgered (repeats aggregated), struck, answered. */
export function deny(run: RunState, deps: DispatchDeps, id: Id, method: string, code: ErrorCode, message: string, hint?: string): BrokerReply {
  run.denied++;
  deps.count?.(method, code);
  if (code === 'rate_limited') run.rateLimited++;
  run.refusals.note({ method, code });
  if (run.strikes.strike(deps.now()) && !run.abused) {
    run.abused = true;
    safeLedger(deps.ledger, { type: 'broker.abuse', runId: run.runId, leaseId: run.leaseId, denied: run.denied });
    deps.abuse(run);
  }
  return errorReply(id, code, message, hint);
}

/** Is the method on the run's surface (a run opened without one: every method)? */
function offered(run: RunState, method: Method): boolean {
  return run.surface === undefined || run.surface.has(method);
}

function builtin(method: Method, run: RunState, call: BrokerCall, deps: DispatchDeps): { value: unknown } | undefined {
  if (method === 'hello') {
    const methods = METHOD_NAMES.filter((m) => grantAllows(call.lease, requiredCapability(m)) && offered(run, m));
    return { value: { v: PROTOCOL_VERSION, runId: run.runId, packet: run.packet, methods } };
  }
  if (method === 'log') {
    const p = call.params as ParamsOf<'log'>;
    run.logs.push({ at: new Date(deps.now()).toISOString(), level: p.level ?? 'info', message: p.message });
    if (run.logs.length > deps.logTail) run.logs.splice(0, run.logs.length - deps.logTail);
    return { value: { logged: true } };
  }
  return undefined;
}

/** The reply as a line; one too big (or unencodable) becomes an error, reported back as its code. */
function encode(reply: BrokerReply): { text: string; replaced?: ErrorCode } {
  try {
    const text = JSON.stringify(reply);
    if (Buffer.byteLength(text) <= MAX_REPLY_BYTES) return { text };
    return { text: JSON.stringify(errorReply(reply.id, 'output_too_large', `the reply is over ${MAX_REPLY_BYTES} bytes`)), replaced: 'output_too_large' };
  } catch {
    return { text: JSON.stringify(errorReply(reply.id, 'internal', 'the reply could not be encoded')), replaced: 'internal' };
  }
}

/** The id of a refused line's reply, read from its head without parsing it: a wrong guess only confuses its sender. */
const SNIFF_ID = /"id"\s*:\s*(?:(-?\d{1,16})(?![\d.eE])|"([^"\\]{1,64})")/;
function sniffId(line: string): Id {
  const m = SNIFF_ID.exec(line.slice(0, 256));
  if (!m) return null;
  if (m[2] !== undefined) return m[2];
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : null;
}

/**
 * Step 2, before anything parses the line: one token of the run's bucket. Returns the
 * `rate_limited` reply line when there is none (a flood is refused at the cost of a token
 * take), or null: the line may go on to dispatchLine.
 */
export function chargeLine(line: string, run: RunState, deps: DispatchDeps): string | null {
  if (run.bucket.take(deps.now())) return null;
  return encode(deny(run, deps, sniffId(line), 'unknown', 'rate_limited', 'too many calls')).text;
}

/**
 * Handles one line the caller has charged (chargeLine); resolves to the reply line (without
 * newline) and whether it succeeded. Never rejects.
 */
export async function dispatchLine(
  line: string,
  run: RunState,
  deps: DispatchDeps,
  seen: { authenticated: boolean; onAuthenticated?: () => void } = { authenticated: false },
): Promise<{ line: string; ok: boolean; authenticated: boolean }> {
  let reply: BrokerReply;
  let method = 'unknown';
  try {
    reply = await decide(line, run, deps, seen, (m) => (method = m));
  } catch (e) {
    // A dependency failing (the leases directory vanished, a verifier bug) is an internal
    // error for this call, never an exception that could take the supervisor down.
    reply = errorReply(null, 'internal', 'the broker could not serve this call');
    handlerRefusal(run, deps, method, 'internal', e);
  }
  const out = encode(reply);
  if (out.replaced) handlerRefusal(run, deps, method, out.replaced, undefined);
  return { line: out.text, ok: reply.ok && !out.replaced, authenticated: seen.authenticated };
}

async function decide(
  line: string,
  run: RunState,
  deps: DispatchDeps,
  seen: { authenticated: boolean; onAuthenticated?: () => void },
  resolved: (method: Method) => void,
): Promise<BrokerReply> {
  if (jsonNesting(line) > MAX_NESTING) return deny(run, deps, null, 'unknown', 'invalid_input', `JSON nested deeper than ${MAX_NESTING}`);
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return deny(run, deps, null, 'unknown', 'invalid_input', 'not valid JSON', 'Send one JSON object per line.');
  }
  const rawId = raw && typeof raw === 'object' ? (raw as { id?: unknown }).id : undefined;
  const id: Id = typeof rawId === 'string' && rawId.length <= 64 ? rawId : Number.isSafeInteger(rawId) ? (rawId as number) : null;
  const env = RequestSchema.safeParse(raw);
  if (!env.success) {
    return deny(run, deps, id, 'unknown', 'invalid_input', `bad envelope: ${env.error.issues[0]?.path.join('.') || '(top)'} ${env.error.issues[0]?.message ?? ''}`.trim(), 'Send {v:1, id, method, token, params}.');
  }
  const method = resolveMethod(env.data.method);
  if (!method) {
    const near = nearest(env.data.method, METHOD_NAMES);
    return deny(run, deps, id, 'unknown', 'invalid_input', 'unknown method', near ? `Did you mean "${near}"?` : `Methods: ${METHOD_NAMES.join(', ')}.`);
  }
  resolved(method);
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
  // The lease is the same with or without the tools; the surface narrows what this bearer calls.
  if (!offered(run, method)) return deny(run, deps, id, method, 'tool_not_offered', `${method} is outside this run's tool surface: no tool its agent spec offers calls it`);
  const { params: cleaned, stripped } = stripParams(method, env.data.params);
  if (stripped.length > 0 && !(run.stripped ??= new Set()).has(method)) {
    run.stripped.add(method);
    safeLedger(deps.ledger, { type: 'broker.stripped', runId: run.runId, leaseId: lease.id, method, fields: stripped });
  }
  const parsed = METHODS[method].params.safeParse(cleaned);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    return deny(run, deps, id, method, 'invalid_input', `bad params for ${method}: ${i?.path.join('.') || '(top)'} ${i?.message ?? ''}`.trim());
  }
  const call = { runId: run.runId, rootRunId: lease.rootRunId, leaseId: lease.id, lease, method, params: parsed.data, callId: id, resent: env.data.resent === true } as BrokerCall;
  const handler = deps.handlers[method] as Handler | undefined;
  if (!handler) {
    const b = builtin(method, run, call, deps);
    if (b) {
      run.calls++;
      deps.count?.(method, 'ok');
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
    deps.count?.(method, 'ok');
    return { v: PROTOCOL_VERSION, id, ok: true, result: result ?? null };
  } catch (e) {
    // Handler errors are the supervisor's words (BrigError); anything else is reported without
    // its message, which could carry host paths. Either way a refusal the ledger sees.
    if (e instanceof BrigError) {
      handlerRefusal(run, deps, method, e.code, e);
      return errorReply(id, e.code, e.message, e.hint);
    }
    const code = e && typeof e === 'object' && 'code' in e && isErrorCode((e as { code: unknown }).code) ? ((e as { code: ErrorCode }).code) : 'internal';
    handlerRefusal(run, deps, method, code, e);
    return errorReply(id, code, code === 'internal' ? 'the handler failed' : String((e as { message?: unknown }).message ?? code));
  } finally {
    run.inflight--;
  }
}
