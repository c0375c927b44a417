import net from 'node:net';
import type { BrokerReply } from '../../../src/broker/index.js';

/**
 * A tiny host-side broker client for the tests and bench/ (not part of the library): one
 * connection, replies matched by id, plus `raw()` to send arbitrary bytes. The in-jail runtime
 * has its own (src/child), built on Node built-ins only; both speak the wire format in
 * docs/broker.md.
 */
export class BrokerTestClient {
  private buf = '';
  private seq = 0;
  private readonly waiting = new Map<string | number | null, ((r: BrokerReply) => void)[]>();
  private readonly unmatched: BrokerReply[] = [];
  private closedP: Promise<void>;
  closed = false;

  private constructor(
    readonly socket: net.Socket,
    readonly token: string,
  ) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => this.onData(d));
    socket.on('error', () => {});
    this.closedP = new Promise((resolve) => socket.on('close', () => {
      this.closed = true;
      resolve();
    }));
  }

  static connect(socketPath: string, token: string): Promise<BrokerTestClient> {
    return new Promise((resolve, reject) => {
      const s = net.connect(socketPath);
      s.once('connect', () => resolve(new BrokerTestClient(s, token)));
      s.once('error', reject);
    });
  }

  private onData(d: string): void {
    this.buf += d;
    let nl: number;
    while ((nl = this.buf.indexOf('\n')) !== -1) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      let r: BrokerReply;
      try {
        r = JSON.parse(line) as BrokerReply;
      } catch {
        continue;
      }
      const q = this.waiting.get(r.id);
      const w = q?.shift();
      if (q && q.length === 0) this.waiting.delete(r.id);
      if (w) w(r);
      else this.unmatched.push(r);
    }
  }

  /** Waits for the next reply with this id (null: the next reply to an unparseable line). */
  reply(id: string | number | null): Promise<BrokerReply> {
    const i = this.unmatched.findIndex((r) => r.id === id);
    if (i !== -1) return Promise.resolve(this.unmatched.splice(i, 1)[0]!);
    return new Promise((resolve, reject) => {
      const q = this.waiting.get(id) ?? [];
      q.push(resolve);
      this.waiting.set(id, q);
      void this.closedP.then(() => reject(new Error('broker connection closed')));
    });
  }

  call(method: string, params: unknown = {}, token: unknown = this.token): Promise<BrokerReply> {
    const id = ++this.seq;
    this.socket.write(JSON.stringify({ v: 1, id, method, token, params }) + '\n');
    return this.reply(id);
  }

  raw(data: string | Buffer): void {
    this.socket.write(data);
  }

  whenClosed(): Promise<void> {
    return this.closedP;
  }

  close(): void {
    this.socket.destroy();
  }
}
