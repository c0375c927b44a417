import type { BrigError, Result } from '../util/errors.js';

/**
 * What the supervisor needs from models, in its own words: resolve an alias to a model's
 * window, and complete one turn of a conversation. The composition root adapts the model
 * catalog (src/models) to this; keys stay inside that adapter. The message shapes are the
 * provider-neutral ones of docs/agents.md.
 */

export interface ToolCall {
  id: string;
  name: string;
  input: unknown;
  inputError?: string;
}

export type ConversationMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string; isError?: boolean };

export interface ToolSchema {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  total: number;
}

export interface ModelTurn {
  message: { role: 'assistant'; content: string; toolCalls: ToolCall[] };
  finishReason: 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'error';
  usage: ModelUsage;
  model: string;
  /** null when the model has no price: cost unknown, never 0. */
  costUsd: number | null;
  firstTokenMs: number | null;
}

export interface ModelInfo {
  alias: string;
  contextWindow: number;
  maxOutputTokens: number;
}

export interface ModelPort {
  /** The model an alias names, or the default; model_unavailable when none is configured. */
  resolve(alias?: string): Result<ModelInfo, BrigError>;
  complete(alias: string, req: { system: string; messages: ConversationMessage[]; tools?: ToolSchema[]; toolChoice?: 'auto' | 'none'; maxTokens?: number; cacheKey?: string; signal?: AbortSignal }): Promise<ModelTurn>;
}
