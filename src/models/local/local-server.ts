/**
 * The local provider's server: a loaded model (LocalEngine) behind the OpenAI
 * chat-completions wire the broker's client already speaks — `POST /v1/chat/completions`
 * (plain and streamed, usage from the model's own tokenizer), `GET /v1/models`, `GET /health`.
 *
 * Guarantees: one generation at a time, a bounded queue behind it (past it: 429 with
 * Retry-After); a generation stops when its client goes away (queued or running); a prompt
 * that does not fit the context is refused with the error OpenAI-compatible servers send
 * (400, `context_length_exceeded`), and the reply is clamped to the room left; `tools` are
 * honoured by a grammar (tool-grammar.ts): under `auto` one call or an answer, under
 * `required` one call, under `none` free text. It listens on a unix socket in a directory only
 * brig's user can enter (local-host.ts): nothing else on the machine, and no jail, reaches it.
 * Temperature defaults to 0 (greedy: a small model's best, and repeatable).
 */
import crypto from 'node:crypto';
import http from 'node:http';
import { chatmlPrompt, contentText, type WireTool } from './chatml.js';
import type { Generated, LocalEngine } from './llama-engine.js';
import { JsonEnd, readToolReply, toolCallGrammar } from './tool-grammar.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

export interface LocalServerOptions {
  engine: LocalEngine;
  /** Requests waiting behind the one generating (default 4); past it, 429. */
  maxQueue?: number;
  /** The largest request body (default 16 MiB). */
  maxBodyBytes?: number;
  /** SSE comment every this many ms while a streamed request waits or evaluates (default 10 000). */
  keepAliveMs?: number;
}

/** An OpenAI-shaped error reply. */
class WireFault extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly code: string | null,
    readonly param: string | null = null,
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}

interface Parsed {
  tokens: number[];
  grammar: string | undefined;
  /** A grammar binds the reply: it is read whole, as a call or an answer. */
  tools: boolean;
  maxTokens: number;
  temperature: number;
  stream: boolean;
  usageInStream: boolean;
}

/** Tools and tool choice of a request → the grammar (or none). */
function grammarOf(body: Obj, tools: readonly WireTool[]): string | undefined {
  const choice = body.tool_choice;
  if (tools.length === 0 || choice === 'none') return undefined;
  if (isObj(choice) && isObj(choice.function) && typeof choice.function.name === 'string') {
    const one = tools.filter((t) => t.name === (choice.function as Obj).name);
    if (one.length === 0) throw new WireFault(400, `tool_choice names "${String(choice.function.name).slice(0, 64)}", which is not in tools`, 'invalid_request_error', null, 'tool_choice');
    return toolCallGrammar(one, { required: true });
  }
  return toolCallGrammar(tools, { required: choice === 'required' });
}

function wireTools(body: Obj): WireTool[] {
  return (Array.isArray(body.tools) ? body.tools : [])
    .filter(isObj)
    .map((t) => (isObj(t.function) ? t.function : t))
    .filter((f): f is Obj => isObj(f) && typeof f.name === 'string')
    .map((f) => ({ name: f.name as string, description: typeof f.description === 'string' ? f.description : '', parameters: f.parameters }));
}

export function parseRequest(body: unknown, engine: LocalEngine): Parsed {
  if (!isObj(body)) throw new WireFault(400, 'the request body must be a JSON object', 'invalid_request_error', null);
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw new WireFault(400, "'messages' must be a non-empty array", 'invalid_request_error', null, 'messages');
  const tools = wireTools(body);
  const grammar = grammarOf(body, tools);
  const choice = body.tool_choice;
  const mode = choice === 'none' ? 'none' : choice === 'required' || isObj(choice) ? 'required' : 'auto';
  const tokens = engine.tokenize(chatmlPrompt(body.messages, tools, mode));
  const room = engine.contextSize - tokens.length;
  if (room < 1) {
    throw new WireFault(
      400,
      `This model's maximum context length is ${engine.contextSize} tokens. However, your messages resulted in ${tokens.length} tokens. Please reduce the length of the messages.`,
      'invalid_request_error',
      'context_length_exceeded',
      'messages',
    );
  }
  const asked = typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : typeof body.max_tokens === 'number' ? body.max_tokens : room;
  const temperature = typeof body.temperature === 'number' && body.temperature >= 0 && body.temperature <= 2 ? body.temperature : 0;
  return {
    tokens,
    grammar,
    tools: grammar !== undefined,
    maxTokens: Math.max(1, Math.min(Math.floor(asked), room)),
    temperature,
    stream: body.stream === true,
    usageInStream: isObj(body.stream_options) && body.stream_options.include_usage === true,
  };
}

/** A finished generation in the wire's words: text content, or one tool call. */
function replyOf(g: Generated, tools: boolean): { content: string | null; call: { id: string; name: string; arguments: string } | undefined; finish: string } {
  if (tools && g.finish === 'stop') {
    const r = readToolReply(g.text);
    if (r.kind === 'call') return { content: null, call: { id: `call_${crypto.randomBytes(8).toString('hex')}`, name: r.name, arguments: JSON.stringify(r.arguments ?? {}) }, finish: 'tool_calls' };
    const answer = (() => {
      try {
        const v = JSON.parse(g.text) as unknown;
        return isObj(v) && typeof v.answer === 'string' ? v.answer : undefined;
      } catch {
        return undefined;
      }
    })();
    return { content: answer ?? g.text, call: undefined, finish: 'stop' };
  }
  return { content: g.text, call: undefined, finish: g.finish === 'stop' ? 'stop' : 'length' };
}

/** One generation at a time; waiting requests in order, at most maxQueue of them. */
class GenerationQueue {
  private running = false;
  private readonly waiting: (() => void)[] = [];
  private avgMs = 2000;

  constructor(private readonly max: number) {}

  get depth(): number {
    return this.waiting.length + (this.running ? 1 : 0);
  }

  /** Seconds a client refused now should wait: the queue ahead of it at the recent pace. */
  retryAfterS(): number {
    return Math.max(1, Math.min(60, Math.ceil(((this.waiting.length + 1) * this.avgMs) / 1000)));
  }

  /** Refuses (429) a request that would wait behind a full queue. */
  assertRoom(): void {
    if (this.running && this.waiting.length >= this.max) {
      throw new WireFault(429, `the local model is busy: ${this.depth} requests ahead (one generation at a time)`, 'rate_limit_error', 'queue_full', null, this.retryAfterS());
    }
  }

  /** Runs fn when its turn comes; undefined (not run) when the signal fired while it waited. */
  async run<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T | undefined> {
    if (this.running || this.waiting.length > 0) {
      const go = await new Promise<boolean>((resolve) => {
        const turn = () => {
          signal.removeEventListener('abort', gone);
          resolve(true);
        };
        const gone = () => {
          const i = this.waiting.indexOf(turn);
          if (i >= 0) this.waiting.splice(i, 1);
          resolve(false);
        };
        this.waiting.push(turn);
        signal.addEventListener('abort', gone, { once: true });
      });
      if (!go) return undefined;
    }
    this.running = true;
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      this.avgMs = 0.7 * this.avgMs + 0.3 * (performance.now() - t0);
      this.running = false;
      this.waiting.shift()?.();
    }
  }
}

function readBody(req: http.IncomingMessage, max: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
      if (n > max) {
        reject(new WireFault(413, `the request body is over ${max} bytes`, 'invalid_request_error', null));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
      } catch {
        reject(new WireFault(400, 'the request body is not JSON', 'invalid_request_error', null));
      }
    });
    req.on('error', reject);
  });
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function sendFault(res: http.ServerResponse, f: WireFault): void {
  if (res.headersSent) {
    // Mid-stream: the wire's error event, then the stream ends.
    res.end(`data: ${JSON.stringify({ error: { message: f.message, type: f.type, code: f.code } })}\n\n`);
    return;
  }
  sendJson(res, f.status, { error: { message: f.message, type: f.type, param: f.param, code: f.code } }, f.retryAfterS !== undefined ? { 'retry-after': String(f.retryAfterS) } : {});
}

export interface LocalServer {
  server: http.Server;
  queueDepth(): number;
}

export function createLocalServer(o: LocalServerOptions): LocalServer {
  const engine = o.engine;
  const queue = new GenerationQueue(o.maxQueue ?? 4);
  const maxBody = o.maxBodyBytes ?? 16 * 1024 * 1024;
  const keepAliveMs = o.keepAliveMs ?? 10_000;

  async function completions(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const p = parseRequest(await readBody(req, maxBody), engine);
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    const id = `chatcmpl-${crypto.randomBytes(12).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    const chunk = (choices: unknown[], extra: Obj = {}) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: engine.model, choices, ...extra })}\n\n`;
    let keepAlive: NodeJS.Timeout | undefined;
    // Over the queue bound is refused before any byte is sent.
    queue.assertRoom();
    if (p.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      // A waiting or evaluating request still sends bytes: the client's idle timer sees a live server.
      keepAlive = setInterval(() => res.write(': keep-alive\n\n'), keepAliveMs);
    }
    try {
      let sentRole = false;
      const g = await queue.run(gone.signal, () => {
        const end = new JsonEnd();
        let fed = 0;
        return engine.generate({
          tokens: p.tokens,
          grammar: p.grammar,
          maxTokens: p.maxTokens,
          temperature: p.temperature,
          signal: gone.signal,
          // A grammar-bound reply is read whole (a call or an answer); free text streams as it comes.
          ...(p.stream && !p.tools
            ? {
                onText: (piece: string) => {
                  res.write(chunk([{ index: 0, delta: { ...(sentRole ? {} : { role: 'assistant' }), content: piece }, finish_reason: null }]));
                  sentRole = true;
                },
              }
            : {}),
          // The grammar allows nothing after the call's closing brace: stop there.
          ...(p.tools
            ? {
                done: (text: string) => {
                  const more = text.slice(fed);
                  fed = text.length;
                  return end.push(more);
                },
              }
            : {}),
        });
      });
      if (g === undefined || g.finish === 'aborted' || gone.signal.aborted) return;
      const r = replyOf(g, p.tools);
      const usage = { prompt_tokens: p.tokens.length, completion_tokens: g.output, total_tokens: p.tokens.length + g.output, prompt_tokens_details: { cached_tokens: g.reused } };
      const toolCalls = r.call ? [{ id: r.call.id, type: 'function', function: { name: r.call.name, arguments: r.call.arguments } }] : undefined;
      if (!p.stream) {
        sendJson(res, 200, {
          id,
          object: 'chat.completion',
          created,
          model: engine.model,
          choices: [{ index: 0, message: { role: 'assistant', content: r.content, ...(toolCalls ? { tool_calls: toolCalls } : {}) }, finish_reason: r.finish }],
          usage,
        });
        return;
      }
      if (p.tools) {
        const delta = toolCalls ? { role: 'assistant', content: null, tool_calls: toolCalls.map((c, index) => ({ index, ...c })) } : { role: 'assistant', content: r.content };
        res.write(chunk([{ index: 0, delta, finish_reason: null }]));
      }
      res.write(chunk([{ index: 0, delta: {}, finish_reason: r.finish }]));
      if (p.usageInStream) res.write(chunk([], { usage }));
      res.end('data: [DONE]\n\n');
    } finally {
      if (keepAlive) clearInterval(keepAlive);
    }
  }

  const server = http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    const route = `${req.method} ${url}`;
    const work = async () => {
      if (route === 'POST /v1/chat/completions') return completions(req, res);
      if (route === 'GET /v1/models') return sendJson(res, 200, { object: 'list', data: [{ id: engine.model, object: 'model', owned_by: 'brig-local' }] });
      if (route === 'GET /health') return sendJson(res, 200, { status: 'ok', model: engine.model, contextSize: engine.contextSize, threads: engine.threads, queue: queue.depth });
      throw new WireFault(404, `no route ${route.slice(0, 80)}`, 'invalid_request_error', null);
    };
    work().catch((e: unknown) => {
      const f = e instanceof WireFault ? e : new WireFault(500, `the local model failed: ${(e as Error)?.message ?? String(e)}`.slice(0, 300), 'server_error', null);
      sendFault(res, f);
    });
  });
  return { server, queueDepth: () => queue.depth };
}
