/**
 * What the scripted model server writes: a turn rendered as Chat Completions or Anthropic
 * Messages, streamed (SSE frames) or plain (one JSON body), and the Codex-style check that
 * every tool result a request sends pairs with a prior tool call and vice versa.
 */

export type WireFormat = 'openai-chat' | 'anthropic-messages';

export interface ScriptedToolCall {
  name: string;
  input?: unknown;
  /** The call id; `null` leaves it out (servers that send none). Default `call_<req>_<i>`. */
  id?: string | null;
  /** Sent instead of JSON.stringify(input): malformed JSON, say. */
  rawArguments?: string;
}

/** In brig's terms: input counts every input token, cached ones included. */
export interface TurnUsage {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

export interface Turn {
  text?: string;
  toolCalls?: ScriptedToolCall[];
  usage?: TurnUsage;
  /** The wire's own finish/stop reason (default: tool calls → tool_calls / tool_use, else stop / end_turn). */
  finishReason?: string;
  model?: string;
  /** Text deltas (default 2). */
  textPieces?: number;
  /** Fragments per tool call's arguments (default 1). */
  argPieces?: number;
  /** Pause between frames, ms. */
  delayMs?: number;
  /** One JSON body even when the request asked to stream. */
  plain?: boolean;
  quirks?: {
    /** The usage chunk's `choices` (openai-chat): [] (default) or null. */
    usageChoices?: 'empty' | 'null';
    omitUsage?: boolean;
    noDone?: boolean;
    /** Anthropic `ping` events between frames. */
    pings?: boolean;
    /** Anthropic: two cumulative message_delta events (a summing parser over-counts). */
    cumulativeDeltas?: boolean;
    /** Keep the body open after the last frame (a server that never ends its response). */
    holdOpen?: boolean;
  };
  fault?: Fault;
}

export type Fault =
  | { kind: 'status'; status: number; retryAfter?: string; retryAfterMs?: number; body?: unknown; headers?: Record<string, string> }
  /** Headers, then `afterEvents` frames (default 0), then silence until close(). */
  | { kind: 'stall'; afterEvents?: number }
  /** The socket is cut after `afterEvents` frames, or right after the first tool-call fragment. */
  | { kind: 'disconnect'; afterEvents?: number | 'midToolCall' }
  /** The socket is cut before any response. */
  | { kind: 'drop' }
  /** A text stream of at least `bytes` bytes. */
  | { kind: 'oversize'; bytes: number }
  /** Exactly this body (garbage, an error object in a 200, …). */
  | { kind: 'raw'; status?: number; contentType?: string; body: string }
  /** Anthropic `error` event (openai-chat: an `error` chunk) after `afterEvents` frames. */
  | { kind: 'streamError'; afterEvents?: number; type?: string; message?: string };

export interface Rendered {
  frames: string[];
  /** Index in frames just after the first tool-call fragment (for disconnect midToolCall). */
  midToolCall: number;
  plain: unknown;
}

const pieces = (s: string, n: number): string[] => {
  if (s.length === 0) return [];
  const k = Math.max(1, Math.min(n, s.length));
  const size = Math.ceil(s.length / k);
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
};

export const argsOf = (c: ScriptedToolCall) => c.rawArguments ?? JSON.stringify(c.input ?? {});

export function usageFor(turn: Turn, rawRequestLength: number): Required<TurnUsage> {
  const u = turn.usage ?? {
    input: Math.ceil(rawRequestLength / 4),
    output: Math.ceil(((turn.text ?? '').length + (turn.toolCalls ?? []).reduce((n, c) => n + argsOf(c).length, 0)) / 4) + 1,
  };
  return { input: u.input, output: u.output, cacheRead: u.cacheRead ?? 0, cacheWrite: u.cacheWrite ?? 0 };
}

export function render(format: WireFormat, turn: Turn, n: number, model: string, rawLength: number): Rendered {
  return format === 'openai-chat' ? renderOpenai(turn, n, model, rawLength) : renderAnthropic(turn, n, model, rawLength);
}

const callId = (c: ScriptedToolCall, n: number, i: number) => (c.id === null ? undefined : (c.id ?? `call_${n}_${i}`));

function renderOpenai(turn: Turn, n: number, model: string, rawLength: number): Rendered {
  const base = { id: `chatcmpl-${n}`, object: 'chat.completion.chunk', created: 1_700_000_000, model };
  const frame = (o: object) => `data: ${JSON.stringify({ ...base, ...o })}\n\n`;
  const choice = (delta: object, finish: string | null = null) => ({ choices: [{ index: 0, delta, finish_reason: finish }] });
  const u = usageFor(turn, rawLength);
  const wireUsage = { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output, prompt_tokens_details: { cached_tokens: u.cacheRead } };
  const calls = turn.toolCalls ?? [];
  const finish = turn.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop');
  const frames = [frame(choice({ role: 'assistant', content: '' }))];
  for (const p of pieces(turn.text ?? '', turn.textPieces ?? 2)) frames.push(frame(choice({ content: p })));
  let mid = -1;
  calls.forEach((c, i) => {
    const id = callId(c, n, i);
    frames.push(frame(choice({ tool_calls: [{ index: i, ...(id ? { id } : {}), type: 'function', function: { name: c.name, arguments: '' } }] })));
    for (const p of pieces(argsOf(c), turn.argPieces ?? 1)) {
      frames.push(frame(choice({ tool_calls: [{ index: i, function: { arguments: p } }] })));
      if (mid < 0) mid = frames.length;
    }
    if (mid < 0) mid = frames.length;
  });
  frames.push(frame(choice({}, finish)));
  if (!turn.quirks?.omitUsage) frames.push(frame({ choices: turn.quirks?.usageChoices === 'null' ? null : [], usage: wireUsage }));
  if (!turn.quirks?.noDone) frames.push('data: [DONE]\n\n');
  const message = {
    role: 'assistant',
    content: turn.text ?? (calls.length > 0 ? null : ''),
    ...(calls.length > 0
      ? { tool_calls: calls.map((c, i) => ({ ...(callId(c, n, i) ? { id: callId(c, n, i) } : {}), type: 'function', function: { name: c.name, arguments: argsOf(c) } })) }
      : {}),
  };
  const plain = { id: `chatcmpl-${n}`, object: 'chat.completion', created: 1_700_000_000, model, choices: [{ index: 0, message, finish_reason: finish }], ...(turn.quirks?.omitUsage ? {} : { usage: wireUsage }) };
  return { frames, midToolCall: mid < 0 ? frames.length : mid, plain };
}

function renderAnthropic(turn: Turn, n: number, model: string, rawLength: number): Rendered {
  const ev = (type: string, o: object = {}) => `event: ${type}\ndata: ${JSON.stringify({ type, ...o })}\n\n`;
  const u = usageFor(turn, rawLength);
  const fresh = Math.max(0, u.input - u.cacheRead - u.cacheWrite);
  const startUsage = { input_tokens: fresh, output_tokens: 1, cache_read_input_tokens: u.cacheRead, cache_creation_input_tokens: u.cacheWrite };
  const calls = turn.toolCalls ?? [];
  const stop = turn.finishReason ?? (calls.length > 0 ? 'tool_use' : 'end_turn');
  const frames = [ev('message_start', { message: { id: `msg_${n}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: startUsage } })];
  const ping = () => turn.quirks?.pings && frames.push(ev('ping'));
  ping();
  let index = 0;
  if ((turn.text ?? '').length > 0) {
    frames.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    for (const p of pieces(turn.text!, turn.textPieces ?? 2)) {
      frames.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: p } }));
      ping();
    }
    frames.push(ev('content_block_stop', { index }));
    index++;
  }
  let mid = -1;
  calls.forEach((c, i) => {
    frames.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: callId(c, n, i) ?? '', name: c.name, input: {} } }));
    for (const p of pieces(argsOf(c), turn.argPieces ?? 1)) {
      frames.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } }));
      if (mid < 0) mid = frames.length;
      ping();
    }
    if (mid < 0) mid = frames.length;
    frames.push(ev('content_block_stop', { index }));
    index++;
  });
  if (turn.quirks?.cumulativeDeltas) frames.push(ev('message_delta', { delta: { stop_reason: null, stop_sequence: null }, usage: { output_tokens: Math.floor(u.output / 2) } }));
  frames.push(ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: u.output } }));
  frames.push(ev('message_stop'));
  const content: object[] = [];
  if ((turn.text ?? '').length > 0) content.push({ type: 'text', text: turn.text });
  calls.forEach((c, i) => {
    let input: unknown = {};
    try {
      input = JSON.parse(argsOf(c));
    } catch {
      input = argsOf(c); // a malformed input cannot be an object in a plain reply: send it as is
    }
    content.push({ type: 'tool_use', id: callId(c, n, i) ?? '', name: c.name, input });
  });
  const plain = { id: `msg_${n}`, type: 'message', role: 'assistant', model, content, stop_reason: stop, stop_sequence: null, usage: { ...startUsage, output_tokens: u.output } };
  return { frames, midToolCall: mid < 0 ? frames.length : mid, plain };
}

export function errorBody(format: WireFormat, status: number, message: string): unknown {
  return format === 'openai-chat'
    ? { error: { message, type: status === 429 ? 'rate_limit_error' : 'server_error', code: null } }
    : { type: 'error', error: { type: status === 429 ? 'rate_limit_error' : status === 529 || status === 503 ? 'overloaded_error' : 'api_error', message } };
}

export function streamErrorFrame(format: WireFormat, type: string, message: string): string {
  return format === 'openai-chat'
    ? `data: ${JSON.stringify({ error: { message, type } })}\n\n`
    : `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type, message } })}\n\n`;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Codex's request invariant: every tool result answers a call made before it (in Anthropic, by
 * the assistant turn right before), and every call is answered before the next assistant turn.
 */
export function toolPairingProblems(format: WireFormat, body: unknown): string[] {
  const problems: string[] = [];
  const messages = isObj(body) && Array.isArray(body.messages) ? body.messages : [];
  let open = new Set<string>();
  const call = (id: unknown, at: number) => {
    if (typeof id !== 'string' || id === '') problems.push(`message ${at}: a tool call without an id`);
    else open.add(id);
  };
  const result = (id: unknown, at: number) => {
    if (typeof id !== 'string' || !open.has(id)) problems.push(`message ${at}: a tool result for ${JSON.stringify(id)}, which no open call made`);
    else open.delete(id);
  };
  messages.forEach((m: unknown, at: number) => {
    if (!isObj(m)) return;
    if (m.role === 'assistant') {
      if (open.size > 0) problems.push(`message ${at}: calls ${[...open].join(', ')} were never answered`);
      open = new Set();
      if (format === 'openai-chat') for (const c of Array.isArray(m.tool_calls) ? m.tool_calls : []) call(isObj(c) ? c.id : undefined, at);
      else for (const b of Array.isArray(m.content) ? m.content : []) if (isObj(b) && b.type === 'tool_use') call(b.id, at);
    } else if (format === 'openai-chat' && m.role === 'tool') result(m.tool_call_id, at);
    else if (format === 'anthropic-messages' && m.role === 'user') {
      for (const b of Array.isArray(m.content) ? m.content : []) if (isObj(b) && b.type === 'tool_result') result(b.tool_use_id, at);
      if (open.size > 0) problems.push(`message ${at}: calls ${[...open].join(', ')} were not answered in the next user turn`);
      open = new Set();
    } else if (format === 'openai-chat' && m.role === 'user' && open.size > 0) {
      problems.push(`message ${at}: a user message before calls ${[...open].join(', ')} were answered`);
      open = new Set();
    }
  });
  if (open.size > 0) problems.push(`calls ${[...open].join(', ')} were never answered`);
  return problems;
}
