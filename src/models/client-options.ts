/**
 * What both clients are built from, and the call they share: POST the body, read the reply
 * into the format's sink, time the first content. The API key is held in a private field of
 * the client (not enumerable, not inspectable, not serialised) and handed to the transport
 * only as a header plus a secret to scrub.
 */
import { performance } from 'node:perf_hooks';
import { Agent, type Dispatcher } from 'undici';
import { failure } from './model-errors.js';
import { openStream, TRANSPORT_DEFAULTS } from './transport.js';
import { readReply, WireError, type ReplySink } from './wire-common.js';

export interface ClientOptions {
  /** openai-chat: up to and including the version segment (`https://api.openai.com/v1`); anthropic-messages: the host root (`https://api.anthropic.com`), a trailing `/v1` is accepted. */
  baseUrl: string;
  /** Absent or empty: no key header is sent (local servers). */
  apiKey?: string;
  model: string;
  /** The whole call, retries and stream included (default 600 000). */
  timeoutMs?: number;
  /** Longest wait for headers or the next body chunk (default 60 000). */
  idleTimeoutMs?: number;
  /** Retries before the first body byte (default 2). */
  maxRetries?: number;
  /** A reply past this is refused (default 8 MiB). */
  maxReplyBytes?: number;
  /** Ceiling on a request's maxTokens, and its value when a request sets none (the alias's maxOutputTokens). */
  maxOutputTokens?: number;
  /** Shared per provider by the catalog; a client given none makes (and owns) its own Agent. */
  dispatcher?: Dispatcher;
  /** Retry backoff (tests shorten it). */
  backoff?: { initialMs: number; maxMs: number };
}

export interface Settings {
  timeoutMs: number;
  idleTimeoutMs: number;
  maxRetries: number;
  maxReplyBytes: number;
  backoff: { initialMs: number; maxMs: number };
}

export function settingsOf(o: ClientOptions): Settings {
  return {
    timeoutMs: o.timeoutMs ?? TRANSPORT_DEFAULTS.timeoutMs,
    idleTimeoutMs: o.idleTimeoutMs ?? TRANSPORT_DEFAULTS.idleTimeoutMs,
    maxRetries: o.maxRetries ?? TRANSPORT_DEFAULTS.maxRetries,
    maxReplyBytes: o.maxReplyBytes ?? TRANSPORT_DEFAULTS.maxReplyBytes,
    backoff: o.backoff ?? TRANSPORT_DEFAULTS.backoff,
  };
}

/** One Agent per endpoint: keep-alive, timeouts backstopping the idle timer. */
export function endpointAgent(idleTimeoutMs: number = TRANSPORT_DEFAULTS.idleTimeoutMs): Agent {
  return new Agent({ keepAliveTimeout: 10_000, headersTimeout: idleTimeoutMs + 1000, bodyTimeout: idleTimeoutMs + 1000, connections: 32 });
}

/** The request's max tokens clamped to the model's ceiling (the ceiling when the request sets none). */
export function maxTokensFor(requested: number | undefined, ceiling: number | undefined): number | undefined {
  if (requested === undefined) return ceiling;
  const r = Math.max(1, Math.floor(requested));
  return ceiling === undefined ? r : Math.min(r, ceiling);
}

/** POSTs, reads the reply into the sink, and returns the sink's result given ms to the first content (null: none). */
export async function exchange<T>(o: {
  url: string;
  headers: Record<string, string>;
  secrets: readonly string[];
  body: unknown;
  dispatcher: Dispatcher;
  settings: Settings;
  signal: AbortSignal | undefined;
  sink: ReplySink & { result(firstTokenMs: number | null): T };
}): Promise<T> {
  const t0 = performance.now();
  const opened = await openStream(JSON.stringify(o.body), {
    url: o.url,
    headers: { 'content-type': 'application/json', accept: 'text/event-stream, application/json', 'accept-encoding': 'identity', 'user-agent': 'brig', ...o.headers },
    secrets: o.secrets,
    dispatcher: o.dispatcher,
    ...o.settings,
    ...(o.signal ? { signal: o.signal } : {}),
  });
  let first: number | null = null;
  try {
    await readReply(opened, o.sink, () => {
      first ??= Math.round(performance.now() - t0);
    });
  } finally {
    // Whether done early or failed, the rest of the body is not read.
    await opened.chunks.return(undefined);
  }
  try {
    return o.sink.result(first);
  } catch (e) {
    if (e instanceof WireError) throw failure(e.reason, e.message, o.secrets, { attempts: opened.attempts, ...e.extra });
    throw e;
  }
}
