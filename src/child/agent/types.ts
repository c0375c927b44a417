/**
 * The vocabulary of the in-jail agent loop: the broker's model wire contract (docs/agents.md,
 * "The model wire contract") as the child sees it, and the one port everything goes through.
 */

/** All the loop needs of the broker: the BrokerClient in the jail, a scripted fake in tests. */
export interface Broker {
  call(method: string, params: unknown): Promise<unknown>;
}

export interface ToolCall {
  id: string;
  name: string;
  input: unknown;
}

export type LlmMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string; isError?: boolean };

export interface LlmTool {
  name: string;
  description: string;
  parameters: JsonSchema;
}

export interface LlmReply {
  message: { role: 'assistant'; content: string; toolCalls: (ToolCall & { inputError?: string })[] };
  finishReason: 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'error';
  usage: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
  costUsd: number | null;
  model: string;
  contextWindow: number;
  contextUsed: number;
  budget: { tokensLeft: number | null; costLeftUsd: number | null };
}

/** The subset of JSON Schema the tools use (and `check-args.ts` validates). */
export interface JsonSchema {
  type: 'object' | 'string' | 'integer' | 'number' | 'boolean' | 'array';
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean;
  items?: JsonSchema;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
}

/** Why a run ended other than by `finish` (the `endReason` of a partial result). */
export type EndReason = 'max_steps' | 'budget_exceeded' | 'format_errors' | 'terminated' | 'model_error' | 'broker_error' | 'internal';

/** A broker refusal as the client raises it (`BrokerCallError`): matched by `code`. */
export function errorCode(e: unknown): string {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === 'string' ? c : 'internal';
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
