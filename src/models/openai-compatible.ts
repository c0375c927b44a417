/**
 * The OpenAI-compatible `ModelProvider` (Level 2 condensation) kept under its old name: now the
 * streaming `openai-chat` client behind the `chat` role. The key is a bearer header to the
 * configured base URL only, never logged, never in an error (see transport.ts).
 */
import { ClientChatProvider } from './chat-provider.js';
import type { ClientOptions } from './client-options.js';
import { OpenAIChatClient } from './openai-chat.js';

export interface OpenAICompatibleOptions extends ClientOptions {
  /** e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`. */
  baseUrl: string;
  /** Absent or empty: no authorization header (local servers). */
  apiKey?: string;
  model: string;
}

export class OpenAICompatibleProvider extends ClientChatProvider {
  constructor(opts: OpenAICompatibleOptions) {
    super(new OpenAIChatClient(opts), `openai-compatible:${opts.model}`);
  }
}
