/**
 * brig's end of the pod relay: reads the frames the pod's relay (src/child/pod-relay.ts) writes
 * to its exec's stdout, and writes frames to its stdin. Each connection the pod announces
 * (OPEN on listener N) is connected to `sockets[N]` on the host — the run's broker.sock, its
 * egress socket — and carried both ways with the wire's flow control (child/relay-frames.ts).
 *
 * Guarantees: an OPEN with a listener index brig did not give, or past `maxConnections` live
 * connections (default 64), is answered CLOSE and connects nothing; a frame for a connection
 * brig no longer has is ignored; per connection at most the wire's WINDOW is buffered, and
 * what brig queues for the pod is bounded whether or not the pod reads it; a frame that does
 * not parse or breaks the protocol (an OPEN for an open id, DATA past the window or after END,
 * an ACK of more than was sent) ends the whole relay: every connection is closed and `done`
 * rejects with a BrigError. `done` resolves when the pod's output ends; after it settles, or
 * close(), no socket of the relay is left open and the pod's input is ended.
 * Threat: the pod, assumed run by a hostile process: lying headers, floods of OPENs or frames,
 * ids it never opened, a reader that never reads. Trusts: the host sockets it is given (brig's
 * own servers). Fails closed: anything it does not understand ends the relay.
 */
import net from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { BrigError, toBrigError } from '../../util/errors.js';
import { RelayFrameError, RelayMux } from '../../child/index.js';

export interface HostRelayOptions {
  /** Frames from the pod (the exec's stdout). */
  input: Readable;
  /** Frames to the pod (the exec's stdin); ended when the relay ends. */
  output: Writable;
  /** The host socket for each of the pod relay's listeners, by index (the order of pod-relay.js's arguments). */
  sockets: string[];
  /** Live connections at most (default 64); an OPEN past it is answered CLOSE. */
  maxConnections?: number;
}

export interface HostRelay {
  /** Resolves when the pod's output ends; rejects with a BrigError when a frame breaks the protocol or a stream fails. */
  done: Promise<void>;
  /** Ends the relay now: every connection closed, the pod's input ended; `done` resolves. */
  close(): void;
}

const DEFAULT_MAX_CONNECTIONS = 64;

export function hostRelay(o: HostRelayOptions): HostRelay {
  const max = o.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const sockets = [...o.sockets];
  const mux: RelayMux = new RelayMux({
    input: o.input,
    output: o.output,
    onOpen: (id, listener) => {
      if (mux.has(id)) throw new RelayFrameError('protocol', `OPEN for connection ${id}, which is open`);
      const target = sockets[listener];
      if (target === undefined || mux.size >= max) return mux.refuse(id);
      mux.attach(id, net.connect({ path: target, allowHalfOpen: true }));
    },
  });
  const done = mux.done.then(
    () => void o.output.end(),
    (e: unknown) => {
      o.output.end();
      throw asBrigError(e);
    },
  );
  done.catch(() => undefined);
  return { done, close: () => mux.shutdown() };
}

function asBrigError(e: unknown): BrigError {
  if (e instanceof RelayFrameError) {
    return new BrigError('jail_failed', `the pod's broker relay broke its protocol (${e.fault}): ${e.message}`, {
      data: { fault: e.fault },
      hint: 'The relay in the pod sent a frame brig does not accept: a relay of another brig version, or a pod that is not behaving. The run lost its way to the broker; its pod and the relay\'s stderr say more.',
      cause: e,
    });
  }
  return toBrigError(e);
}
