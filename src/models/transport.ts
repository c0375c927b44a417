/**
 * The one HTTP path to a model provider (undici), shared by both wire formats.
 *
 * Guarantees: a call is retried (default 2 times, 0.5 s → 8 s backoff with up to 25 % jitter,
 * `retry-after-ms` / `retry-after` / `x-should-retry` honoured) only before the first body byte
 * of a success, on connection errors, 408, 409, 429 and ≥ 500 — never once content has begun,
 * so a reply is never duplicated or spliced. Every wait (headers, each body chunk) is cut by the
 * idle timer; the whole call by the deadline; the caller's signal aborts at once. The reply is
 * refused past its byte cap (not truncated). Every failure is `model_unavailable` with a
 * content-free `data.reason`, and the secrets given (the API key) are scrubbed from every
 * message and cause: the raw undici error is never attached.
 * Threat: a stalled, flooding or hostile endpoint holding the supervisor, and a key echoed in a
 * provider's error text reaching a child or a log. Trusts: the configured base URL.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { request, type Dispatcher } from 'undici';
import { BrigError } from '../util/errors.js';

export type FailReason =
  | 'connect' // no answer: refused, reset, DNS, TLS
  | 'status' // a non-2xx status
  | 'idle_timeout' // no byte within idleTimeoutMs
  | 'timeout' // the whole call ran past timeoutMs
  | 'aborted' // the caller's signal
  | 'too_large' // the reply passed maxReplyBytes
  | 'disconnected' // the stream broke after content began
  | 'malformed' // the reply is not the wire format
  | 'stream_error'; // the provider sent an error event mid-stream

export interface TransportOptions {
  url: string;
  /** Includes the key header; never copied into an error. */
  headers: Record<string, string>;
  /** Strings that must never appear in an error (the API key). */
  secrets: readonly string[];
  dispatcher: Dispatcher;
  maxRetries: number;
  timeoutMs: number;
  idleTimeoutMs: number;
  maxReplyBytes: number;
  signal?: AbortSignal;
  backoff?: { initialMs: number; maxMs: number };
}

export interface OpenedStream {
  contentType: string;
  status: number;
  attempts: number;
  /** The body, first chunk included; each wait is under the idle timer, the total under the byte cap. */
  chunks: AsyncGenerator<Uint8Array, void, undefined>;
  /** A failure in the stream's terms (scrubbed, content-free reason), for the format parsers. */
  fail(reason: FailReason, message: string, extra?: Record<string, unknown>): BrigError;
}

export const TRANSPORT_DEFAULTS = Object.freeze({
  maxRetries: 2,
  timeoutMs: 600_000,
  idleTimeoutMs: 60_000,
  maxReplyBytes: 8 * 1024 * 1024,
  backoff: { initialMs: 500, maxMs: 8000 },
});

const RETRY_STATUS = (s: number) => s === 408 || s === 409 || s === 429 || s >= 500;
const ERROR_BODY_CAP = 64 * 1024;
const RETRY_AFTER_MAX_MS = 60_000;

/** Stainless's backoff: initial × 2^retry, capped, minus up to 25 % jitter. */
export function backoffMs(retry: number, b: { initialMs: number; maxMs: number }, random: () => number = Math.random): number {
  return Math.min(b.initialMs * 2 ** retry, b.maxMs) * (1 - random() * 0.25);
}

/** The server's wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date), when sane (0–60 s). */
export function retryAfterMs(headers: Record<string, string | string[] | undefined>, now = Date.now()): number | undefined {
  const one = (k: string) => {
    const v = headers[k];
    return Array.isArray(v) ? v[0] : v;
  };
  const ms = one('retry-after-ms');
  let wait: number | undefined;
  if (ms !== undefined && ms.trim() !== '' && Number.isFinite(Number(ms))) wait = Number(ms);
  else {
    const ra = one('retry-after');
    if (ra !== undefined && ra.trim() !== '') {
      if (Number.isFinite(Number(ra))) wait = Number(ra) * 1000;
      else {
        const at = Date.parse(ra);
        if (Number.isFinite(at)) wait = at - now;
      }
    }
  }
  return wait !== undefined && wait >= 0 && wait <= RETRY_AFTER_MAX_MS ? wait : undefined;
}

/** Every secret replaced by `[redacted]`. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length > 0) out = out.split(s).join('[redacted]');
  return out;
}

/** A provider's own error words from a JSON error body (OpenAI and Anthropic shapes), short. */
export function providerErrorText(body: string): string | undefined {
  try {
    const j = JSON.parse(body) as { error?: { message?: unknown; type?: unknown } | string; message?: unknown };
    const e = j.error;
    const msg = typeof e === 'string' ? e : typeof e?.message === 'string' ? e.message : typeof j.message === 'string' ? j.message : undefined;
    return msg === undefined ? undefined : msg.replace(/\s+/g, ' ').slice(0, 300);
  } catch {
    return undefined;
  }
}

/** POSTs `body` and returns the reply stream once its first byte arrived (retrying before that). */
export async function openStream(body: string, o: TransportOptions): Promise<OpenedStream> {
  const call = new CallGuard(o.timeoutMs, o.signal);
  const fail = (reason: FailReason, message: string, extra: Record<string, unknown> = {}, cause?: unknown) =>
    failure(reason, message, o.secrets, extra, cause);
  let attempts = 0;
  try {
    for (;;) {
      attempts++;
      const last = attempts > o.maxRetries;
      const att = new AttemptGuard(call.signal, o.idleTimeoutMs);
      let retryWait: number | undefined;
      try {
        const res = await request(o.url, {
          method: 'POST',
          headers: o.headers,
          body,
          signal: att.signal,
          dispatcher: o.dispatcher,
          headersTimeout: o.idleTimeoutMs + 1000,
          bodyTimeout: o.idleTimeoutMs + 1000,
        });
        att.touch();
        if (res.statusCode >= 200 && res.statusCode < 300) {
          const it = res.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
          const first = await it.next();
          if (first.done || first.value.length === 0) {
            res.body.destroy();
            if (last) throw fail('malformed', 'the model provider sent an empty reply', { attempts });
          } else {
            if (first.value.length > o.maxReplyBytes) {
              res.body.destroy();
              throw fail('too_large', `the model reply is over its ${o.maxReplyBytes}-byte cap`, { attempts });
            }
            const contentType = String(res.headers['content-type'] ?? '');
            const chunks = guardedChunks(first.value, it, res.body, att, call, o, attempts);
            return { contentType, status: res.statusCode, attempts, chunks, fail: (r, m, x) => fail(r, m, { attempts, ...x }) };
          }
        } else {
          const text = await readSome(res.body, ERROR_BODY_CAP).catch(() => '');
          const should = res.headers['x-should-retry'];
          const retry = should === 'true' || (should !== 'false' && RETRY_STATUS(res.statusCode));
          if (!retry || last) {
            const said = providerErrorText(text);
            throw fail('status', `the model provider answered HTTP ${res.statusCode}${said ? `: ${said}` : ''}${attempts > 1 ? ` (after ${attempts} attempts)` : ''}`, { status: res.statusCode, attempts });
          }
          retryWait = retryAfterMs(res.headers);
        }
      } catch (e) {
        if (e instanceof BrigError) throw e;
        if (call.reason) throw fail(call.reason, call.reason === 'aborted' ? 'the model call was aborted' : `the model call ran past its ${o.timeoutMs} ms limit`, { attempts }, e);
        const idle = att.idleFired || isUndiciTimeout(e);
        if (last) {
          throw idle
            ? fail('idle_timeout', `the model provider sent nothing for ${o.idleTimeoutMs} ms${attempts > 1 ? ` (after ${attempts} attempts)` : ''}`, { attempts }, e)
            : fail('connect', `the model provider could not be reached (${errorCode(e)})${attempts > 1 ? ` (after ${attempts} attempts)` : ''}`, { attempts }, e);
        }
      } finally {
        att.dispose();
      }
      try {
        await sleep(retryWait ?? backoffMs(attempts - 1, o.backoff ?? TRANSPORT_DEFAULTS.backoff), undefined, { signal: call.signal });
      } catch (e) {
        throw fail(call.reason ?? 'aborted', call.reason === 'timeout' ? `the model call ran past its ${o.timeoutMs} ms limit` : 'the model call was aborted', { attempts }, e);
      }
    }
  } catch (e) {
    call.dispose();
    throw e;
  }
}

async function* guardedChunks(
  first: Buffer,
  it: AsyncIterator<Buffer>,
  body: { destroy(): unknown },
  att0: AttemptGuard,
  call: CallGuard,
  o: TransportOptions,
  attempts: number,
): AsyncGenerator<Uint8Array, void, undefined> {
  // The attempt's idle timer and abort link live on for the stream (the attempt guard was
  // disposed by openStream's finally): a fresh one is bound to the same request signal.
  const att = att0.reopen();
  let bytes = first.length;
  let complete = false;
  try {
    yield first;
    for (;;) {
      let r: IteratorResult<Buffer>;
      try {
        r = await it.next();
      } catch (e) {
        if (call.reason) throw failure(call.reason, call.reason === 'aborted' ? 'the model call was aborted' : `the model call ran past its ${o.timeoutMs} ms limit`, o.secrets, { attempts }, e);
        if (att.idleFired || isUndiciTimeout(e)) throw failure('idle_timeout', `the model stream stalled: nothing for ${o.idleTimeoutMs} ms`, o.secrets, { attempts }, e);
        throw failure('disconnected', `the model stream broke off (${errorCode(e)})`, o.secrets, { attempts }, e);
      }
      if (r.done) break;
      att.touch();
      bytes += r.value.length;
      if (bytes > o.maxReplyBytes) throw failure('too_large', `the model reply is over its ${o.maxReplyBytes}-byte cap`, o.secrets, { attempts });
      yield r.value;
    }
    complete = true;
  } finally {
    att.dispose();
    call.dispose();
    if (!complete) body.destroy();
  }
}

async function readSome(body: AsyncIterable<Buffer> & { destroy(): unknown }, cap: number): Promise<string> {
  const parts: Buffer[] = [];
  let n = 0;
  try {
    for await (const c of body) {
      parts.push(c);
      n += c.length;
      if (n >= cap) break;
    }
  } finally {
    body.destroy();
  }
  return Buffer.concat(parts).subarray(0, cap).toString('utf8');
}

function isUndiciTimeout(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT';
}

function errorCode(e: unknown): string {
  const o = e as { code?: unknown; name?: unknown } | null;
  const c = typeof o?.code === 'string' ? o.code : typeof o?.name === 'string' ? o.name : 'error';
  return /^[A-Za-z0-9_]{1,40}$/.test(c) ? c : 'error';
}

/** A model_unavailable error whose message and cause carry no secret (the cause is a scrubbed copy). */
export function failure(reason: FailReason, message: string, secrets: readonly string[], extra: Record<string, unknown> = {}, cause?: unknown): BrigError {
  const opts: { data: Record<string, unknown>; cause?: unknown } = { data: { reason, ...extra } };
  if (cause !== undefined) {
    const c = cause as { name?: unknown; message?: unknown; code?: unknown } | null;
    const copy = new Error(scrubSecrets(typeof c?.message === 'string' ? c.message : String(cause), secrets));
    copy.name = typeof c?.name === 'string' ? c.name : 'Error';
    if (typeof c?.code === 'string') (copy as Error & { code?: string }).code = c.code;
    opts.cause = copy;
  }
  return new BrigError('model_unavailable', scrubSecrets(message, secrets), opts);
}

/** The whole call: the caller's signal and the deadline. */
class CallGuard {
  private readonly ctl = new AbortController();
  reason: 'aborted' | 'timeout' | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort = () => this.abort('aborted');

  constructor(timeoutMs: number, private readonly outer?: AbortSignal) {
    this.timer = setTimeout(() => this.abort('timeout'), timeoutMs).unref();
    if (outer?.aborted) this.abort('aborted');
    else outer?.addEventListener('abort', this.onAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.ctl.signal;
  }

  private abort(reason: 'aborted' | 'timeout'): void {
    if (this.reason) return;
    this.reason = reason;
    this.ctl.abort();
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.outer?.removeEventListener('abort', this.onAbort);
  }
}

/** One attempt: aborted by the call or by its own idle timer (reset on every byte). */
class AttemptGuard {
  private readonly ctl: AbortController;
  idleFired = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly onAbort = () => this.ctl.abort();

  constructor(private readonly call: AbortSignal, private readonly idleMs: number, ctl?: AbortController) {
    this.ctl = ctl ?? new AbortController();
    if (call.aborted) this.ctl.abort();
    else call.addEventListener('abort', this.onAbort, { once: true });
    this.touch();
  }

  get signal(): AbortSignal {
    return this.ctl.signal;
  }

  touch(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.idleFired = true;
      this.ctl.abort();
    }, this.idleMs).unref();
  }

  /** The same request signal under a fresh idle timer and call link. */
  reopen(): AttemptGuard {
    return new AttemptGuard(this.call, this.idleMs, this.ctl);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.call.removeEventListener('abort', this.onAbort);
  }
}
