/**
 * An engine outage for one daemon alone: a unix-socket proxy in front of the real engine
 * (/var/run/docker.sock), which the test points that daemon's DOCKER_HOST at and controls.
 *
 * - `cut()`: every open connection is closed at once (what a restarting engine does).
 * - `refuse(ms)`: cut, then every new connection is closed as soon as it is accepted, for ms.
 * - `freeze()` / `thaw()`: connections are accepted but nothing is forwarded either way (the
 *   bytes wait in the proxy) until thaw — a hung engine that comes back.
 * - `refuseOn(pattern, ms)`: the first request whose request line matches (`DELETE /v1.41/
 *   containers/…`) triggers refuse(ms) before it reaches the engine: an outage at an exact
 *   step of the daemon's.
 * - `hold(pattern)` / `release()`: every request whose request line matches waits in the proxy
 *   (with whatever its connection sends after it) until release; every other connection goes
 *   on — a daemon caught at an exact engine call (its start-up sweep's first remove, a run's
 *   container create) with no timing.
 *
 * Forwarding is raw bytes (attach streams and hijacked connections pass unchanged); a request
 * line is recognised at the start of a chunk the client wrote, which is how Node's HTTP client
 * writes each request. Only the test's own daemon goes through it: everything else (the test's
 * own checks, other suites) talks to the engine directly.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const ENGINE_SOCKET = '/var/run/docker.sock';

interface Pair {
  client: net.Socket;
  upstream: net.Socket | undefined;
  /** What the client sent while frozen (or before its upstream connected). */
  held: Buffer[];
  /** What the engine sent while frozen. */
  heldDown: Buffer[];
  /** A held request is waiting: the connection's bytes stay in `held` until release. */
  holding: boolean;
}

export interface EngineProxy {
  /** The proxy's socket path, and the DOCKER_HOST that names it. */
  socketPath: string;
  dockerHost: string;
  cut(): void;
  refuse(ms: number): void;
  freeze(): void;
  thaw(): void;
  refuseOn(pattern: RegExp, ms: number): void;
  /** Date.now() when the last outage ended (refuse's timer ran out, or thaw), else null. */
  readonly backAt: number | null;
  /** How many request lines matched a refuseOn pattern (the trigger fires on the first). */
  readonly triggered: number;
  hold(pattern: RegExp): void;
  /** Lets every held request through (and what its connection queued since); holds nothing more. */
  release(): void;
  /** `METHOD PATH` (no query) of every request held so far (released ones too). */
  held(): string[];
  close(): Promise<void>;
}

const REQUEST_LINE = /^(GET|HEAD|POST|PUT|DELETE) (\S+) HTTP\/1\.[01]\r\n/;
/** A request's method and path without its query (a create's query carries its whole body: no line end is looked for). */
const REQUEST_PATH = /^(GET|HEAD|POST|PUT|DELETE) (\/[^ ?\r\n]{0,200})/;

export async function startEngineProxy(t: { after: (fn: () => Promise<void>) => void }, target = ENGINE_SOCKET): Promise<EngineProxy> {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-ep-'));
  const socketPath = path.join(dir, 'engine.sock');
  const pairs = new Set<Pair>();
  let refusingUntil = 0;
  let refuseTimer: NodeJS.Timeout | undefined;
  let frozen = false;
  let backAt: number | null = null;
  let trigger: { pattern: RegExp; ms: number } | undefined;
  let triggered = 0;
  let holdPattern: RegExp | null = null;
  const heldLines: string[] = [];

  const drop = (p: Pair) => {
    p.client.destroy();
    p.upstream?.destroy();
    pairs.delete(p);
  };
  const cut = () => {
    for (const p of [...pairs]) drop(p);
  };
  const refuse = (ms: number) => {
    cut();
    refusingUntil = Date.now() + ms;
    clearTimeout(refuseTimer);
    refuseTimer = setTimeout(() => (backAt = Date.now()), ms);
  };
  /** A client chunk that starts a request the trigger names cuts everything before it is sent. */
  const tripped = (chunk: Buffer): boolean => {
    if (!trigger) return false;
    const line = REQUEST_LINE.exec(chunk.subarray(0, 2048).toString('latin1'));
    if (!line || !trigger.pattern.test(`${line[1]} ${line[2]}`)) return false;
    triggered++;
    const ms = trigger.ms;
    trigger = undefined;
    refuse(ms);
    return true;
  };
  /** A client chunk that starts a request the hold names waits, with all its connection sends after it. */
  const holds = (chunk: Buffer): boolean => {
    if (!holdPattern) return false;
    const line = REQUEST_PATH.exec(chunk.subarray(0, 256).toString('latin1'));
    if (!line || !holdPattern.test(`${line[1]} ${line[2]}`)) return false;
    heldLines.push(`${line[1]} ${line[2]}`);
    return true;
  };
  const connectUpstream = (p: Pair) => {
    const up = net.connect(target);
    p.upstream = up;
    up.on('error', () => drop(p));
    up.on('close', () => drop(p));
    if (!p.holding) for (const b of p.held.splice(0)) up.write(b);
    up.on('data', (c: Buffer) => {
      if (!frozen) return void p.client.write(c);
      p.heldDown.push(c);
      up.pause();
    });
  };

  const server = net.createServer((client) => {
    if (Date.now() < refusingUntil) return void client.destroy();
    const p: Pair = { client, upstream: undefined, held: [], heldDown: [], holding: false };
    pairs.add(p);
    client.on('error', () => drop(p));
    client.on('close', () => drop(p));
    client.on('data', (c: Buffer) => {
      if (tripped(c)) return;
      if (frozen) client.pause();
      if (!p.holding && holds(c)) p.holding = true;
      if (p.upstream && !frozen && !p.holding) p.upstream.write(c);
      else p.held.push(c);
    });
    if (frozen) client.pause();
    else connectUpstream(p);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });

  const proxy: EngineProxy = {
    socketPath,
    dockerHost: `unix://${socketPath}`,
    cut,
    refuse,
    freeze() {
      frozen = true;
      for (const p of pairs) {
        p.client.pause();
        p.upstream?.pause();
      }
    },
    thaw() {
      frozen = false;
      backAt = Date.now();
      for (const p of [...pairs]) {
        if (!p.upstream) connectUpstream(p);
        else if (!p.holding) for (const b of p.held.splice(0)) p.upstream.write(b);
        for (const b of p.heldDown.splice(0)) p.client.write(b);
        p.client.resume();
        p.upstream?.resume();
      }
    },
    refuseOn(pattern, ms) {
      trigger = { pattern, ms };
    },
    get backAt() {
      return backAt;
    },
    get triggered() {
      return triggered;
    },
    hold(pattern) {
      holdPattern = pattern;
    },
    release() {
      holdPattern = null;
      for (const p of pairs) {
        if (!p.holding) continue;
        p.holding = false;
        if (p.upstream && !frozen) for (const b of p.held.splice(0)) p.upstream.write(b);
      }
    },
    held: () => [...heldLines],
    async close() {
      clearTimeout(refuseTimer);
      cut();
      await new Promise<void>((r) => server.close(() => r()));
      await fs.promises.rm(dir, { recursive: true, force: true });
    },
  };
  t.after(() => proxy.close());
  return proxy;
}
