/**
 * One tool, declared once: its name, the sentence that tells a model when to use it, its
 * annotations, its input schema (zod, strict: an unknown argument is refused) and output
 * schema, and its body. The server registers the table; the unit tests read the same table.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ServerNotification, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { Brig } from '../index.js';
import { guarded } from './tool-result.js';

/** What a tool body gets besides its arguments. */
export interface ToolContext {
  brig: Brig;
  now: () => Date;
  /** How often `wait` reports progress to a client that asked for it. */
  progressEveryMs: number;
  /** The timer `wait`'s progress runs on, injected so a test moves it by hand. */
  timers: { setInterval(fn: () => void, ms: number): unknown; clearInterval(handle: unknown): void };
}

export const REAL_TIMERS: ToolContext['timers'] = {
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
};

/** The parts of the SDK's request context a tool uses. */
export interface CallExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
  sendNotification: (n: ServerNotification) => Promise<void>;
}

export interface ToolDef<I extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  /** When to use it, in one sentence a model can act on (then what it returns). */
  description: string;
  annotations: Required<Omit<ToolAnnotations, 'title'>>;
  input: I;
  output: z.ZodObject;
  run(args: z.infer<I>, ctx: ToolContext, extra: CallExtra): Promise<CallToolResult>;
}

/** A tool with its argument type checked against its schema, stored without it. */
export const tool = <I extends z.ZodObject>(d: ToolDef<I>): ToolDef => d as unknown as ToolDef;

/** The annotations of a tool that only reads. */
export const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

export function registerTools(server: McpServer, defs: ToolDef[], ctx: ToolContext): void {
  for (const d of defs) {
    server.registerTool(
      d.name,
      { title: d.title, description: d.description, inputSchema: d.input, outputSchema: d.output, annotations: { title: d.title, ...d.annotations } },
      ((args: unknown, extra: CallExtra) => guarded(() => d.run(args as never, ctx, extra))) as never,
    );
  }
}
