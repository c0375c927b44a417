/**
 * The HTTP base both model clients stand on (openai-chat.ts, anthropic-messages.ts): the
 * endpoint, the key, the connection pool and the settings, and the one call they make — POST
 * the format's body, read the reply into the format's sink, time the first content. A format
 * adds only its URL, its key header and its body and reply (the *-wire.ts files).
 * The API key is held in a private field of this base (not enumerable, not inspectable, not
 * serialised) and reaches the transport only as the header its format names, plus a secret
 * to scrub from every error (transport.ts).
 */
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import { endpointAgent, maxTokensFor, settingsOf, type ClientOptions, type Settings } from './client-options.js';
import { failure } from './model-errors.js';
import { openStream } from './transport.js';
import type { Completion, CompletionRequest, CompletionTuning, ModelApi, ModelClient } from './types.js';
import { readReply, WireError, type ReplySink } from './wire-common.js';

/** What a wire format tells the base: where to POST, and how its key travels. */
export interface WireEndpoint {
  url: string;
  /** The format's headers for a key (none when the key is empty: local servers). */
  headers(key: string): Record<string, string>;
}

export abstract class HttpModelClient implements ModelClient {
  abstract readonly api: ModelApi;
  readonly model: string;
  readonly #key: string;
  readonly #endpoint: WireEndpoint;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #settings: Settings;
  readonly #maxOutputTokens: number | undefined;

  protected constructor(o: ClientOptions, endpoint: WireEndpoint) {
    this.model = o.model;
    this.#key = o.apiKey ?? '';
    this.#endpoint = endpoint;
    this.#settings = settingsOf(o);
    this.#ownsDispatcher = o.dispatcher === undefined;
    this.#dispatcher = o.dispatcher ?? endpointAgent(this.#settings.idleTimeoutMs);
    this.#maxOutputTokens = o.maxOutputTokens;
  }

  abstract complete(req: CompletionRequest & CompletionTuning): Promise<Completion>;

  /** The request's max tokens clamped to the alias's maxOutputTokens (that ceiling when the request sets none). */
  protected maxTokens(requested: number | undefined): number | undefined {
    return maxTokensFor(requested, this.#maxOutputTokens);
  }

  /** POSTs the format's body and returns what its sink made of the reply. */
  protected post<T>(body: unknown, sink: ReplySink & { result(firstTokenMs: number | null): T }, signal: AbortSignal | undefined): Promise<T> {
    return exchange({
      url: this.#endpoint.url,
      headers: this.#endpoint.headers(this.#key),
      secrets: [this.#key],
      body,
      dispatcher: this.#dispatcher,
      settings: this.#settings,
      signal,
      sink,
    });
  }

  /** Closes the connection pool when this client made it (a catalog's shared one is the catalog's). */
  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }
}

/** POSTs, reads the reply into the sink, and returns the sink's result given ms to the first content (null: none). */
async function exchange<T>(o: {
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
