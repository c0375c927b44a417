/**
 * The Kubernetes pod's end of the broker relay: runs in the pod's `relay` container, exec'd by
 * brig (`node pod-relay.js /run/brig/broker.sock [/run/brig/egress.sock …]`), with its stdin and
 * stdout the exec's byte streams to brig's host. It listens on each path (in the emptyDir the
 * child mounts read-only: the child sees the socket where Docker's bind mount puts it) and
 * carries every connection accepted there to brig as frames (relay-frames.ts); brig's end
 * (src/jail/k8s/host-relay.ts) connects each to the real host socket of that listener.
 *
 * Guarantees: stdout carries frames and nothing else (diagnostics go to stderr); a stale socket
 * at a path is replaced atomically (the path is never missing), anything else there is refused;
 * the sockets are 0600 (the child runs as the relay's uid); at most `maxConnections` at once
 * (more are closed on accept); when stdin ends (brig went away) every connection and listener is
 * closed, the paths removed (unless a newer relay's socket is there by then), exit 0.
 * Threat: the child, which connects and sends what it likes: it gets a socket whose bytes are
 * carried, bounded per connection by the wire's window, and decides nothing. Trusts: brig's end
 * of stdin/stdout (a frame that breaks the protocol still ends the relay, exit 1). A relay that
 * cannot listen exits 70.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { RelayFrameError, RelayMux } from './relay-frames.js';

export interface PodRelayOptions {
  /** Frames from brig (the exec's stdin). */
  input: Readable;
  /** Frames to brig (the exec's stdout). */
  output: Writable;
  /** The unix socket paths to listen on; an OPEN names one by its index here. */
  listen: string[];
  /** Connections at once (default 64); one more is closed as it is accepted. */
  maxConnections?: number;
}

export interface PodRelay {
  /** Resolves when the input ended (every connection and listener closed, the paths removed); rejects when brig's frames broke the protocol. */
  done: Promise<void>;
  /** Closes every connection and listener now; `done` resolves. */
  close(): void;
}

const MAX_LISTENERS = 256;
const DEFAULT_MAX_CONNECTIONS = 64;

/** Listens on every path, then relays; rejects (listening nowhere) when one path cannot be listened on. */
export async function podRelay(o: PodRelayOptions): Promise<PodRelay> {
  if (o.listen.length === 0 || o.listen.length > MAX_LISTENERS) throw new Error(`pod relay: give 1 to ${MAX_LISTENERS} socket paths, not ${o.listen.length}`);
  const max = o.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const mux = new RelayMux({
    input: o.input,
    output: o.output,
    onOpen: (id) => {
      throw new RelayFrameError('protocol', `brig sent OPEN (connection ${id}): only the pod opens connections`);
    },
  });
  let next = 0;
  const accept = (listener: number, s: net.Socket) => {
    s.on('error', () => undefined);
    if (mux.ended || mux.size >= max) {
      s.destroy();
      return;
    }
    while (mux.has(next)) next = (next + 1) >>> 0;
    const id = next;
    next = (next + 1) >>> 0;
    mux.attach(id, s, listener);
  };
  const servers: Listening[] = [];
  try {
    for (const [i, p] of o.listen.entries()) servers.push(await listenAt(p, (s) => accept(i, s)));
  } catch (e) {
    mux.shutdown();
    closeAll(servers);
    throw e;
  }
  const done = mux.done.finally(() => closeAll(servers));
  done.catch(() => undefined);
  return { done, close: () => mux.shutdown() };
}

/** A listener and the inode of its socket: on close the path is removed only if it is still this socket (a newer relay may have replaced it). */
interface Listening {
  server: net.Server;
  path: string;
  ino: number;
}

/**
 * Binds a fresh name beside the path, then renames it over the path: the child never finds the
 * path missing, and the name libuv removes when the listener closes is that fresh one, never the
 * path (which a newer relay may own by then).
 */
function listenAt(p: string, onConnection: (s: net.Socket) => void): Promise<Listening> {
  checkReplaceable(p);
  const fresh = path.join(path.dirname(p), `.${path.basename(p)}.${process.pid}.${randomBytes(4).toString('hex')}`);
  return new Promise((resolve, reject) => {
    const server = net.createServer({ allowHalfOpen: true }, onConnection);
    server.once('error', reject);
    server.listen(fresh, () => {
      server.off('error', reject);
      server.on('error', (e) => process.stderr.write(`pod-relay: ${p}: ${e.message}\n`));
      try {
        fs.chmodSync(fresh, 0o600);
        checkReplaceable(p);
        fs.renameSync(fresh, p);
        resolve({ server, path: p, ino: fs.lstatSync(p).ino });
      } catch (e) {
        server.close();
        reject(e);
      }
    });
  });
}

/** A socket left by an earlier relay may be replaced; anything else at the path is not ours to replace. */
function checkReplaceable(p: string): void {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (!st.isSocket()) throw new Error(`pod relay: ${p} exists and is not a socket`);
}

function closeAll(listening: Listening[]): void {
  for (const l of listening) {
    l.server.close();
    try {
      if (fs.lstatSync(l.path).ino === l.ino) fs.unlinkSync(l.path);
    } catch {
      // gone already
    }
  }
}

async function main(): Promise<void> {
  const paths = process.argv.slice(2);
  if (paths.length === 0) {
    process.stderr.write('usage: pod-relay.js SOCKET [SOCKET…]\n');
    process.exit(64);
  }
  let relay: PodRelay;
  try {
    relay = await podRelay({ input: process.stdin, output: process.stdout, listen: paths });
  } catch (e) {
    process.stderr.write(`pod-relay: ${(e as Error).message}\n`);
    process.exit(70);
  }
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => relay.close());
  relay.done.then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`pod-relay: ${(e as Error).message}\n`);
      process.exit(1);
    },
  );
}

if (process.argv[1]?.endsWith('pod-relay.js')) void main();
