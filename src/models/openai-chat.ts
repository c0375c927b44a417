/**
 * `openai-chat`: POST {baseUrl}/chat/completions, streamed (SSE) with usage. Speaks to OpenAI,
 * Ollama, vLLM, llama.cpp, LM Studio, LiteLLM and OpenRouter. The key is a bearer header to
 * the configured base URL only and never appears in an error (see transport.ts).
 */
import type { ClientOptions } from './client-options.js';
import { HttpModelClient } from './http-model-client.js';
import { OpenaiChatReply, openaiChatBody } from './openai-chat-wire.js';
import type { Completion, CompletionRequest, CompletionTuning } from './types.js';

export class OpenAIChatClient extends HttpModelClient {
  readonly api = 'openai-chat' as const;

  constructor(o: ClientOptions) {
    super(o, {
      url: `${o.baseUrl.replace(/\/+$/, '')}/chat/completions`,
      headers: (key): Record<string, string> => (key ? { authorization: `Bearer ${key}` } : {}),
    });
  }

  override async complete(req: CompletionRequest & CompletionTuning): Promise<Completion> {
    return this.post(openaiChatBody(req, this.model, this.maxTokens(req.maxTokens)), new OpenaiChatReply(req, this.model), req.signal);
  }
}
