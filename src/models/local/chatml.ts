/**
 * An OpenAI chat-completions conversation as the ChatML prompt a small local model reads
 * (pure): `<|im_start|>role\n…<|im_end|>\n` per turn, then `<|im_start|>assistant\n`.
 *
 * The prompt is a list of segments: the template's own markers are tokenized with special
 * tokens on, every piece of content with them off — a message that contains the text
 * `<|im_end|>` stays text and cannot close its turn and open another role's.
 *
 * Tools are listed in the system turn as one-line signatures (a 135M model reads
 * `write_file(path: string, content: string)` better, and in far fewer tokens, than JSON
 * schemas), with the reply format tool-grammar.ts forces under the request's tool choice. A tool call in the history is
 * rendered exactly as that grammar makes the model write it, and a tool result as a user
 * turn naming its tool, so a conversation's prompt only ever grows at its end (the engine
 * reuses the evaluated prefix).
 */

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

export interface Segment {
  text: string;
  /** Tokenize with special tokens on (the template's markers only). */
  special: boolean;
}

export interface WireTool {
  name: string;
  description: string;
  parameters: unknown;
}

/**
 * The reply format the tool grammar forces, said to the model, per tool choice. No
 * placeholder text: a 135M model copies `<your answer>` into its answer (seen).
 */
export const TOOL_INSTRUCTIONS = {
  required: 'Reply with one JSON object that calls one of these tools: its "name" and its "arguments".',
  auto: 'Reply with one JSON object that calls one of these tools (its "name" and its "arguments"), or with {"answer": …} when no tool is needed.',
  none: 'These tools are off for this reply: answer in plain text.',
} as const;

export type ToolMode = keyof typeof TOOL_INSTRUCTIONS;

/** Text of a message's content: a string, or the text parts of an array. */
export function contentText(c: unknown): string {
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => (isObj(p) && typeof p.text === 'string' ? p.text : '')).join('');
  return '';
}

function typeName(s: unknown): string {
  if (!isObj(s)) return 'any';
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (s.type === 'array') return `array of ${typeName(s.items)}`;
  if (typeof s.type === 'string') return s.type;
  if (Array.isArray(s.type)) return s.type.join(' | ');
  return 'any';
}

/** `name(a: string, b?: integer): description` — `?` marks an optional argument. */
export function toolSignature(t: WireTool): string {
  const p = isObj(t.parameters) ? t.parameters : {};
  const props = isObj(p.properties) ? Object.entries(p.properties) : [];
  const required = new Set(Array.isArray(p.required) ? p.required : []);
  const args = props.map(([k, v]) => `${k}${required.has(k) ? '' : '?'}: ${typeName(v)}`).join(', ');
  const desc = t.description.split('\n')[0]!.trim();
  return `${t.name}(${args})${desc ? `: ${desc}` : ''}`;
}

/** The compact JSON the grammar makes the model write for a call. */
export function callText(name: string, args: unknown): string {
  return `{"name":${JSON.stringify(name)},"arguments":${JSON.stringify(args ?? {})}}`;
}

function parseArgs(a: unknown): unknown {
  if (typeof a !== 'string') return a ?? {};
  try {
    return JSON.parse(a) as unknown;
  } catch {
    return a;
  }
}

function turn(role: string, content: string): Segment[] {
  return [
    { text: `<|im_start|>${role}\n`, special: true },
    { text: content, special: false },
    { text: '<|im_end|>\n', special: true },
  ];
}

/**
 * The prompt for a conversation in the OpenAI wire's message shapes. System messages come
 * first (joined), with the tool list appended when tools are offered.
 */
export function chatmlPrompt(messages: readonly unknown[], tools: readonly WireTool[], mode: ToolMode = 'auto'): Segment[] {
  const msgs = messages.filter(isObj);
  const system = msgs.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => contentText(m.content));
  if (tools.length > 0) system.push(`# Tools\n${TOOL_INSTRUCTIONS[mode]}\n${tools.map((t) => `- ${toolSignature(t)}`).join('\n')}`);
  const out: Segment[] = system.length > 0 ? turn('system', system.join('\n\n')) : [];
  const names = new Map<string, string>();
  for (const m of msgs) {
    if (m.role === 'user') out.push(...turn('user', contentText(m.content)));
    else if (m.role === 'assistant') {
      const calls = Array.isArray(m.tool_calls) ? m.tool_calls.filter(isObj) : [];
      const parts = [contentText(m.content)].filter((s) => s.length > 0);
      for (const c of calls) {
        const fn = isObj(c.function) ? c.function : {};
        const name = typeof fn.name === 'string' ? fn.name : '';
        if (typeof c.id === 'string') names.set(c.id, name);
        parts.push(callText(name, parseArgs(fn.arguments)));
      }
      out.push(...turn('assistant', parts.join('\n')));
    } else if (m.role === 'tool') {
      const name = (typeof m.tool_call_id === 'string' ? names.get(m.tool_call_id) : undefined) ?? 'a tool';
      out.push(...turn('user', `Result of ${name}:\n${contentText(m.content)}`));
    }
  }
  out.push({ text: '<|im_start|>assistant\n', special: true });
  return out;
}

/** The whole prompt as one string (for logs and tests: what the model reads). */
export function promptText(segments: readonly Segment[]): string {
  return segments.map((s) => s.text).join('');
}
