/**
 * `openai-chat`: POST {baseUrl}/chat/completions, streamed (SSE) with usage. Speaks to OpenAI,
 * Ollama, vLLM, llama.cpp, LM Studio, LiteLLM and OpenRouter. The key is a bearer header to
 * the configured base URL only and never appears in an error (see transport.ts).
 */
import type { Dispatcher } from 'undici';
import { endpointAgent, exchange, maxTokensFor, settingsOf, type ClientOptions, type Settings } from './client-options.js';
import { OpenaiChatReply, openaiChatBody } from './openai-chat-wire.js';
import type { Completion, CompletionRequest, CompletionTuning, ModelClient } from './types.js';

export class OpenAIChatClient implements ModelClient {
  readonly api = 'openai-chat' as const;
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
    this.#url = `${o.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.#settings = settingsOf(o);
    this.#ownsDispatcher = o.dispatcher === undefined;
    this.#dispatcher = o.dispatcher ?? endpointAgent(this.#settings.idleTimeoutMs);
    this.#maxOutputTokens = o.maxOutputTokens;
  }

  async complete(req: CompletionRequest & CompletionTuning): Promise<Completion> {
    return exchange({
      url: this.#url,
      headers: this.#key ? { authorization: `Bearer ${this.#key}` } : {},
      secrets: [this.#key],
      body: openaiChatBody(req, this.model, maxTokensFor(req.maxTokens, this.#maxOutputTokens)),
      dispatcher: this.#dispatcher,
      settings: this.#settings,
      signal: req.signal,
      sink: new OpenaiChatReply(req, this.model),
    });
  }

  /** Closes the connection pool when this client made it (a catalog's shared one is the catalog's). */
  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }
}
