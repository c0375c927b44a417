import net from 'node:net';

/**
 * The child's end of the broker protocol: one JSON line per request
 * `{v:1,id,method,token,params}` and one per reply `{v:1,id,ok,result|error}` over the run's
 * unix socket. Runs inside the jail; Node built-ins only. Trusts nothing but the socket the
 * supervisor mounted; a broken socket fails every pending call (the script then fails).
 */

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

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

export class BrokerClient {
  readonly #sock: net.Socket;
  readonly #token: string;
  readonly #pending = new Map<number, Pending>();
  #seq = 0;
  #buf = '';
  #dead: Error | null = null;

  private constructor(sock: net.Socket, token: string) {
    this.#sock = sock;
    this.#token = token;
    sock.setEncoding('utf8');
    sock.on('data', (chunk: string) => this.#onData(chunk));
    const fail = (e: Error) => {
      this.#dead ??= e;
      for (const p of this.#pending.values()) p.reject(this.#dead);
      this.#pending.clear();
    };
    sock.on('error', fail);
    sock.on('close', () => fail(new BrokerCallError('broker_closed', 'the broker closed the connection')));
  }

  static connect(socketPath: string, token: string): Promise<BrokerClient> {
    return new Promise((resolve, reject) => {
      const s = net.connect(socketPath);
      s.once('connect', () => resolve(new BrokerClient(s, token)));
      s.once('error', reject);
    });
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

  call(method: string, params: unknown = {}): Promise<unknown> {
    if (this.#dead) return Promise.reject(this.#dead);
    const id = ++this.#seq;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#sock.write(JSON.stringify({ v: 1, id, method, token: this.#token, params }) + '\n');
    });
  }

  close(): void {
    this.#sock.end();
  }
}
