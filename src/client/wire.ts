/**
 * One bounded HTTP/1.1 exchange with the daemon over its unix socket, on a bare net socket.
 *
 * Why not node:http: a thin CLI command (`brig list` through a daemon) should start like a
 * native tool, and Node's HTTP client costs about 10 ms on its first request in a process
 * (the module and its parser warming up) against about 3 ms for this — a fifth of Node's own
 * start-up (bench/cli.bench.ts). Only for the daemon's JSON replies: `Connection: close`, one
 * request per connection, the reply read whole up to a byte bound, content-length or chunked.
 * The event stream (SSE) stays on node:http.
 * Trusts: the daemon at the socket (0600, the operator's own); still parses strictly and
 * bounded: a reply without a status line, cut short of its length, or over the bound fails.
 */
import net from 'node:net';

export interface WireRequest {
  socketPath: string;
  method: 'GET' | 'POST';
  path: string;
  /** A JSON body (sent as application/json). */
  body?: string;
  signal?: AbortSignal | undefined;
  /** Give up when the whole reply has not arrived after this long; default: wait. */
  timeoutMs?: number;
  /** The largest reply accepted (head and body); default 256 MiB. */
  maxBytes?: number;
  /** Which face calls (`X-Brig-Client`: cli, mcp, console, library), for the daemon's log line. */
  caller?: string | undefined;
}

export interface WireReply {
  status: number;
  body: string;
}

const MAX_REPLY = 256 * 1024 * 1024;

export class WireError extends Error {
  constructor(
    message: string,
    readonly reason: 'aborted' | 'timeout' | 'transport' | 'malformed' | 'too_large',
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export function exchange(o: WireRequest): Promise<WireReply> {
  return new Promise((resolve, reject) => {
    const max = o.maxBytes ?? MAX_REPLY;
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const sock = net.connect(o.socketPath);
    const finish = (f: () => void) => {
      if (done) return;
      done = true;
      o.signal?.removeEventListener('abort', onAbort);
      sock.destroy();
      f();
    };
    const fail = (e: WireError) => finish(() => reject(e));
    const onAbort = () => fail(new WireError('the request was aborted', 'aborted'));
    if (o.signal?.aborted) return onAbort();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    if (o.timeoutMs !== undefined) sock.setTimeout(o.timeoutMs, () => fail(new WireError(`no reply within ${o.timeoutMs} ms`, 'timeout')));
    sock.on('connect', () => {
      const body = o.body ?? '';
      const head = `${o.method} ${o.path} HTTP/1.1\r\nHost: brig\r\nConnection: close\r\n${o.caller ? `X-Brig-Client: ${o.caller}\r\n` : ''}${o.body !== undefined ? `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` : ''}\r\n`;
      // Not end(): a client's FIN makes Node's server abort the request (httpAllowHalfOpen is off),
      // which would cut a long wait. The server closes after its reply (Connection: close).
      sock.write(head + body);
    });
    sock.on('data', (d: Buffer) => {
      size += d.length;
      if (size > max) return fail(new WireError(`the reply is over ${max} bytes`, 'too_large'));
      chunks.push(d);
    });
    sock.on('end', () => {
      try {
        const reply = parseReply(Buffer.concat(chunks));
        finish(() => resolve(reply));
      } catch (e) {
        fail(e as WireError);
      }
    });
    sock.on('error', (e) => fail(new WireError(e.message, 'transport', { cause: e })));
    sock.on('close', () => fail(new WireError('the daemon closed the connection before replying', 'transport')));
  });
}

/** A whole HTTP/1.1 reply: its status and its body (content-length or chunked). */
export function parseReply(buf: Buffer): WireReply {
  const sep = buf.indexOf('\r\n\r\n');
  if (sep < 0) throw new WireError('the reply has no complete HTTP head', 'malformed');
  const lines = buf.subarray(0, sep).toString('latin1').split('\r\n');
  const status = /^HTTP\/1\.[01] ([1-5]\d\d)(?: |$)/.exec(lines[0] ?? '');
  if (!status) throw new WireError('the reply has no HTTP status line', 'malformed');
  const headers = new Map<string, string>();
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    if (i > 0) headers.set(l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim());
  }
  let body = buf.subarray(sep + 4);
  if (/\bchunked\b/i.test(headers.get('transfer-encoding') ?? '')) body = dechunk(body);
  else if (headers.has('content-length')) {
    const n = Number(headers.get('content-length'));
    if (!Number.isSafeInteger(n) || n < 0) throw new WireError('the reply has a bad content-length', 'malformed');
    if (body.length < n) throw new WireError('the reply was cut short of its content-length', 'malformed');
    body = body.subarray(0, n);
  }
  return { status: Number(status[1]), body: body.toString('utf8') };
}

function dechunk(b: Buffer): Buffer {
  const out: Buffer[] = [];
  let i = 0;
  for (;;) {
    const eol = b.indexOf('\r\n', i);
    if (eol < 0) throw new WireError('a chunked reply was cut short', 'malformed');
    const sizeText = b.subarray(i, eol).toString('latin1').split(';')[0]!.trim();
    if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) throw new WireError('a chunked reply has a bad chunk size', 'malformed');
    const n = parseInt(sizeText, 16);
    if (n === 0) return Buffer.concat(out);
    if (eol + 2 + n + 2 > b.length) throw new WireError('a chunked reply was cut short', 'malformed');
    out.push(b.subarray(eol + 2, eol + 2 + n));
    i = eol + 2 + n + 2;
  }
}
