/**
 * models/: LLM providers over undici — `openai-chat` and `anthropic-messages`, streamed, with
 * retries before the first byte only, idle and call timeouts, a reply byte cap, normalized
 * usage and cost. Keys stay here: no error, log or return value carries one.
 */
export { costOf } from './types.js';
export type {
  LlmToolCall,
  LlmMessage,
  LlmTool,
  Usage,
  FinishReason,
  CompletionRequest,
  CompletionTuning,
  Completion,
  ModelClient,
  ModelApi,
  Price,
  ResolvedModel,
  ModelCatalog,
  ChatMessage,
  ChatRequest,
  ChatResponse,
  ChatUsage,
  ModelProvider,
} from './types.js';
export { OpenAIChatClient } from './openai-chat.js';
export { AnthropicMessagesClient, ANTHROPIC_VERSION } from './anthropic-messages.js';
export type { ClientOptions } from './client-options.js';
export { TRANSPORT_DEFAULTS } from './transport.js';
export type { FailReason } from './transport.js';
export { loadModelCatalog, condensationModel, ConfiguredModelCatalog, ENV_ALIAS } from './catalog.js';
export { ClientChatProvider } from './chat-provider.js';
export { OpenAICompatibleProvider } from './openai-compatible.js';
export type { OpenAICompatibleOptions } from './openai-compatible.js';
export { REGISTERED_ALIAS } from './catalog.js';
// The local provider: a GGUF brig serves itself (models/local/).
export { DEFAULT_MODEL, pullDefaultModel, registerGguf, sha256Of } from './local/pull.js';
export type { PullResult, PullOptions } from './local/pull.js';
export { readGgufHeader } from './local/gguf-header.js';
export type { GgufHeader } from './local/gguf-header.js';
export { LocalModelHost, localModelProblem, DEFAULT_RUNTIME_DIR } from './local/local-host.js';
export { LocalModelClient } from './local/local-client.js';
export { createLocalServer } from './local/local-server.js';
export type { LocalEngine } from './local/llama-engine.js';
export { chatmlPrompt, promptText } from './local/chatml.js';
export type { Segment } from './local/chatml.js';
export { toolCallGrammar, readToolReply } from './local/tool-grammar.js';
