/**
 * How a tool answers: structured content (what a program reads) plus one text block (what a
 * model reads), for a result and for a refusal alike. A refusal — the SQL guard, a lease
 * denial, an unknown run, `not_running` — is a tool result with `isError: true` carrying the
 * BrigError's code, kind, message and hint, never a JSON-RPC error: the model sees it and can
 * act on it.
 */
import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { BrigError, ERROR_CODES, scrubHostPaths, toBrigError } from '../util/errors.js';
import { hintFor } from '../util/face-hints.js';

/** The refusal as structured content: the wire form every face shows (BrigError.toJSON) plus its kind. */
export const ToolErrorSchema = z.object({
  code: z.string().describe('stable lowercase code from brig’s one catalog (e.g. query_refused, run_not_found)'),
  kind: z.string().describe('invalid | denied | not_found | conflict | limit | unavailable | corrupt | internal'),
  message: z.string(),
  hint: z.string().describe('what to do next'),
  data: z.record(z.string(), z.unknown()).optional(),
});
export type ToolError = z.infer<typeof ToolErrorSchema>;

/**
 * A tool's output schema: its result fields, each optional, and `error`. Every field is
 * optional because a refusal carries `{error}` in the same structured content, and the
 * SDK's client (1.x, typescript-sdk#1943) validates an `isError` result's structured content
 * against the output schema too. A successful call always fills the fields its tool names.
 */
export function outputShape<S extends z.ZodRawShape>(fields: S) {
  if ('error' in fields) throw new Error('`error` is the refusal field of every output schema');
  return z.object(fields).partial().extend({ error: ToolErrorSchema.optional().describe('set only on a refusal (isError: true)') });
}

export function toolError(e: BrigError): ToolError {
  const j = e.toJSON();
  return { code: j.code, kind: ERROR_CODES[j.code].kind, message: j.message, hint: hintFor(e, 'mcp'), ...(j.data ? { data: j.data } : {}) };
}

/** A refusal as a tool result (`isError: true`): the code and hint (in MCP's words) in both forms. */
export function refusal(e: unknown): CallToolResult {
  // brig's own errors keep their words; anything else is `internal`, its host paths scrubbed.
  const be = e instanceof BrigError ? e : new BrigError(toBrigError(e).code, scrubHostPaths(toBrigError(e).message), { cause: e });
  const error = toolError(be);
  const text = `refused [${error.code}]: ${error.message}\n→ ${error.hint}`;
  return { isError: true, content: [{ type: 'text', text }], structuredContent: { error } };
}

/** A result: `structured` for programs, `text` for the model. */
export function answer(structured: Record<string, unknown>, text: string): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structured };
}

/**
 * Runs a tool body: a thrown BrigError (or anything else) becomes a refusal result, so no
 * tool ever answers with a protocol error for something brig decided.
 */
export async function guarded(fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (e) {
    return refusal(e);
  }
}
