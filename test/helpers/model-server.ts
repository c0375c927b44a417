/**
 * A scripted model server on loopback (node:http, 127.0.0.1, a random port) speaking both wire
 * formats brig's clients use — POST /v1/chat/completions (and /chat/completions) and POST
 * /v1/messages — streamed (SSE) when the request asks, plain JSON otherwise or when a turn says.
 *
 *   const m = await startModelServer({ script: [toolCallTurn('read', { path: 'a' }), textTurn('done')] });
 *   new OpenAIChatClient({ baseUrl: m.baseUrl, model: 'x' });   // m.baseUrl ends in /v1: both clients take it
 *   m.requests   // every request: path, format, headers, parsed body, raw text
 *   await m.close();
 *
 * A script is a queue of turns consumed one per request (an entry may be a function of the
 * request), or one function choosing the turn. Faults per turn: status (429 + retry-after,
 * 5xx), stall, disconnect (midToolCall), drop, oversize, a mid-stream error, a raw body; quirks: fragmented
 * arguments, missing ids, `choices: null`, no [DONE], pings, cumulative deltas, malformed
 * arguments (`rawArguments`). Every request is checked for tool-call pairing (Codex's
 * invariant); a broken one gets HTTP 400 and lands in `problems`. No network beyond loopback.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { errorBody, render, streamErrorFrame, toolPairingProblems, type Turn, type WireFormat } from './model-server-wire.js';

export type { Turn, Fault, ScriptedToolCall, TurnUsage, WireFormat } from './model-server-wire.js';
export { toolPairingProblems } from './model-server-wire.js';

export interface RecordedRequest {
  /** 1-based, in arrival order. */
  n: number;
  method: string;
  path: string;
  format: WireFormat;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body (undefined when it was not JSON). */
  body: any;
  raw: string;
  stream: boolean;
  /** Date.now() at arrival. */
  at: number;
  /** Which TCP connection carried it (1-based): equal numbers mean a kept-alive connection was reused. */
  connection: number;
}

export type ScriptEntry = Turn | ((req: RecordedRequest) => Turn);
export type Script = ScriptEntry[] | ((req: RecordedRequest, n: number) => Turn | undefined);

export interface ModelServerOptions {
  script: Script;
  /** Answer 401 (echoing the key it got, as some servers do) unless this key is sent. */
  expectKey?: string;
  /** Check tool-call pairing in every request (default true). */
  checkPairing?: boolean;
  /** The model id the replies name (default: the request's `model`). */
  model?: string;
}

export interface ModelServer {
  /** `http://127.0.0.1:PORT/v1`: the openai-chat base URL; the anthropic client accepts it too. */
  baseUrl: string;
  /** `http://127.0.0.1:PORT`. */
  origin: string;
  requests: RecordedRequest[];
  /** Pairing violations, exhausted scripts, unknown paths. */
  problems: string[];
  /** Turns left in an array script. */
  remaining(): number;
  close(): Promise<void>;
}

/** A turn that calls one tool (more via extra.toolCalls). */
export function toolCallTurn(name: string, input: unknown, extra: Partial<Turn> = {}): Turn {
  return { ...extra, toolCalls: [{ name, input }, ...(extra.toolCalls ?? [])] };
}

/** A turn that finishes with text. */
export function textTurn(text: string, extra: Partial<Turn> = {}): Turn {
  return { ...extra, text };
}

/** A turn that answers an HTTP error status. */
export function statusTurn(status: number, o: { retryAfter?: string; retryAfterMs?: number; body?: unknown; headers?: Record<string, string> } = {}): Turn {
  return { fault: { kind: 'status', status, ...o } };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startModelServer(o: ModelServerOptions): Promise<ModelServer> {
  const requests: RecordedRequest[] = [];
  const problems: string[] = [];
  const queue = Array.isArray(o.script) ? [...o.script] : undefined;
  const sockets = new Set<Socket>();
  const connectionIds = new WeakMap<Socket, number>();
  let connections = 0;

  const pick = (req: RecordedRequest): Turn | undefined => {
    if (!queue) return (o.script as (r: RecordedRequest, n: number) => Turn | undefined)(req, req.n);
    const e = queue.shift();
    return typeof e === 'function' ? e(req) : e;
  };

  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(parts).toString('utf8')).catch((e: unknown) => {
        problems.push(`handler: ${String(e)}`);
        res.destroy();
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    connectionIds.set(s, ++connections);
    s.on('close', () => sockets.delete(s));
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): Promise<void> {
    const path = (req.url ?? '').split('?')[0]!;
    const format: WireFormat | undefined =
      path === '/v1/chat/completions' || path === '/chat/completions' ? 'openai-chat' : path === '/v1/messages' ? 'anthropic-messages' : undefined;
    if (req.method !== 'POST' || !format) {
      problems.push(`unknown route ${req.method} ${path}`);
      return json(res, 404, { error: { message: `no route ${req.method} ${path}` } });
    }
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    const rec: RecordedRequest = { n: requests.length + 1, method: req.method, path, format, headers: req.headers, body, raw, stream: body?.stream === true, at: Date.now(), connection: connectionIds.get(req.socket) ?? 0 };
    requests.push(rec);
    if (o.expectKey !== undefined) {
      const got = format === 'openai-chat' ? String(req.headers.authorization ?? '').replace(/^Bearer /, '') : String(req.headers['x-api-key'] ?? '');
      if (got !== o.expectKey) return json(res, 401, errorBody(format, 401, `Incorrect API key provided: ${got}`));
    }
    if (o.checkPairing !== false) {
      const bad = toolPairingProblems(format, body);
      if (bad.length > 0) {
        problems.push(...bad.map((b) => `request ${rec.n}: ${b}`));
        return json(res, 400, errorBody(format, 400, `tool pairing: ${bad.join('; ')}`));
      }
    }
    const turn = pick(rec);
    if (!turn) {
      problems.push(`request ${rec.n}: the script is exhausted`);
      return json(res, 400, errorBody(format, 400, `the scripted model server has no turn left for request ${rec.n}`));
    }
    await serve(req, res, rec, turn);
  }

  async function serve(req: http.IncomingMessage, res: http.ServerResponse, rec: RecordedRequest, turn: Turn): Promise<void> {
    const f = turn.fault;
    if (f?.kind === 'drop') return void req.socket.destroy();
    if (f?.kind === 'status') {
      const headers: Record<string, string> = { ...(f.headers ?? {}) };
      if (f.retryAfter !== undefined) headers['retry-after'] = f.retryAfter;
      if (f.retryAfterMs !== undefined) headers['retry-after-ms'] = String(f.retryAfterMs);
      return json(res, f.status, f.body ?? errorBody(rec.format, f.status, `scripted HTTP ${f.status}`), headers);
    }
    if (f?.kind === 'raw') {
      res.writeHead(f.status ?? 200, { 'content-type': f.contentType ?? 'text/event-stream' });
      return void res.end(f.body);
    }
    const model = turn.model ?? o.model ?? (typeof rec.body?.model === 'string' ? rec.body.model : 'scripted-model');
    const r = render(rec.format, turn, rec.n, model, rec.raw.length);
    if ((!rec.stream || turn.plain) && f === undefined) return json(res, 200, r.plain);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    let closed = false;
    res.on('close', () => (closed = true));
    const write = (s: string) => new Promise<void>((ok) => res.write(s, () => ok()));
    if (f?.kind === 'oversize') {
      const chunk = rec.format === 'openai-chat'
        ? `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'x'.repeat(60_000) }, finish_reason: null }] })}\n\n`
        : `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x'.repeat(60_000) } })}\n\n`;
      await write(r.frames[0]!);
      for (let sent = 0; sent < f.bytes && !closed; sent += chunk.length) await write(chunk);
      return void res.end();
    }
    const cut =
      f?.kind === 'stall' ? (f.afterEvents ?? 0)
      : f?.kind === 'disconnect' ? (f.afterEvents === 'midToolCall' ? r.midToolCall : (f.afterEvents ?? 1))
      : f?.kind === 'streamError' ? (f.afterEvents ?? 1)
      : r.frames.length;
    for (const [i, frame] of r.frames.entries()) {
      if (i >= cut || closed) break;
      await write(frame);
      if (turn.delayMs) await sleep(turn.delayMs);
    }
    if (closed) return;
    if (f?.kind === 'stall') return; // headers sent, nothing more until the client gives up or close()
    if (f?.kind === 'disconnect') {
      await sleep(20);
      return void req.socket.destroy();
    }
    if (f?.kind === 'streamError') await write(streamErrorFrame(rec.format, f.type ?? 'overloaded_error', f.message ?? 'Overloaded'));
    if (!turn.quirks?.holdOpen) res.end();
  }

  function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
    res.end(text);
  }

  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    baseUrl: `${origin}/v1`,
    origin,
    requests,
    problems,
    remaining: () => queue?.length ?? 0,
    close: async () => {
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
