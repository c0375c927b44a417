/**
 * What a tool is to the loop: a name, a one-line description and a JSON schema (all three
 * go to the model), a timeout for the call, and `run`. A tool returns text for the model or
 * throws; the loop turns a throw, a timeout or a refusal into an error result, so every call
 * gets exactly one result.
 */
import type { Roots } from '../confine.js';
import type { Broker, JsonSchema } from '../types.js';

/** A child this run spawned, as far as it has heard. */
export interface ChildInfo {
  runId: string;
  task: string;
  agent: string | null;
  async: boolean;
  status: string;
  endReason: string | null;
}

export interface ToolContext {
  roots: Roots;
  broker: Broker;
  /** Aborted when the call times out or the run is being stopped (SIGTERM). */
  signal: AbortSignal;
  /** The children spawned so far (kept across compaction). */
  children: Map<string, ChildInfo>;
  /** The agent's toolResultMaxChars: tools that page their output stay under it. */
  maxChars: number;
  /** The run's own timeout: an upper bound for a synchronous spawn. */
  runTimeoutMs: number;
}

export interface ToolOutput {
  content: string;
  isError?: boolean;
  /**
   * Output brig already bounded (a child's envelope: condensed to maxResultTokens plus its
   * footer) may pass whole up to this many chars, more than toolResultMaxChars, never more
   * than MAX_BOUNDED_CHARS: cutting it would drop the footer's drill-in lines.
   */
  maxChars?: number;
}

/** The most a tool output that says it is bounded may carry (a line's 44 KiB of JSON leaves room). */
export const MAX_BOUNDED_CHARS = 40_000;

export interface ToolDef {
  name: string;
  description: string;
  parameters: JsonSchema;
  /** How long one call may take before it gets a timeout result. */
  timeoutMs(args: Record<string, unknown>, ctx: ToolContext): number;
  run(args: Record<string, unknown>, ctx: ToolContext): Promise<string | ToolOutput>;
}

/** A tool failure the model should read as is (no stack, no host detail). */
export class ToolError extends Error {
  override name = 'ToolError';
}

export const obj = (properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

export const S = {
  str: (description: string, extra: Partial<JsonSchema> = {}): JsonSchema => ({ type: 'string', description, ...extra }),
  int: (description: string, minimum: number, maximum: number): JsonSchema => ({ type: 'integer', description, minimum, maximum }),
  num: (description: string, minimum: number, maximum: number): JsonSchema => ({ type: 'number', description, minimum, maximum }),
  bool: (description: string): JsonSchema => ({ type: 'boolean', description }),
  strs: (description: string, maxItems: number, item: Partial<JsonSchema> = {}): JsonSchema => ({ type: 'array', description, items: { type: 'string', ...item }, maxItems }),
  oneOf: (description: string, values: readonly string[]): JsonSchema => ({ type: 'string', description, enum: [...values] }),
};
