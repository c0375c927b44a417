/**
 * What both clients are built from (http-model-client.ts): their options, the settings a call
 * runs under, the connection pool per endpoint, and the max-tokens clamp.
 */
import type { Agent, Dispatcher } from 'undici';
import { undici } from './undici.js';
import { TRANSPORT_DEFAULTS } from './transport.js';

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
  return new (undici().Agent)({ keepAliveTimeout: 10_000, headersTimeout: idleTimeoutMs + 1000, bodyTimeout: idleTimeoutMs + 1000, connections: 32 });
}

/** The request's max tokens clamped to the model's ceiling (the ceiling when the request sets none). */
export function maxTokensFor(requested: number | undefined, ceiling: number | undefined): number | undefined {
  if (requested === undefined) return ceiling;
  const r = Math.max(1, Math.floor(requested));
  return ceiling === undefined ? r : Math.min(r, ceiling);
}
