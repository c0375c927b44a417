/**
 * `anthropic-messages`: POST {baseUrl}/v1/messages, streamed (SSE). baseUrl is the host root
 * as the Anthropic SDK takes it (`https://api.anthropic.com`, `http://127.0.0.1:11434` for
 * Ollama); a trailing `/v1` is accepted and not doubled. Speaks to Anthropic, Ollama ≥ 0.14,
 * llama.cpp, LM Studio and vLLM. The key is an `x-api-key` header to that URL only and never
 * appears in an error (see transport.ts).
 */
import type { Dispatcher } from 'undici';
import { AnthropicReply, anthropicBody } from './anthropic-messages-wire.js';
import { endpointAgent, exchange, maxTokensFor, settingsOf, type ClientOptions, type Settings } from './client-options.js';
import type { Completion, CompletionRequest, CompletionTuning, ModelClient } from './types.js';

export const ANTHROPIC_VERSION = '2023-06-01';
/** max_tokens is required by the API: used when neither the request nor the alias gives one. */
const FALLBACK_MAX_TOKENS = 4096;

/** `{base}/v1/messages`, with a base that already ends in /v1 not doubled. */
export function anthropicUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1/messages`;
}

export class AnthropicMessagesClient implements ModelClient {
  readonly api = 'anthropic-messages' as const;
  readonly model: string;
  readonly #key: string;
  readonly #url: string;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #settings: Settings;
  readonly #maxOutputTokens: number | undefined;

  constructor(o: ClientOptions) {
    this.model = o.model;
    this.#key = o.apiKey ?? '';
    this.#url = anthropicUrl(o.baseUrl);
    this.#settings = settingsOf(o);
    this.#ownsDispatcher = o.dispatcher === undefined;
    this.#dispatcher = o.dispatcher ?? endpointAgent(this.#settings.idleTimeoutMs);
    this.#maxOutputTokens = o.maxOutputTokens;
  }

  async complete(req: CompletionRequest & CompletionTuning): Promise<Completion> {
    return exchange({
      url: this.#url,
      headers: { 'anthropic-version': ANTHROPIC_VERSION, ...(this.#key ? { 'x-api-key': this.#key } : {}) },
      secrets: [this.#key],
      body: anthropicBody(req, this.model, maxTokensFor(req.maxTokens, this.#maxOutputTokens) ?? FALLBACK_MAX_TOKENS),
      dispatcher: this.#dispatcher,
      settings: this.#settings,
      signal: req.signal,
      sink: new AnthropicReply(req, this.model),
    });
  }

  /** Closes the connection pool when this client made it (a catalog's shared one is the catalog's). */
  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }
}
