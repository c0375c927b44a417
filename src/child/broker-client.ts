import net from 'node:net';
import type * as protocol from '../protocol/index.js';
import type { BrokerMethod, ParamsOf, ReplyOf } from '../protocol/index.js';

/**
 * The child's end of the broker protocol: one JSON line per request
 * `{v:1,id,method,token,params}` and one per reply `{v:1,id,ok,result|error}` over the run's
 * unix socket. Runs inside the jail; Node built-ins only. Trusts nothing but the socket the
 * supervisor mounted.
 *
 * The connection lives as long as the run: it authenticates at once (`hello`), so a child
 * that thinks for an hour before its first call keeps it. The first connect tries as long as
 * a reconnect does (to the run's own deadline): a child started just before its supervisor
 * died waits for the next one however long its start takes. When the supervisor goes away (a
 * daemon restart) the client reconnects to the same socket path and re-sends every call that
 * had no reply yet, marked `resent` under its first id, so a call the dead supervisor had
 * applied is answered again rather than applied twice (a step is counted once, a spawn makes
 * one child). Only when no supervisor comes back before the run's own deadline do pending
 * calls fail (`broker_closed`). A call whose line is over the broker's limit is refused here,
 * with a reply the script can catch, before a byte is sent.
 */

/**
 * The broker's line limit (protocol v1), newline excluded. The child loads nothing outside
 * /opt/brig/child, so the number is written here; its type is the protocol's literal, and
 * the build fails when the two differ.
 */
export const MAX_LINE_BYTES: typeof protocol.MAX_LINE_BYTES = 65536;

export interface BrokerReplyError {
  code: string;
  message: string;
  hint?: string;
}

export class BrokerCallError extends Error {
  constructor(readonly code: string, message: string, readonly hint?: string) {
    super(message);
    this.name = 'BrokerCallError';
  }
}

type Pending = { line: string; resend: string; resolve: (v: unknown) => void; reject: (e: Error) => void };

export interface BrokerClientOptions {
  /** Give up connecting (the first time too) and reconnecting, and fail pending calls, at this epoch ms. */
  reconnectUntil?: number;
  /**
   * Resolve once connected and `hello` is sent, without its reply: calls made meanwhile follow
   * it on the connection (each line carries the bearer and is checked on its own), and
   * `authenticated` settles with the reply. Saves a round trip before the first real call.
   */
  pipelineHello?: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function connectOnce(socketPath: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(socketPath);
    s.once('connect', () => {
      s.off('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

export class BrokerClient {
  readonly #path: string;
  readonly #token: string;
  readonly #until: number;
  readonly #pending = new Map<number, Pending>();
  #sock: net.Socket | null = null;
  #seq = 0;
  #buf = '';
  #closed = false;
  #reconnecting: Promise<void> | null = null;
  #hello: Promise<ReplyOf<'hello'>> | undefined;

  private constructor(socketPath: string, token: string, opts: BrokerClientOptions) {
    this.#path = socketPath;
    this.#token = token;
    this.#until = opts.reconnectUntil ?? Date.now() + 3600_000;
  }

  static async connect(socketPath: string, token: string, opts: BrokerClientOptions = {}): Promise<BrokerClient> {
    const c = new BrokerClient(socketPath, token, opts);
    // The same budget as a reconnect: a supervisor restarting under load may take a while.
    for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
      try {
        c.#attach(await connectOnce(socketPath));
        break;
      } catch (e) {
        if (Date.now() + delay > c.#until) throw e;
        await sleep(delay);
      }
    }
    // Authenticate now: the broker drops a connection that shows no bearer for a while.
    c.#hello = c.call('hello', {});
    if (opts.pipelineHello) c.#hello.catch(() => {});
    else await c.#hello;
    return c;
  }

  /** The first `hello`'s reply: rejects when the broker refused the bearer (it refuses every call of it then). */
  get authenticated(): Promise<ReplyOf<'hello'>> {
    return this.#hello ?? Promise.reject(new BrokerCallError('broker_closed', 'not connected'));
  }

  #attach(s: net.Socket): void {
    this.#sock = s;
    this.#buf = '';
    s.setEncoding('utf8');
    s.on('data', (chunk: string) => this.#onData(chunk));
    s.on('error', () => {});
    s.on('close', () => {
      if (this.#sock !== s) return;
      this.#sock = null;
      if (!this.#closed) void this.#reconnect();
    });
  }

  async #reconnect(): Promise<void> {
    this.#reconnecting ??= (async () => {
      for (let delay = 100; !this.#closed; delay = Math.min(delay * 2, 2000)) {
        if (Date.now() >= this.#until) {
          this.#failAll(new BrokerCallError('broker_closed', 'the broker closed the connection and did not come back'));
          return;
        }
        await sleep(delay);
        try {
          const s = await connectOnce(this.#path);
          this.#attach(s);
          // The hello authenticates; then every call that had no reply goes again, in order,
          // under its own id and marked resent: the supervisor may have applied it already.
          s.write(this.#encode(0, 'hello', {}) + '\n');
          for (const p of this.#pending.values()) s.write(p.resend + '\n');
          return;
        } catch {
          // the supervisor is not back yet
        }
      }
    })().finally(() => {
      this.#reconnecting = null;
    });
    return this.#reconnecting;
  }

  #failAll(e: Error): void {
    for (const p of this.#pending.values()) p.reject(e);
    this.#pending.clear();
  }

  #onData(chunk: string): void {
    this.#buf += chunk;
    let nl: number;
    while ((nl = this.#buf.indexOf('\n')) !== -1) {
      const line = this.#buf.slice(0, nl);
      this.#buf = this.#buf.slice(nl + 1);
      let msg: { id?: number; ok?: boolean; result?: unknown; error?: BrokerReplyError };
      try {
        msg = JSON.parse(line);
      } catch {
        continue;
      }
      const p = typeof msg.id === 'number' ? this.#pending.get(msg.id) : undefined;
      if (!p) continue;
      this.#pending.delete(msg.id!);
      if (msg.ok) p.resolve(msg.result);
      else p.reject(new BrokerCallError(msg.error?.code ?? 'internal', msg.error?.message ?? 'broker error', msg.error?.hint));
    }
  }

  #encode(id: number, method: string, params: unknown): string {
    return JSON.stringify({ v: 1, id, method, token: this.#token, params });
  }

  call<M extends BrokerMethod>(method: M, params: ParamsOf<M>): Promise<ReplyOf<M>> {
    if (this.#closed) return Promise.reject(new BrokerCallError('broker_closed', 'the broker client was closed'));
    const id = ++this.#seq;
    let line: string;
    let resend: string;
    try {
      line = this.#encode(id, method, params);
      // The same object with `resent` last: one more key on the line, never a second encoding.
      resend = `${line.slice(0, -1)},"resent":true}`;
    } catch (e) {
      return Promise.reject(new BrokerCallError('invalid_input', `the ${method} call cannot be sent as JSON: ${(e as Error).message}`));
    }
    // Checked as it would be re-sent (the longer of the two lines).
    const bytes = Buffer.byteLength(resend);
    if (bytes > MAX_LINE_BYTES) {
      return Promise.reject(
        new BrokerCallError('invalid_input', `the ${method} call is ${bytes} bytes; the broker takes at most ${MAX_LINE_BYTES} per call`, 'Write bulk data to /workspace/out and return its path.'),
      );
    }
    return new Promise<ReplyOf<M>>((resolve, reject) => {
      this.#pending.set(id, { line, resend, resolve: resolve as (v: unknown) => void, reject });
      // While disconnected the line waits in #pending; the reconnect sends it.
      this.#sock?.write(line + '\n');
    });
  }

  close(): void {
    this.#closed = true;
    this.#sock?.end();
  }
}
