/** The role brig needs from a language model: one chat completion, metered. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatRequest {
  messages: ChatMessage[];
  maxTokens?: number;
  temperature?: number;
  /** Ask for a JSON object reply (OpenAI `response_format: {type: 'json_object'}`). */
  json?: boolean;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface ChatResponse {
  content: string;
  model: string;
  usage: ChatUsage;
}

/**
 * A model endpoint. Keys live inside the implementation (built by the composition root from
 * config) and never leave the supervisor: children reach models through the broker.
 */
export interface ModelProvider {
  readonly name: string;
  chat(req: ChatRequest): Promise<ChatResponse>;
}
