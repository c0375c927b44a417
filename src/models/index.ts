/**
 * models/: LLM providers (OpenAI-compatible chat completions over undici). Keys stay here.
 */
export type { ChatMessage, ChatRequest, ChatResponse, ChatUsage, ModelProvider } from './types.js';
export { OpenAICompatibleProvider } from './openai-compatible.js';
export type { OpenAICompatibleOptions } from './openai-compatible.js';
