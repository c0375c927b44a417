/**
 * models/ in brig's own words: provider-neutral messages, tools, usage and cost. Nothing here
 * knows a wire format; the clients (openai-chat, anthropic-messages) translate at the edge.
 */
import type { Result } from '../util/errors.js';

import type { FinishReason, LlmMessage, LlmTool, LlmToolCall, Usage } from '../protocol/index.js';

/** The conversation words are the broker's (protocol/broker.ts): an agent child speaks them too. */
export type { FinishReason, LlmMessage, LlmTool, LlmToolCall, Usage } from '../protocol/index.js';

export interface CompletionRequest {
  system: string;
  messages: LlmMessage[];
  tools?: LlmTool[];
  maxTokens?: number;
  signal?: AbortSignal;
  /** stable per tree, for provider prompt caches */
  cacheKey?: string;
  /**
   * `none`: the tools are listed (Anthropic refuses a history with tool blocks and no tools;
   * the cached prefix stays the same) but the model may not call one — a summary, a salvage.
   * `required`: the model must call one (brig's local provider asks for it on an agent step).
   */
  toolChoice?: 'auto' | 'none' | 'required';
}

/**
 * Knobs brig's own clients also read when present on a request (Level 2 condensation uses
 * them); they are not part of the broker contract. `json` asks an OpenAI-style server for a
 * JSON object reply (`response_format`); the Anthropic client ignores it.
 */
export interface CompletionTuning {
  temperature?: number;
  json?: boolean;
}

export interface Completion {
  message: { role: 'assistant'; content: string; toolCalls: LlmToolCall[] };
  finishReason: FinishReason;
  usage: Usage;
  model: string;
  /** ms to the first streamed byte of content */
  firstTokenMs: number | null;
}

export interface ModelClient {
  /** `local`: a GGUF brig serves itself (models/local/), spoken to over the openai-chat wire. */
  readonly api: 'openai-chat' | 'anthropic-messages' | 'local';
  readonly model: string;
  complete(req: CompletionRequest): Promise<Completion>;
}

export type ModelApi = ModelClient['api'];

export interface Price {
  inputPerToken: number;
  outputPerToken: number;
  cacheReadPerToken?: number;
  cacheWritePerToken?: number;
}

export interface ResolvedModel {
  alias: string;
  client: ModelClient;
  contextWindow: number;
  maxOutputTokens: number;
  price: Price | null;
  /** Served by brig itself (api local): priced 0, and the envelope's cost line says so. */
  local?: boolean;
}

export interface ModelCatalog {
  resolve(alias?: string): Result<ResolvedModel>;
  aliases(): string[];
  readonly defaultAlias: string | null;
}

/**
 * What one call cost in USD, or null when the model has no price (never 0 by guess). Each
 * input token is billed once: cached reads at the cache-read rate, cache writes at the
 * cache-write rate (each falls back to the input rate when unpriced), the rest at the input rate.
 */
export function costOf(usage: Usage, price: Price | null): number | null {
  if (!price) return null;
  const cacheRead = Math.max(0, usage.cacheRead);
  const cacheWrite = Math.max(0, usage.cacheWrite);
  const fresh = Math.max(0, usage.input - cacheRead - cacheWrite);
  return (
    fresh * price.inputPerToken +
    cacheRead * (price.cacheReadPerToken ?? price.inputPerToken) +
    cacheWrite * (price.cacheWritePerToken ?? price.inputPerToken) +
    Math.max(0, usage.output) * price.outputPerToken
  );
}

// ---- The older role Level 2 condensation uses (src/results/condense.ts): one chat completion, metered.
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
