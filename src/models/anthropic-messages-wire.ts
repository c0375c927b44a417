/**
 * The Anthropic Messages wire format, pure: brig's request → the JSON body, and the streamed
 * events (or one non-streamed message) → a Completion.
 *
 * Rules that are easy to get wrong: tool results travel as `tool_result` blocks in the next
 * user message (consecutive tool messages, and a user message right after them, merge into
 * one user turn, results first); empty messages are left out (the API refuses empty blocks); `input_tokens` excludes the cache, so input = input_tokens +
 * cache_read + cache_creation; `message_delta` usage is CUMULATIVE (the last one wins, never a
 * sum); `ping` is ignored and a mid-stream `error` event fails the call.
 */
import { count, estimateUsage, IdMinter, parseToolArguments, usageOf, WireError, type ReplySink } from './wire-common.js';
import type { SseEvent } from '../util/sse.js';
import type { Completion, CompletionRequest, CompletionTuning, FinishReason, LlmMessage, LlmToolCall, Usage } from './types.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Below this many estimated prefix tokens Anthropic skips caching anyway (the smallest model minimum). */
export const CACHE_MIN_TOKENS = 1024;
const EPHEMERAL = Object.freeze({ type: 'ephemeral' });

interface Turn {
  role: 'user' | 'assistant';
  content: Obj[];
}

export function anthropicMessages(messages: LlmMessage[]): Turn[] {
  const turns: Turn[] = [];
  const turn = (role: Turn['role']): Turn => {
    const last = turns[turns.length - 1];
    if (last && last.role === role) return last;
    const t: Turn = { role, content: [] };
    turns.push(t);
    return t;
  };
  for (const m of messages) {
    if (m.role === 'tool') {
      const t = turn('user');
      // tool_result blocks must lead their user turn: insert after the results already there.
      const at = t.content.findIndex((b) => b.type !== 'tool_result');
      const block = { type: 'tool_result', tool_use_id: m.toolCallId, content: m.content, ...(m.isError ? { is_error: true } : {}) };
      if (at < 0) t.content.push(block);
      else t.content.splice(at, 0, block);
    } else if (m.role === 'user') {
      if (m.content.length > 0) turn('user').content.push({ type: 'text', text: m.content });
    } else {
      const t = turn('assistant');
      if (m.content.length > 0) t.content.push({ type: 'text', text: m.content });
      for (const c of m.toolCalls ?? []) t.content.push({ type: 'tool_use', id: c.id, name: c.name, input: isObj(c.input) ? c.input : {} });
    }
  }
  // The API refuses empty text blocks and empty turns: an empty message carries nothing, so it
  // is left out, and the turns on either side of it merge (roles must alternate).
  const out: Turn[] = [];
  for (const t of turns) {
    if (t.content.length === 0) continue;
    const last = out[out.length - 1];
    if (last && last.role === t.role) last.content.push(...t.content);
    else out.push(t);
  }
  return out;
}

/**
 * The request body (always streamed). With a cacheKey (an agent's repeated calls) and a prefix
 * long enough to be cached, breakpoints go on the system prompt (tools + system) and on the
 * last block of the conversation; a one-shot call (no cacheKey) pays no cache write.
 */
export function anthropicBody(req: CompletionRequest & CompletionTuning, model: string, maxTokens: number): Obj {
  const tools = (req.tools ?? []).map((t): Obj => ({ name: t.name, description: t.description, input_schema: t.parameters }));
  const messages = anthropicMessages(req.messages);
  const prefixChars = req.system.length + JSON.stringify(tools).length;
  const totalChars = prefixChars + req.messages.reduce((n, m) => n + m.content.length, 0);
  const cache = req.cacheKey !== undefined && req.cacheKey.length > 0;
  let system: string | Obj[] | undefined = req.system.length > 0 ? req.system : undefined;
  if (cache && prefixChars / 4 >= CACHE_MIN_TOKENS) {
    if (system !== undefined) system = [{ type: 'text', text: req.system, cache_control: EPHEMERAL }];
    else if (tools.length > 0) tools[tools.length - 1] = { ...tools[tools.length - 1], cache_control: EPHEMERAL };
  }
  const lastTurn = messages[messages.length - 1];
  const lastBlock = lastTurn?.content[lastTurn.content.length - 1];
  if (cache && totalChars / 4 >= CACHE_MIN_TOKENS && lastTurn && lastBlock) {
    lastTurn.content[lastTurn.content.length - 1] = { ...lastBlock, cache_control: EPHEMERAL };
  }
  return {
    model,
    max_tokens: maxTokens,
    stream: true,
    ...(system !== undefined ? { system } : {}),
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    ...(tools.length > 0 && req.toolChoice === 'none' ? { tool_choice: { type: 'none' } } : {}),
    ...(tools.length > 0 && req.toolChoice === 'required' ? { tool_choice: { type: 'any' } } : {}),
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
  };
}

/** Anthropic usage → brig's: the cache buckets are added to input_tokens, each counted once. */
export function usageFromAnthropic(u: unknown): Usage | undefined {
  if (!isObj(u)) return undefined;
  const fresh = count(u.input_tokens);
  const output = count(u.output_tokens);
  if (fresh === undefined && output === undefined) return undefined;
  const cacheRead = count(u.cache_read_input_tokens) ?? 0;
  const cacheWrite = count(u.cache_creation_input_tokens) ?? 0;
  return usageOf((fresh ?? 0) + cacheRead + cacheWrite, output ?? 0, cacheRead, cacheWrite);
}

export function finishFromAnthropic(reason: string | undefined, calledTools: boolean): FinishReason {
  switch (reason) {
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'content_filter';
    default:
      return calledTools ? 'tool_calls' : 'stop';
  }
}

interface Block {
  kind: 'text' | 'tool' | 'other';
  id: string;
  name: string;
  json: string;
  sawDelta: boolean;
  startInput: unknown;
}

/** Accumulates one streamed (or whole) Messages reply. */
export class AnthropicReply implements ReplySink {
  private content = '';
  private readonly blocks = new Map<number, Block>();
  private raw: Obj = {};
  private stop: string | undefined;
  private model: string | undefined;
  private started = false;
  private stopped = false;

  constructor(private readonly req: CompletionRequest, private readonly requestedModel: string) {}

  get done(): boolean {
    return this.stopped;
  }

  event(e: SseEvent): boolean {
    const d = JSON.parse(e.data) as unknown;
    if (!isObj(d)) throw new WireError('malformed', 'the model provider sent an event that is not an object');
    const type = typeof d.type === 'string' ? d.type : e.event;
    switch (type) {
      case 'message_start': {
        this.started = true;
        const m = isObj(d.message) ? d.message : {};
        if (typeof m.model === 'string' && m.model.length > 0) this.model = m.model;
        if (isObj(m.usage)) this.raw = { ...m.usage };
        return false;
      }
      case 'content_block_start':
        return this.blockStart(d);
      case 'content_block_delta':
        return this.blockDelta(d);
      case 'message_delta': {
        const delta = isObj(d.delta) ? d.delta : {};
        if (typeof delta.stop_reason === 'string') this.stop = delta.stop_reason;
        // Cumulative: each field present replaces the one before (summing double-counts).
        if (isObj(d.usage)) for (const [k, v] of Object.entries(d.usage)) if (v !== null && v !== undefined) this.raw[k] = v;
        return false;
      }
      case 'message_stop':
        this.stopped = true;
        return false;
      case 'error': {
        const err = isObj(d.error) ? d.error : {};
        const kind = typeof err.type === 'string' && /^[a-z_]{1,40}$/.test(err.type) ? err.type : 'error';
        const msg = typeof err.message === 'string' ? err.message.slice(0, 300) : 'unspecified';
        throw new WireError('stream_error', `the model provider reported ${kind} in its reply: ${msg}`, { providerError: kind });
      }
      default: // ping, content_block_stop and anything newer
        return false;
    }
  }

  private blockStart(d: Obj): boolean {
    const index = typeof d.index === 'number' ? d.index : this.blocks.size;
    const cb = isObj(d.content_block) ? d.content_block : {};
    const kind = cb.type === 'text' ? 'text' : cb.type === 'tool_use' ? 'tool' : 'other';
    this.blocks.set(index, { kind, id: typeof cb.id === 'string' ? cb.id : '', name: typeof cb.name === 'string' ? cb.name : '', json: '', sawDelta: false, startInput: cb.input });
    if (kind === 'text' && typeof cb.text === 'string' && cb.text.length > 0) {
      this.content += cb.text;
      return true;
    }
    return kind === 'tool';
  }

  private blockDelta(d: Obj): boolean {
    const b = this.blocks.get(typeof d.index === 'number' ? d.index : -1);
    const delta = isObj(d.delta) ? d.delta : {};
    if (delta.type === 'text_delta' && typeof delta.text === 'string' && (b === undefined || b.kind === 'text')) {
      this.content += delta.text;
      return delta.text.length > 0;
    }
    if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string' && b?.kind === 'tool') {
      b.json += delta.partial_json;
      b.sawDelta = true;
      return true;
    }
    return false;
  }

  whole(json: unknown): void {
    if (!isObj(json)) throw new WireError('malformed', 'the model provider sent a reply that is not a message');
    if (json.type === 'error') this.event({ event: 'error', data: JSON.stringify(json) });
    if (!Array.isArray(json.content)) throw new WireError('malformed', 'the model provider sent a message with no content');
    this.started = true;
    if (typeof json.model === 'string') this.model = json.model;
    if (isObj(json.usage)) this.raw = { ...json.usage };
    if (typeof json.stop_reason === 'string') this.stop = json.stop_reason;
    json.content.forEach((cb: unknown, index: number) => this.blockStart({ index, content_block: cb }));
    this.stopped = true;
  }

  /** The completion; a stream with no message_stop and no stop reason broke off. */
  result(firstTokenMs: number | null): Completion {
    if (!this.started || (!this.stopped && this.stop === undefined)) throw new WireError('disconnected', 'the model stream ended before it finished');
    const minter = new IdMinter(this.req.messages);
    const toolCalls: LlmToolCall[] = [...this.blocks.entries()]
      .sort(([a], [b]) => a - b)
      .filter(([, b]) => b.kind === 'tool')
      .map(([, b]) => {
        const id = b.id || minter.next();
        if (!b.sawDelta && isObj(b.startInput) && Object.keys(b.startInput).length > 0) return { id, name: b.name, input: b.startInput };
        return { id, name: b.name, ...parseToolArguments(b.json) };
      });
    return {
      message: { role: 'assistant', content: this.content, toolCalls },
      finishReason: finishFromAnthropic(this.stop, toolCalls.length > 0),
      usage: usageFromAnthropic(this.raw) ?? estimateUsage(this.req, this.content, toolCalls),
      model: this.model ?? this.requestedModel,
      firstTokenMs,
    };
  }
}
