/**
 * The broker server: one unix socket per run, the child's only way out of its jail.
 *
 * Guarantees: each run gets `<dir>/broker.sock` in its own directory (the supervisor mounts
 * that directory read-only into that run's jail only), both owned by the jail's user and
 * closed to every other local uid (socket-access.ts); a call is served only with that run's
 * bearer and the capability the method needs, and — for a run opened with a method surface (an
 * agent's tools) — only for a method on it (dispatch.ts). Nothing a child sends can crash
 * or stall the supervisor: lines are bounded (64 KiB, then the connection is dropped), each
 * line costs a token of the run's bucket before anything parses it, nesting is bounded,
 * refusals reach the ledger aggregated (ledger/refusal-log.ts), connections and calls in flight are
 * capped, a line must finish in time (slow-loris), a connection must authenticate in time (an
 * authenticated one then lives as long as its run, however quiet), unread replies are
 * bounded; sustained abuse cuts the run's connections at once (nothing more of them is read,
 * new ones are closed) and calls onAbuse (the supervisor kills the run, killedBy system).
 * Runs are isolated: one run's flood does not consume another's budget. Threat: a hostile or
 * buggy child, or another local user. Trusts: the lease verifier and the handlers it is
 * given. Fails closed: any doubt drops the connection or refuses the call.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Ledger } from '../ledger/index.js';
import { BrigError } from '../util/errors.js';
import { chargeLine, deny, dispatchLine, safeLedger, type DispatchDeps, type Handlers, type LeaseVerifier, type RunState } from './dispatch.js';
import { MAX_LINE_BYTES } from './protocol.js';
import { StrikeCounter, TokenBucket } from './rate-limit.js';
import { RefusalLog } from '../ledger/index.js';
import { grantRunSocket, prepareRunDir, type SocketOwner } from './socket-access.js';
import { listenOn } from '../util/listen.js';

export interface BrokerLimits {
  /** Token bucket per run: burst size and refill rate. */
  capacity: number;
  refillPerSec: number;
  /** Refused lines within `abuseWindowMs` that count as sustained abuse. */
  abuseStrikes: number;
  abuseWindowMs: number;
  /** Repeated refusals of one kind are written as one counted ledger line per this window. */
  deniedWindowMs: number;
  maxConnections: number;
  maxInflight: number;
  /**
   * A connection that has not authenticated and sends no complete line for this long is
   * closed. An authenticated connection lives as long as its run: a child may think for
   * an hour between calls (the run's own watchdog bounds it).
   */
  idleMs: number;
  /** From a line's first byte to its newline. */
  lineTimeoutMs: number;
  /** A new connection must present a valid bearer within this. */
  authTimeoutMs: number;
  /** Unread reply bytes before the connection is dropped (a child that never reads). */
  maxWriteBuffer: number;
  /** `log` lines kept per run. */
  logTail: number;
}

export const DEFAULT_BROKER_LIMITS: Readonly<BrokerLimits> = Object.freeze({
  capacity: 200,
  refillPerSec: 100,
  abuseStrikes: 2000,
  abuseWindowMs: 10_000,
  deniedWindowMs: 10_000,
  maxConnections: 4,
  maxInflight: 16,
  idleMs: 15 * 60_000,
  lineTimeoutMs: 10_000,
  authTimeoutMs: 10_000,
  maxWriteBuffer: 4 * 1024 * 1024,
  logTail: 200,
});

export interface BrokerServerOptions {
  leases: LeaseVerifier;
  ledger: Ledger;
  handlers?: Handlers;
  rate?: Partial<BrokerLimits>;
  /** Sustained abuse by a run: the supervisor ends it (`killed`, killedBy `system`). */
  onAbuse?: (runId: string) => void;
  /**
   * The jail's user (compose passes JAIL_USER): it owns each run's socket and directory.
   * Absent: the supervisor's uid does, and only it and root can connect.
   */
  socketOwner?: SocketOwner;
  now?: () => number;
  /** Every answered call by method and outcome (`ok` or the refusal's code), for metrics. */
  onCall?: (method: string, outcome: string) => void;
}

export interface OpenRunArgs {
  runId: string;
  leaseId: string;
  /** The run's own host directory: created 0700 for the socket owner, bind-mounted read-only into its jail. */
  dir: string;
  /** What `hello` returns. */
  packet: unknown;
  /**
   * The methods this run's bearer may call (an agent's: its loop's and its tools', from
   * agents/' agentMethodSurface); absent: every method its lease allows. Any other method is
   * refused `tool_not_offered` — the tool surface binds the bearer, not only the loop.
   */
  methods?: readonly string[] | undefined;
}

export interface BrokerRunHandle {
  socketPath: string;
  close(): Promise<void>;
}

/** Queued lines per connection at which reading pauses, and resumes. */
const QUEUE_HIGH = 512;
const QUEUE_LOW = 64;
/** Characters of queued lines past which a connection's reading pauses (resumed below half). */
const QUEUE_BYTES = 1024 * 1024;
/** Calls of one connection handled at once (4 connections × 4 = the run's 16 in flight). */
const PER_CONNECTION = 4;

/** Longest unix socket path Linux accepts (sun_path is 108 bytes with the NUL). */
const MAX_SOCKET_PATH = 107;

interface OpenRun {
  state: RunState;
  server: net.Server;
  sockets: Set<net.Socket>;
  socketPath: string;
  closing: Promise<void> | undefined;
}

export class BrokerServer {
  private readonly limits: BrokerLimits;
  private readonly deps: DispatchDeps;
  private readonly runs = new Map<string, OpenRun>();
  private readonly onAbuse: ((runId: string) => void) | undefined;
  private readonly socketOwner: SocketOwner | undefined;

  constructor(opts: BrokerServerOptions) {
    this.limits = { ...DEFAULT_BROKER_LIMITS, ...(opts.rate ?? {}) };
    this.onAbuse = opts.onAbuse;
    this.socketOwner = opts.socketOwner;
    this.deps = {
      leases: opts.leases,
      ledger: opts.ledger,
      handlers: opts.handlers ?? {},
      now: opts.now ?? Date.now,
      maxInflight: this.limits.maxInflight,
      logTail: this.limits.logTail,
      ...(opts.onCall ? { count: opts.onCall } : {}),
      abuse: (run) => {
        // Nothing more is read from an abusive run: its connections go now, new ones at accept.
        for (const s of this.runs.get(run.runId)?.sockets ?? []) s.destroy();
        try {
          this.onAbuse?.(run.runId);
        } catch {
          // The supervisor's kill path failing must not take the broker down.
        }
      },
    };
  }

  async openRun(a: OpenRunArgs): Promise<BrokerRunHandle> {
    if (this.runs.has(a.runId)) throw new BrigError('invalid_input', `run ${a.runId} already has a broker socket`);
    const socketPath = path.join(a.dir, 'broker.sock');
    if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
      throw new BrigError('invalid_input', `broker socket path is over ${MAX_SOCKET_PATH} bytes: ${socketPath}`, { hint: 'Give the run a shorter broker directory (brigPaths().brokers is short by design).' });
    }
    await prepareRunDir(a.dir);
    await fs.promises.rm(socketPath, { force: true });
    const now = this.deps.now();
    const state: RunState = {
      runId: a.runId,
      leaseId: a.leaseId,
      packet: a.packet,
      ...(a.methods ? { surface: new Set(a.methods) } : {}),
      bucket: new TokenBucket(this.limits.capacity, this.limits.refillPerSec, now),
      strikes: new StrikeCounter(this.limits.abuseStrikes, this.limits.abuseWindowMs, now),
      abused: false,
      inflight: 0,
      calls: 0,
      denied: 0,
      rateLimited: 0,
      refusals: new RefusalLog({ type: 'broker.denied', ids: { runId: a.runId, leaseId: a.leaseId }, write: (ev) => safeLedger(this.deps.ledger, ev), windowMs: this.limits.deniedWindowMs, now: this.deps.now }),
      logs: [],
    };
    const sockets = new Set<net.Socket>();
    // allowHalfOpen: a child that ends its writing side still gets every reply, then we end.
    const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: false }, (s) => this.accept(run, s));
    const run: OpenRun = { state, server, sockets, socketPath, closing: undefined };
    server.maxConnections = this.limits.maxConnections;
    // Errors after listen (EMFILE on accept, …) must not become an uncaught exception (listenOn).
    await listenOn(server, socketPath);
    try {
      await grantRunSocket(a.dir, socketPath, this.socketOwner);
    } catch (e) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await fs.promises.rm(socketPath, { force: true });
      throw e;
    }
    this.runs.set(a.runId, run);
    this.deps.ledger.append({ type: 'broker.opened', runId: a.runId, leaseId: a.leaseId });
    return { socketPath, close: () => this.closeRun(a.runId) };
  }

  private accept(run: OpenRun, s: net.Socket): void {
    if (run.state.abused) return void s.destroy();
    run.sockets.add(s);
    const lim = this.limits;
    let chunks: Buffer[] = [];
    let buffered = 0;
    let dead = false;
    let pending = 0;
    let active = 0;
    /** Characters of the lines waiting for a call slot. */
    let waitingBytes = 0;
    const waiting: string[] = [];
    // One per connection; dispatch marks it the moment a bearer verifies, before the handler runs.
    const auth: { authenticated: boolean; onAuthenticated: () => void } = {
      authenticated: false,
      onAuthenticated: () => {
        clearTimeout(authTimer);
        s.setTimeout(0);
      },
    };
    let lineTimer: NodeJS.Timeout | undefined;
    const drop = () => {
      s.destroy();
    };
    const authTimer = setTimeout(() => {
      if (!auth.authenticated) drop();
    }, lim.authTimeoutMs);
    authTimer.unref();
    s.setTimeout(lim.idleMs, drop);
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(authTimer);
      if (lineTimer) clearTimeout(lineTimer);
      run.sockets.delete(s);
      chunks = [];
      waiting.length = 0;
      waitingBytes = 0;
    });
    const send = (line: string) => {
      if (s.destroyed) return;
      if (s.writableLength > lim.maxWriteBuffer) return drop();
      s.write(line + '\n');
    };
    // Set by the `end` handler: close once every call sent has its reply.
    let onIdle: (() => void) | null = null;
    const run1 = (line: string) => {
      active++;
      void dispatchLine(line, run.state, this.deps, auth).then((reply) => {
        send(reply.line);
        active--;
        pending--;
        const next = s.destroyed ? undefined : waiting.shift();
        if (next !== undefined) waitingBytes -= next.length;
        if (waitingBytes <= QUEUE_BYTES / 2 && pending <= QUEUE_LOW && s.isPaused() && !dead) s.resume();
        if (next !== undefined) run1(next);
        else if (pending === 0) onIdle?.();
      });
    };
    const handle = (line: string) => {
      // Up to PER_CONNECTION calls run at once (a long synchronous spawn does not hold back a
      // progress call); replies go out as calls finish, matched by id. Too many queued lines
      // pause reading (backpressure to the child).
      if (++pending >= QUEUE_HIGH) s.pause();
      if (active < PER_CONNECTION) run1(line);
      else {
        waiting.push(line);
        // Queued lines are bounded in bytes too: 512 lines of 64 KiB behind slow calls would hold 32 MiB.
        waitingBytes += line.length;
        if (waitingBytes > QUEUE_BYTES) s.pause();
      }
    };
    // A line over 64 KiB: one error reply, a strike, then the connection is closed. Reading
    // stops at once so the rest of a 10 MB line is never buffered.
    const oversize = () => {
      dead = true;
      chunks = [];
      s.pause();
      const reply = deny(run.state, this.deps, null, 'unknown', 'invalid_input', `line over ${MAX_LINE_BYTES} bytes`, 'Send at most 64 KiB per line; put bulk data in /workspace/out.');
      s.end(JSON.stringify(reply) + '\n');
      setTimeout(drop, 1000).unref();
    };
    s.on('end', () => {
      // The child will send nothing more: answer what it sent (a partial last line is
      // dropped), then close our side.
      if (lineTimer) clearTimeout(lineTimer);
      if (pending === 0) s.end();
      else onIdle = () => s.end();
    });
    s.on('data', (chunk: Buffer) => {
      let start = 0;
      for (;;) {
        // Cut (abuse, a dropped connection): the rest of this chunk is never looked at.
        if (dead || s.destroyed) return;
        const nl = chunk.indexOf(0x0a, start);
        if (nl === -1) break;
        const piece = chunk.subarray(start, nl);
        if (buffered + piece.length > MAX_LINE_BYTES) return oversize();
        const line = buffered === 0 ? piece.toString('utf8') : Buffer.concat([...chunks, piece]).toString('utf8');
        chunks = [];
        buffered = 0;
        if (lineTimer) {
          clearTimeout(lineTimer);
          lineTimer = undefined;
        }
        start = nl + 1;
        // The token before any parsing: a flood costs a token take per line, not a JSON.parse.
        // A blank line is charged too (and answered only when refused): a stream of newlines is
        // a flood like any other, rate-limited and, past the strikes, cut off as abuse.
        const refused = chargeLine(line, run.state, this.deps);
        if (refused !== null) send(refused);
        else if (line.trim().length > 0) handle(line);
      }
      const rest = chunk.subarray(start);
      if (rest.length === 0) return;
      buffered += rest.length;
      if (buffered > MAX_LINE_BYTES) return oversize();
      chunks.push(Buffer.from(rest));
      lineTimer ??= setTimeout(drop, lim.lineTimeoutMs);
    });
  }

  /** The run's recent `log` lines (kept in memory only: they are content, not ledger events). */
  logTail(runId: string): readonly { at: string; level: string; message: string }[] {
    return [...(this.runs.get(runId)?.state.logs ?? [])];
  }

  stats(runId: string): { calls: number; denied: number; connections: number; abused: boolean } | undefined {
    const r = this.runs.get(runId);
    return r && { calls: r.state.calls, denied: r.state.denied, connections: r.sockets.size, abused: r.state.abused };
  }

  async closeRun(runId: string): Promise<void> {
    const run = this.runs.get(runId);
    if (!run) return;
    run.closing ??= (async () => {
      for (const s of run.sockets) s.destroy();
      await new Promise<void>((resolve) => run.server.close(() => resolve()));
      await fs.promises.rm(run.socketPath, { force: true });
      this.runs.delete(runId);
      run.state.refusals.flush();
      try {
        this.deps.ledger.append({ type: 'broker.closed', runId, leaseId: run.state.leaseId, calls: run.state.calls, denied: run.state.denied });
      } catch {
        // Closing must complete even if the ledger cannot be written.
      }
    })();
    return run.closing;
  }

  async close(): Promise<void> {
    await Promise.all([...this.runs.keys()].map((id) => this.closeRun(id)));
  }
}
