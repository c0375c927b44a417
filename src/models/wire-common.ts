/**
 * What both wire formats share: tool-argument parsing that never throws, tool-call ids minted
 * when a server sends none, usage estimated when a server reports none (so a budget is never
 * metered as free), and reading a reply that is SSE or — from a server that ignored
 * `stream: true` — one JSON object.
 */
import { SseParser, type SseEvent } from '../util/sse.js';
import type { FailReason, OpenedStream } from './transport.js';
import type { CompletionRequest, LlmToolCall, Usage } from './types.js';

/** A tool call's argument text as an input object; a bad one is `{}` plus the reason, never a throw. */
export function parseToolArguments(raw: string): Pick<LlmToolCall, 'input' | 'inputError'> {
  if (raw.trim() === '') return { input: {} };
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (e) {
    return { input: {}, inputError: `the tool-call arguments were not valid JSON (${e instanceof SyntaxError ? e.message.slice(0, 120) : 'parse error'})` };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { input: {}, inputError: 'the tool-call arguments were not a JSON object' };
  return { input: v };
}

/**
 * Mints `brig_<n>` ids for tool calls that came without one, n past every `brig_<n>` already in
 * the conversation, so a minted id never collides with an earlier turn's.
 */
export class IdMinter {
  private n: number;

  constructor(messages: CompletionRequest['messages']) {
    let max = 0;
    const see = (id: string) => {
      const m = /^brig_(\d{1,15})$/.exec(id);
      if (m) max = Math.max(max, Number(m[1]));
    };
    for (const m of messages) {
      if (m.role === 'assistant') for (const c of m.toolCalls ?? []) see(c.id);
      if (m.role === 'tool') see(m.toolCallId);
    }
    this.n = max;
  }

  next(): string {
    return `brig_${++this.n}`;
  }
}

const tokensOf = (chars: number) => Math.ceil(chars / 4);

/** chars / 4 of what was sent and received, for a server that reported no usage. */
export function estimateUsage(req: CompletionRequest, content: string, toolCalls: LlmToolCall[]): Usage {
  let inChars = req.system.length + JSON.stringify(req.tools ?? []).length;
  for (const m of req.messages) inChars += m.content.length + (m.role === 'assistant' ? JSON.stringify(m.toolCalls ?? []).length : 0);
  const outChars = content.length + toolCalls.reduce((n, c) => n + c.name.length + JSON.stringify(c.input).length, 0);
  const input = tokensOf(inChars);
  const output = tokensOf(outChars);
  return { input, output, cacheRead: 0, cacheWrite: 0, total: input + output };
}

/** A non-negative integer field, or undefined. */
export function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : undefined;
}

export function usageOf(input: number, output: number, cacheRead: number, cacheWrite: number): Usage {
  const cr = Math.min(cacheRead, input);
  const cw = Math.min(cacheWrite, input - cr);
  return { input, output, cacheRead: cr, cacheWrite: cw, total: input + output };
}

export interface ReplySink {
  /** One SSE event; returns true when it carried content (text or a tool-call piece). */
  event(e: SseEvent): boolean;
  /** The whole reply as one JSON value (a server that did not stream). */
  whole(json: unknown): void;
  /** True once the format's terminal event arrived (the rest of the body is ignored). */
  readonly done: boolean;
}

/**
 * Feeds the reply to the sink; returns when the body ends or the sink is done. The time of the
 * first content is reported through `onContent` (for firstTokenMs).
 */
export async function readReply(s: OpenedStream, sink: ReplySink, onContent: () => void): Promise<void> {
  const ct = s.contentType.toLowerCase();
  let mode: 'sse' | 'json' | undefined = ct.includes('text/event-stream') ? 'sse' : ct.includes('json') ? 'json' : undefined;
  const parser = new SseParser();
  const parts: Uint8Array[] = [];
  const feed = (events: SseEvent[]) => {
    for (const e of events) {
      if (sink.done) return;
      if (parseGuard(() => sink.event(e), s)) onContent();
    }
  };
  const it = s.chunks[Symbol.asyncIterator]();
  for (;;) {
    const r = await it.next();
    if (r.done) break;
    const chunk = r.value;
    if (mode === undefined) mode = /^\s*[[{]/.test(Buffer.from(chunk.subarray(0, 64)).toString('latin1')) ? 'json' : 'sse';
    if (mode === 'json') parts.push(chunk);
    else {
      feed(parser.push(chunk));
      if (sink.done) return settleTail(it, s);
    }
  }
  if (mode === 'sse') return feed(parser.end());
  let json: unknown;
  try {
    json = JSON.parse(Buffer.concat(parts).toString('utf8'));
  } catch {
    throw s.fail('malformed', 'the model provider sent a reply that is neither an event stream nor JSON');
  }
  parseGuard(() => sink.whole(json), s);
  onContent();
}

const TAIL_GRACE_MS = 250;

/**
 * After the terminal event, read the few bytes left (the chunked trailer) so the connection
 * goes back to the pool for the next call; a server that keeps the body open past a short grace
 * is cut instead. Nothing after the end counts: the reply is already complete.
 */
async function settleTail(it: AsyncIterator<Uint8Array>, s: OpenedStream): Promise<void> {
  const timer = setTimeout(() => s.close(), TAIL_GRACE_MS).unref();
  try {
    for (let n = 0; n < 4; n++) if ((await it.next()).done) return;
    s.close();
  } catch {
    // cut or broken after the end: the reply is complete
  } finally {
    clearTimeout(timer);
  }
}

/** What a wire parser throws (pure: no transport in sight); readReply scrubs it into a BrigError. */
export class WireError extends Error {
  constructor(readonly reason: FailReason, message: string, readonly extra: Record<string, unknown> = {}) {
    super(message);
  }
}

/** A parser's WireError or SyntaxError (bad JSON in an event) becomes a scrubbed model_unavailable. */
function parseGuard<T>(f: () => T, s: OpenedStream): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof WireError) throw s.fail(e.reason, e.message, e.extra);
    if (e instanceof SyntaxError) throw s.fail('malformed', 'the model provider sent an event that is not JSON');
    throw e;
  }
}
