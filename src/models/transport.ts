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
import type { Dispatcher } from 'undici';
import { undici } from './undici.js';
import { BrigError } from '../util/errors.js';
import { AttemptGuard, CallGuard } from './call-guards.js';
import { failure, providerErrorText, type FailReason } from './model-errors.js';
import { backoffMs, RETRY_STATUS, retryAfterMs } from './retry-policy.js';

export type { FailReason } from './model-errors.js';

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
  /** Drops the connection now (a pending read then fails). */
  close(): void;
}

export const TRANSPORT_DEFAULTS = Object.freeze({
  maxRetries: 2,
  timeoutMs: 600_000,
  idleTimeoutMs: 60_000,
  maxReplyBytes: 8 * 1024 * 1024,
  backoff: { initialMs: 500, maxMs: 8000 },
});

const ERROR_BODY_CAP = 64 * 1024;

type Fail = (reason: FailReason, message: string, extra?: Record<string, unknown>, cause?: unknown) => BrigError;
type Outcome = { kind: 'opened'; stream: OpenedStream } | { kind: 'retry'; waitMs: number | undefined };

const after = (attempts: number) => (attempts > 1 ? ` (after ${attempts} attempts)` : '');

/** POSTs `body` and returns the reply stream once its first byte arrived (retrying before that). */
export async function openStream(body: string, o: TransportOptions): Promise<OpenedStream> {
  const call = new CallGuard(o.timeoutMs, o.signal);
  const fail: Fail = (reason, message, extra = {}, cause) => failure(reason, message, o.secrets, extra, cause);
  try {
    for (let attempts = 1; ; attempts++) {
      const r = await attempt(body, o, call, attempts, fail);
      if (r.kind === 'opened') return r.stream;
      try {
        await sleep(r.waitMs ?? backoffMs(attempts - 1, o.backoff ?? TRANSPORT_DEFAULTS.backoff), undefined, { signal: call.signal });
      } catch (e) {
        throw callEnded(call, o, fail, attempts, e);
      }
    }
  } catch (e) {
    call.dispose();
    throw e;
  }
}

/** One request: opened at its first body byte, or a retry (with the server's wait), or a final failure (thrown). */
async function attempt(body: string, o: TransportOptions, call: CallGuard, attempts: number, fail: Fail): Promise<Outcome> {
  const last = attempts > o.maxRetries;
  const att = new AttemptGuard(call.signal, o.idleTimeoutMs);
  try {
    const res = await undici().request(o.url, {
      method: 'POST',
      headers: o.headers,
      body,
      signal: att.signal,
      dispatcher: o.dispatcher,
      headersTimeout: o.idleTimeoutMs + 1000,
      bodyTimeout: o.idleTimeoutMs + 1000,
    });
    att.touch();
    if (res.statusCode < 200 || res.statusCode >= 300) return await refused(res, attempts, last, fail);
    const it = res.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const first = await it.next();
    if (first.done || first.value.length === 0) {
      res.body.destroy();
      if (last) throw fail('malformed', 'the model provider sent an empty reply', { attempts });
      return { kind: 'retry', waitMs: undefined };
    }
    if (first.value.length > o.maxReplyBytes) {
      res.body.destroy();
      throw fail('too_large', `the model reply is over its ${o.maxReplyBytes}-byte cap`, { attempts });
    }
    const b = res.body;
    const stream: OpenedStream = {
      contentType: String(res.headers['content-type'] ?? ''),
      status: res.statusCode,
      attempts,
      chunks: guardedChunks(first.value, it, b, att, call, o, attempts),
      fail: (r, m, x) => fail(r, m, { attempts, ...x }),
      close: () => void b.destroy(),
    };
    return { kind: 'opened', stream };
  } catch (e) {
    if (e instanceof BrigError) throw e;
    if (call.reason) throw callEnded(call, o, fail, attempts, e);
    const idle = att.idleFired || isUndiciTimeout(e);
    if (!last) return { kind: 'retry', waitMs: undefined };
    throw idle
      ? fail('idle_timeout', `the model provider sent nothing for ${o.idleTimeoutMs} ms${after(attempts)}`, { attempts }, e)
      : fail('connect', `the model provider could not be reached (${errorCode(e)})${after(attempts)}`, { attempts }, e);
  } finally {
    att.dispose();
  }
}

/** A non-2xx answer: retried when the status (or x-should-retry) says so and attempts are left, else final. */
async function refused(res: Dispatcher.ResponseData, attempts: number, last: boolean, fail: Fail): Promise<Outcome> {
  const text = await readSome(res.body, ERROR_BODY_CAP).catch(() => '');
  const should = res.headers['x-should-retry'];
  const retry = should === 'true' || (should !== 'false' && RETRY_STATUS(res.statusCode));
  if (retry && !last) return { kind: 'retry', waitMs: retryAfterMs(res.headers) };
  const said = providerErrorText(text);
  throw fail('status', `the model provider answered HTTP ${res.statusCode}${said ? `: ${said}` : ''}${after(attempts)}`, { status: res.statusCode, attempts });
}

function callEnded(call: CallGuard, o: TransportOptions, fail: Fail, attempts: number, cause: unknown): BrigError {
  return call.reason === 'timeout'
    ? fail('timeout', `the model call ran past its ${o.timeoutMs} ms limit`, { attempts }, cause)
    : fail('aborted', 'the model call was aborted', { attempts }, cause);
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
        if (call.reason) throw callEnded(call, o, (r, m, x, c) => failure(r, m, o.secrets, x, c), attempts, e);
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

