/**
 * The OpenAI Chat Completions wire format, pure: brig's request → the JSON body, and the
 * streamed chunks (or one non-streamed reply) → a Completion.
 *
 * Tolerates what OpenAI-compatible servers really send: tool-call fragments keyed by index
 * (id and name first, arguments accreting; a missing index continues the last call), missing
 * tool-call ids (minted `brig_<n>`), the usage chunk with `choices: []`, `choices: null` or
 * usage inside a choice, DeepSeek's `prompt_cache_hit_tokens`, a `finish_reason` of `stop`
 * on a turn that called tools, no usage at all (estimated at chars / 4), and a stream that
 * ends without `[DONE]` once a finish reason was seen.
 */
import { count, estimateUsage, IdMinter, parseToolArguments, usageOf, WireError, type ReplySink } from './wire-common.js';
import type { SseEvent } from '../util/sse.js';
import type { Completion, CompletionRequest, CompletionTuning, FinishReason, LlmMessage, LlmToolCall, Usage } from './types.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

export function openaiMessages(system: string, messages: LlmMessage[]): Obj[] {
  const out: Obj[] = system.length > 0 ? [{ role: 'system', content: system }] : [];
  for (const m of messages) {
    if (m.role === 'user') out.push({ role: 'user', content: m.content });
    else if (m.role === 'tool') out.push({ role: 'tool', tool_call_id: m.toolCallId, content: m.content });
    else {
      const calls = m.toolCalls ?? [];
      out.push({
        role: 'assistant',
        content: m.content === '' && calls.length > 0 ? null : m.content,
        ...(calls.length > 0
          ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input ?? {}) } })) }
          : {}),
      });
    }
  }
  return out;
}

/** The request body (always streamed, usage requested). */
export function openaiChatBody(req: CompletionRequest & CompletionTuning, model: string, maxTokens: number | undefined): Obj {
  return {
    model,
    messages: openaiMessages(req.system, req.messages),
    stream: true,
    stream_options: { include_usage: true },
    ...(req.tools && req.tools.length > 0 && (req.toolChoice === 'none' || req.toolChoice === 'required') ? { tool_choice: req.toolChoice } : {}),
    ...(req.tools && req.tools.length > 0
      ? { tools: req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })) }
      : {}),
    ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    ...(req.json ? { response_format: { type: 'json_object' } } : {}),
    ...(req.cacheKey ? { prompt_cache_key: req.cacheKey } : {}),
  };
}

/** Chat Completions usage → brig's: prompt_tokens already includes the cached ones. */
export function usageFromOpenai(u: unknown): Usage | undefined {
  if (!isObj(u)) return undefined;
  const input = count(u.prompt_tokens) ?? count(u.input_tokens);
  const output = count(u.completion_tokens) ?? count(u.output_tokens);
  if (input === undefined && output === undefined) return undefined;
  const details = isObj(u.prompt_tokens_details) ? u.prompt_tokens_details : isObj(u.input_tokens_details) ? u.input_tokens_details : {};
  const cacheRead = count(details.cached_tokens) ?? count(u.prompt_cache_hit_tokens) ?? 0;
  const cacheWrite = count(details.cache_write_tokens) ?? count(details.cache_creation_tokens) ?? 0;
  return usageOf(input ?? 0, output ?? 0, cacheRead, cacheWrite);
}

export function finishFromOpenai(reason: string | undefined, calledTools: boolean): FinishReason {
  switch (reason) {
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content_filter';
    case 'error':
      return 'error';
    default:
      return calledTools ? 'tool_calls' : 'stop';
  }
}

interface PartialCall {
  id: string;
  name: string;
  args: string;
}

/** Accumulates one streamed (or whole) Chat Completions reply. */
export class OpenaiChatReply implements ReplySink {
  private content = '';
  private readonly calls = new Map<number, PartialCall>();
  private lastIndex = -1;
  private finish: string | undefined;
  private usage: Usage | undefined;
  private model: string | undefined;
  private sawDone = false;

  constructor(private readonly req: CompletionRequest, private readonly requestedModel: string) {}

  get done(): boolean {
    return this.sawDone;
  }

  event(e: SseEvent): boolean {
    if (e.data.trim() === '[DONE]') {
      this.sawDone = true;
      return false;
    }
    return this.chunk(JSON.parse(e.data) as unknown);
  }

  whole(json: unknown): void {
    if (!isObj(json)) throw new WireError('malformed', 'the model provider sent a reply that is not a chat completion');
    const choices = Array.isArray(json.choices) ? json.choices : [];
    // A whole reply's message is one big delta; its tool calls carry no index.
    const asDelta = choices.map((c: unknown) => {
      if (!isObj(c) || !isObj(c.message)) return c;
      const calls = Array.isArray(c.message.tool_calls) ? c.message.tool_calls.map((t: unknown, i: number) => (isObj(t) ? { index: i, ...t } : t)) : undefined;
      return { ...c, delta: { ...c.message, ...(calls ? { tool_calls: calls } : {}) } };
    });
    this.chunk({ ...json, choices: asDelta });
    if (choices.length === 0 && !isObj(json.usage)) throw new WireError('malformed', 'the model provider sent a chat completion with no choices');
    this.sawDone = true;
  }

  private chunk(c: unknown): boolean {
    if (!isObj(c)) throw new WireError('malformed', 'the model provider sent a chunk that is not an object');
    if (c.error !== undefined) {
      const msg = isObj(c.error) && typeof c.error.message === 'string' ? c.error.message.slice(0, 300) : 'unspecified';
      throw new WireError('stream_error', `the model provider reported an error in its reply: ${msg}`);
    }
    if (typeof c.model === 'string' && c.model.length > 0) this.model = c.model;
    this.usage = usageFromOpenai(c.usage) ?? this.usage;
    let content = false;
    for (const ch of Array.isArray(c.choices) ? c.choices : []) {
      if (!isObj(ch) || (ch.index !== undefined && ch.index !== 0)) continue;
      this.usage = usageFromOpenai(ch.usage) ?? this.usage;
      const d = isObj(ch.delta) ? ch.delta : {};
      if (typeof d.content === 'string' && d.content.length > 0) {
        this.content += d.content;
        content = true;
      }
      if (Array.isArray(d.tool_calls)) for (const f of d.tool_calls) content = this.fragment(f) || content;
      if (isObj(d.function_call)) content = this.fragment({ index: 0, function: d.function_call }) || content;
      if (typeof ch.finish_reason === 'string' && ch.finish_reason.length > 0) this.finish = ch.finish_reason;
    }
    return content;
  }

  private fragment(f: unknown): boolean {
    if (!isObj(f)) return false;
    const fn = isObj(f.function) ? f.function : {};
    const id = typeof f.id === 'string' ? f.id : '';
    let index = typeof f.index === 'number' ? f.index : this.lastIndex;
    if (typeof f.index !== 'number' && (index < 0 || (id !== '' && this.calls.get(index)?.id !== id))) index = this.lastIndex + 1;
    this.lastIndex = Math.max(this.lastIndex, index);
    const call = this.calls.get(index) ?? { id: '', name: '', args: '' };
    this.calls.set(index, call);
    if (id !== '' && call.id === '') call.id = id;
    if (typeof fn.name === 'string' && call.name === '') call.name = fn.name;
    if (typeof fn.arguments === 'string') call.args += fn.arguments;
    else if (isObj(fn.arguments)) call.args += JSON.stringify(fn.arguments);
    return true;
  }

  /** The completion; a stream that ended with neither `[DONE]` nor a finish reason broke off. */
  result(firstTokenMs: number | null): Completion {
    if (!this.sawDone && this.finish === undefined) throw new WireError('disconnected', 'the model stream ended before it finished');
    const minter = new IdMinter(this.req.messages);
    const toolCalls: LlmToolCall[] = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, c]) => ({ id: c.id || minter.next(), name: c.name, ...parseToolArguments(c.args) }))
      .map((c) => (c.name === '' ? { ...c, inputError: c.inputError ?? 'the tool call had no name' } : c));
    return {
      message: { role: 'assistant', content: this.content, toolCalls },
      finishReason: finishFromOpenai(this.finish, toolCalls.length > 0),
      usage: this.usage ?? estimateUsage(this.req, this.content, toolCalls),
      model: this.model ?? this.requestedModel,
      firstTokenMs,
    };
  }
}
