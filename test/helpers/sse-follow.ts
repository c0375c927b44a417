/**
 * A client of the API's event stream (`GET /v1/events`) on a unix socket, its bytes parsed by
 * brig's own SseParser (src/util/sse.ts): every named event it got, in order, with the seq of
 * its `<boot>-<seq>` id. `connected` resolves with the response's status once its head came
 * (the server subscribes the client in the tick it writes that head: what is pushed after it
 * reaches this client); `first(n)` resolves with the first n events and ends the stream (a
 * transport error before them rejects it); `close()` ends it.
 */
import http from 'node:http';
import { SseParser } from '../../src/util/sse.js';

export interface FollowedEvent<D = Record<string, unknown>> {
  id: string;
  seq: number;
  event: string;
  data: D;
}

export interface EventFollow<D> {
  got: FollowedEvent<D>[];
  connected: Promise<number>;
  first(n: number): Promise<FollowedEvent<D>[]>;
  close(): void;
}

export function followEvents<D = Record<string, unknown>>(socketPath: string, query = '', headers: Record<string, string> = {}): EventFollow<D> {
  const got: FollowedEvent<D>[] = [];
  const waiting: { n: number; resolve: (e: FollowedEvent<D>[]) => void; reject: (e: unknown) => void }[] = [];
  const settle = () => {
    for (const w of [...waiting]) {
      if (got.length < w.n) continue;
      waiting.splice(waiting.indexOf(w), 1);
      req.destroy();
      w.resolve(got.slice(0, w.n));
    }
  };
  let connected!: (status: number) => void;
  const head = new Promise<number>((r) => (connected = r));
  const parser = new SseParser();
  const req = http.request({ socketPath, path: `/v1/events${query}`, headers }, (res) => {
    connected(res.statusCode ?? 0);
    res.on('data', (d: Buffer) => {
      // Unnamed blocks are not the API's events.
      for (const e of parser.push(d)) {
        if (e.event === 'message') continue;
        const id = e.id ?? '';
        got.push({ id, seq: Number(/-(\d+)$/.exec(id)?.[1] ?? 0), event: e.event, data: (e.data ? JSON.parse(e.data) : {}) as D });
      }
      settle();
    });
  });
  req.on('error', (e) => {
    for (const w of waiting.splice(0)) w.reject(e);
  });
  req.end();
  return {
    got,
    connected: head,
    first: (n) =>
      new Promise((resolve, reject) => {
        waiting.push({ n, resolve, reject });
        settle();
      }),
    close: () => req.destroy(),
  };
}
