/**
 * The grammar that makes a small local model honour `tools` (pure): a GBNF grammar under
 * which every reply is either exactly one tool call, `{"name":"<tool>","arguments":{…}}` in
 * compact JSON with the tool's own property names and types, or a plain-text final answer
 * (anything that does not start with `{`). With `tool_choice: "required"` the answer branch
 * is left out.
 *
 * Why brig writes its own: llama.cpp refuses grammars whose bounded repetitions blow up
 * (`maxLength: 2000` on one string makes "number of rules … exceeds sane defaults"), and
 * pretty-printed JSON costs a small model dozens of whitespace tokens per call. So the
 * grammar keeps a schema's shape — types, properties, which are required, enums and
 * constants, array items — and drops its bounds (lengths, patterns, numeric ranges, item
 * counts). The arguments are checked against the real schema afterwards by whoever runs the
 * tool (brig's agent loop does: an error result names the field). A schema feature the
 * grammar does not know (anyOf, $ref, …) becomes "any JSON value": looser, never refused.
 */

type Schema = Record<string, unknown>;

const isObj = (v: unknown): v is Schema => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The JSON value rules every grammar shares (RFC 8259, no whitespace between tokens). */
const BASE_RULES = [
  'string ::= "\\"" char* "\\""',
  'char ::= [^"\\\\\\x00-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])',
  'integer ::= "-"? ("0" | [1-9] [0-9]*)',
  'number ::= integer ("." [0-9]+)? ([eE] [-+]? [0-9]+)?',
  'boolean ::= "true" | "false"',
  'null ::= "null"',
  'value ::= object | array | string | number | boolean | null',
  'object ::= "{" (string ":" value ("," string ":" value)*)? "}"',
  'array ::= "[" (value ("," value)*)? "]"',
];

/** A GBNF literal for a JSON text: `"name"` → `"\"name\""`. */
function literal(json: string): string {
  return `"${json.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t')}"`;
}

class RuleSet {
  readonly rules: string[] = [];
  private n = 0;

  add(prefix: string, body: string): string {
    const name = `${prefix}-${this.n++}`;
    this.rules.push(`${name} ::= ${body}`);
    return name;
  }

  /** The rule (or inline expression) for a schema. */
  of(s: unknown, hint: string): string {
    if (!isObj(s)) return 'value';
    if ('const' in s) return literal(JSON.stringify(s.const));
    if (Array.isArray(s.enum) && s.enum.length > 0) return this.add(hint, s.enum.map((v) => literal(JSON.stringify(v))).join(' | '));
    const type = Array.isArray(s.type) ? s.type : [s.type];
    const alts = type.map((t) => this.ofType(t, s, hint)).filter((x): x is string => x !== undefined);
    if (alts.length === 0) return 'value';
    return alts.length === 1 ? alts[0]! : this.add(hint, alts.join(' | '));
  }

  private ofType(t: unknown, s: Schema, hint: string): string | undefined {
    switch (t) {
      case 'string':
        return 'string';
      case 'integer':
        return 'integer';
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'null':
        return 'null';
      case 'array':
        return isObj(s.items) ? this.add(hint, `"[" (${this.of(s.items, `${hint}-item`)} ("," ${this.of(s.items, `${hint}-item`)})*)? "]"`) : 'array';
      case 'object':
        return this.object(s, hint);
      default:
        return undefined;
    }
  }

  /**
   * Properties in the schema's order, required ones always there; optional ones may be left
   * out. Without declared properties: any object.
   */
  private object(s: Schema, hint: string): string {
    const props = isObj(s.properties) ? Object.entries(s.properties) : [];
    if (props.length === 0) return 'object';
    const required = new Set(Array.isArray(s.required) ? s.required.filter((k): k is string => typeof k === 'string') : []);
    const pair = (k: string, v: unknown) => `${literal(JSON.stringify(k))} ":" ${this.of(v, `${hint}-${k.replace(/[^A-Za-z0-9]/g, '') || 'p'}`)}`;
    const pairs = props.map(([k, v]) => ({ text: pair(k, v), required: required.has(k) }));
    // Each alternative starts at one of the properties that may come first (every optional
    // one up to and including the first required one); what follows is ordered, commas between.
    const tail = (from: number): string =>
      pairs
        .slice(from)
        .map((p) => (p.required ? `"," ${p.text}` : `("," ${p.text})?`))
        .join(' ');
    const starts: string[] = [];
    for (let i = 0; i < pairs.length; i++) {
      starts.push(`${pairs[i]!.text} ${tail(i + 1)}`.trim());
      if (pairs[i]!.required) break;
    }
    const anyRequired = pairs.some((p) => p.required);
    const body = `"{" ${anyRequired ? '' : '('}${starts.length === 1 ? starts[0] : `(${starts.join(' | ')})`}${anyRequired ? '' : ')?'} "}"`;
    return this.add(hint, body);
  }
}

export interface GrammarTool {
  name: string;
  parameters: unknown;
}

/**
 * The GBNF for one reply: one call of one of these tools, or (unless `required`) a plain
 * text answer. A tool without declared parameters takes any object.
 */
export function toolCallGrammar(tools: readonly GrammarTool[], o: { required?: boolean } = {}): string {
  const rs = new RuleSet();
  const calls = tools.map((t, i) => {
    const args = isObj(t.parameters) ? rs.of({ ...t.parameters, type: 'object' }, `t${i}`) : 'object';
    return rs.add('call', `"{" ${literal('"name"')} ":" ${literal(JSON.stringify(t.name))} "," ${literal('"arguments"')} ":" ${args} "}"`);
  });
  const root = [...calls, ...(o.required ? [] : ['answer'])];
  return [
    `root ::= ${root.join(' | ')}`,
    // A final answer is its own object: a small model given JSON or prose picks prose every time.
    ...(o.required ? [] : [`answer ::= "{" ${literal('"answer"')} ":" string "}"`]),
    ...rs.rules,
    ...BASE_RULES,
  ].join('\n');
}

/** What a grammar-bound reply was: a call (arguments as parsed JSON) or text. */
export type ToolReply = { kind: 'call'; name: string; arguments: unknown } | { kind: 'text'; text: string };

/**
 * Reads a reply made under toolCallGrammar: a complete `{"name","arguments"}` object is a
 * call; anything else — a text answer, or a call cut short by the token limit — is text.
 */
export function readToolReply(text: string): ToolReply {
  const t = text.trim();
  if (t.startsWith('{')) {
    try {
      const v = JSON.parse(t) as unknown;
      if (isObj(v) && typeof v.name === 'string' && 'arguments' in v) return { kind: 'call', name: v.name, arguments: v.arguments };
    } catch {
      // cut short: shown as the text it is
    }
  }
  return { kind: 'text', text };
}

/**
 * Tracks a JSON text as it streams out, to know when the top-level object closed: the
 * grammar would allow nothing more, so generation stops there (no trailing tokens).
 */
export class JsonEnd {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private started = false;
  private ended = false;

  /** Feeds text; true once the first top-level object or array has closed. */
  push(text: string): boolean {
    for (const ch of text) {
      if (this.ended) return true;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (ch === '\\') this.escaped = true;
        else if (ch === '"') this.inString = false;
        continue;
      }
      if (ch === '"') this.inString = true;
      else if (ch === '{' || ch === '[') {
        this.depth++;
        this.started = true;
      } else if (ch === '}' || ch === ']') {
        this.depth--;
        if (this.started && this.depth === 0) this.ended = true;
      }
    }
    return this.ended;
  }
}
