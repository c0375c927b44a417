/**
 * The vocabulary of the in-jail agent loop: the broker's model wire contract (docs/agents.md,
 * "The model wire contract") as the child sees it, and the one port everything goes through.
 */

import type { BrokerMethod, ParamsOf, ReplyOf } from '../../protocol/index.js';

/**
 * All the loop needs of the broker: the BrokerClient in the jail, a scripted fake in tests.
 * Typed by the broker's own table (protocol/broker.ts): a call's params and its reply are the
 * ones the supervisor validates and answers, never a cast of the child's own guess.
 */
export interface Broker {
  call<M extends BrokerMethod>(method: M, params: ParamsOf<M>): Promise<ReplyOf<M>>;
}

/** The conversation words are the broker's (protocol/broker.ts): one definition either side of the jail. */
export type { LlmMessage, LlmReply, LlmTool, LlmToolCall as ToolCall } from '../../protocol/index.js';

/** The subset of JSON Schema the tools use (and `check-args.ts` validates). */
// A type alias, not an interface: it must be assignable to the wire's Record<string, unknown>.
export type JsonSchema = {
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
  /** A string that must be one of these. */
  enum?: string[];
};

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
