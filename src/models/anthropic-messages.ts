/**
 * `anthropic-messages`: POST {baseUrl}/v1/messages, streamed (SSE). baseUrl is the host root
 * as the Anthropic SDK takes it (`https://api.anthropic.com`, `http://127.0.0.1:11434` for
 * Ollama); a trailing `/v1` is accepted and not doubled. Speaks to Anthropic, Ollama ≥ 0.14,
 * llama.cpp, LM Studio and vLLM. The key is an `x-api-key` header to that URL only and never
 * appears in an error (see transport.ts).
 */
import { AnthropicReply, anthropicBody } from './anthropic-messages-wire.js';
import type { ClientOptions } from './client-options.js';
import { HttpModelClient } from './http-model-client.js';
import type { Completion, CompletionRequest, CompletionTuning } from './types.js';

export const ANTHROPIC_VERSION = '2023-06-01';
/** max_tokens is required by the API: used when neither the request nor the alias gives one. */
const FALLBACK_MAX_TOKENS = 4096;

/** `{base}/v1/messages`, with a base that already ends in /v1 not doubled. */
export function anthropicUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1/messages`;
}

export class AnthropicMessagesClient extends HttpModelClient {
  readonly api = 'anthropic-messages' as const;

  constructor(o: ClientOptions) {
    super(o, {
      url: anthropicUrl(o.baseUrl),
      headers: (key) => ({ 'anthropic-version': ANTHROPIC_VERSION, ...(key ? { 'x-api-key': key } : {}) }),
    });
  }

  override async complete(req: CompletionRequest & CompletionTuning): Promise<Completion> {
    return this.post(anthropicBody(req, this.model, this.maxTokens(req.maxTokens) ?? FALLBACK_MAX_TOKENS), new AnthropicReply(req, this.model), req.signal);
  }
}
