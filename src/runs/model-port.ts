import type { LlmMessage, LlmTool, LlmToolCall, Usage } from '../models/index.js';
import type { BrigError, Result } from '../util/errors.js';

/**
 * What the supervisor needs from models, in its own words: resolve an alias to a model's
 * window, and complete one turn of a conversation. The composition root adapts the model
 * catalog (src/models) to this; keys stay inside that adapter. The message shapes are the
 * provider-neutral ones of docs/agents.md.
 */

/** The provider-neutral shapes are models/' own (docs/agents.md); runs/ names them for its port. */
export type ToolCall = LlmToolCall;
export type ConversationMessage = LlmMessage;
export type ToolSchema = LlmTool;
export type ModelUsage = Usage;

export interface ModelTurn {
  message: { role: 'assistant'; content: string; toolCalls: ToolCall[] };
  finishReason: 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'error';
  usage: ModelUsage;
  model: string;
  /** null when the model has no price: cost unknown, never 0. */
  costUsd: number | null;
  firstTokenMs: number | null;
  /** Served by brig's own local provider (priced 0). */
  local?: boolean;
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

/**
 * The one ledger line of a model call that answered (INV-7: counts, the alias, the cost and the
 * finish reason — never a message): the same fields for a step, a salvage and a parent summary.
 */
export function modelCallLine(r: { id: string; rootRunId: string }, o: { purpose: string; step?: number; alias: string; turn: ModelTurn; startedMs: number }): { type: 'run.model_call'; [k: string]: string | number | boolean | null } {
  return {
    type: 'run.model_call',
    runId: r.id,
    rootRunId: r.rootRunId,
    ...(o.step !== undefined ? { step: o.step } : {}),
    purpose: o.purpose,
    model: o.alias,
    ok: true,
    input: o.turn.usage.input,
    output: o.turn.usage.output,
    cacheRead: o.turn.usage.cacheRead,
    costUsd: o.turn.costUsd,
    finishReason: o.turn.finishReason,
    toolCalls: o.turn.message.toolCalls.length,
    ms: Date.now() - o.startedMs,
  };
}
