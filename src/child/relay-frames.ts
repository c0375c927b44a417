/**
 * The pod relay's wire, shared by both ends: the frame codec and the multiplexer that carries
 * many unix-socket connections over one byte-stream pair (the Kubernetes exec's stdin and
 * stdout). A frame is a 9-byte header — u32 BE connection id, u8 type, u32 BE payload length —
 * then its payload. OPEN (pod → host: a connection accepted on listener N; payload u8 N),
 * DATA (≤ 64 KiB), END (the sender finished writing: a half-close), CLOSE (the connection is
 * gone on the sender's side), ACK (payload u32 BE: bytes the receiver's socket took).
 *
 * Guarantees: the parser takes bytes cut anywhere and holds at most one frame; an unknown
 * type, a payload over its size, a malformed OPEN/ACK/END/CLOSE is refused with a
 * RelayFrameError before its payload is read. Per connection, memory is bounded: a sender has
 * at most WINDOW unacknowledged, a receiver stages at most WINDOW (in slabs, whatever the
 * frames' sizes) and refuses a peer past it; the output's backpressure stops DATA and
 * coalesces ACKs, and past OUTPUT_CAP stops reading the input; one slow connection holds only
 * its own window, never the others'.
 * Threat: the peer (for the host, the pod, which a hostile child may control): frames that lie
 * about sizes, ids, counts, or that never stop. Trusts: nothing from the peer; its own sockets
 * to behave as sockets. Fails closed: any breach ends every connection and rejects `done`.
 *
 * Both sides run this one copy: the pod as /opt/brig/child/relay-frames.js (the jail holds
 * /opt/brig/child only), the host through child/index.ts (jail/ may import child/'s index:
 * test/arch/boundaries.test.ts). Node built-ins only, no imports.
 */
/** The frame types on the wire (the header's u8). */
export const FRAME = { open: 1, data: 2, end: 3, close: 4, ack: 5 } as const;
export type FrameKind = keyof typeof FRAME;
const KIND_OF: readonly (FrameKind | undefined)[] = [undefined, 'open', 'data', 'end', 'close', 'ack'];

/** u32 BE connection id, u8 type, u32 BE payload length. */
export const HEADER_BYTES = 9;
/** The largest DATA payload; a header claiming more is refused before a byte of it is kept. */
export const MAX_DATA = 64 * 1024;
/** The most DATA a sender may have unacknowledged on one connection (both sides hold to it; the receiver enforces it). */
export const WINDOW = 256 * 1024;
/** Past this many bytes queued on the output (control frames only: DATA stops at its high-water mark), the input is not read until it drains. */
export const OUTPUT_CAP = 1024 * 1024;
/** The receiver's staging for DATA that arrives while its socket is still writing: copied into slabs of this size, so a flood of one-byte frames costs bytes, not objects. */
const SLAB = 16 * 1024;

export type Frame =
  | { kind: 'open'; id: number; listener: number }
  | { kind: 'data'; id: number; payload: Buffer }
  | { kind: 'end'; id: number }
  | { kind: 'close'; id: number }
  | { kind: 'ack'; id: number; bytes: number };

/** What was wrong: a frame that does not parse, or a peer that broke the protocol's rules. */
export type RelayFault = 'unknown_type' | 'too_large' | 'bad_open' | 'bad_ack' | 'bad_control' | 'protocol';

export class RelayFrameError extends Error {
  override readonly name = 'RelayFrameError';
  constructor(readonly fault: RelayFault, message: string) {
    super(message);
  }
}

const protocolError = (message: string) => new RelayFrameError('protocol', message);

export function encodeFrame(f: Frame): Buffer {
  const len = f.kind === 'data' ? f.payload.length : f.kind === 'open' ? 1 : f.kind === 'ack' ? 4 : 0;
  if (len > MAX_DATA) throw new RelayFrameError('too_large', `a DATA frame of ${len} bytes is over ${MAX_DATA}`);
  const b = Buffer.allocUnsafe(HEADER_BYTES + len);
  b.writeUInt32BE(f.id, 0);
  b[4] = FRAME[f.kind];
  b.writeUInt32BE(len, 5);
  if (f.kind === 'data') f.payload.copy(b, HEADER_BYTES);
  else if (f.kind === 'open') b.writeUInt8(f.listener, HEADER_BYTES);
  else if (f.kind === 'ack') b.writeUInt32BE(f.bytes, HEADER_BYTES);
  return b;
}

/**
 * Frames from a byte stream cut anywhere. Holds at most one unfinished frame (≤ 9 + 64 KiB).
 * A DATA payload is always its own copy: holding it never holds the chunk it came in. The
 * first bad frame throws a RelayFrameError, and so does every feed after it.
 */
export class FrameParser {
  #head = Buffer.alloc(HEADER_BYTES);
  #headHave = 0;
  #id = 0;
  #kind: FrameKind = 'data';
  /** The current frame's payload length, or -1 between frames. */
  #len = -1;
  #payload: Buffer = Buffer.alloc(0);
  #payloadHave = 0;
  #failed: RelayFrameError | undefined;

  /** Bytes held of an unfinished frame. */
  get buffered(): number {
    return this.#len < 0 ? this.#headHave : HEADER_BYTES + this.#payloadHave;
  }

  feed(chunk: Buffer, onFrame: (f: Frame) => void): void {
    if (this.#failed) throw this.#failed;
    try {
      let at = 0;
      while (at < chunk.length) {
        if (this.#len < 0) {
          const n = Math.min(HEADER_BYTES - this.#headHave, chunk.length - at);
          chunk.copy(this.#head, this.#headHave, at, at + n);
          this.#headHave += n;
          at += n;
          if (this.#headHave < HEADER_BYTES) return;
          this.#headHave = 0;
          this.#header();
        }
        const n = Math.min(this.#len - this.#payloadHave, chunk.length - at);
        chunk.copy(this.#payload, this.#payloadHave, at, at + n);
        this.#payloadHave += n;
        at += n;
        if (this.#payloadHave === this.#len) onFrame(this.#frame());
      }
    } catch (e) {
      if (e instanceof RelayFrameError && e.fault !== 'protocol') this.#failed = e;
      throw e;
    }
  }

  #header(): void {
    const h = this.#head;
    const id = h.readUInt32BE(0);
    const type = h[4]!;
    const len = h.readUInt32BE(5);
    const kind = KIND_OF[type];
    if (kind === undefined) throw new RelayFrameError('unknown_type', `frame type ${type} (connection ${id}) is not one of the relay's`);
    if (kind === 'data' && len > MAX_DATA) throw new RelayFrameError('too_large', `a DATA frame claims ${len} bytes; the most is ${MAX_DATA}`);
    if (kind === 'open' && len !== 1) throw new RelayFrameError('bad_open', `an OPEN frame's payload is 1 byte (the listener), not ${len}`);
    if (kind === 'ack' && len !== 4) throw new RelayFrameError('bad_ack', `an ACK frame's payload is 4 bytes (a count), not ${len}`);
    if ((kind === 'end' || kind === 'close') && len !== 0) throw new RelayFrameError('bad_control', `an ${kind.toUpperCase()} frame has no payload, not ${len} bytes`);
    this.#id = id;
    this.#kind = kind;
    this.#len = len;
    this.#payload = Buffer.allocUnsafe(len);
    this.#payloadHave = 0;
  }

  #frame(): Frame {
    const id = this.#id;
    const p = this.#payload;
    this.#len = -1;
    this.#payload = Buffer.alloc(0);
    switch (this.#kind) {
      case 'open':
        return { kind: 'open', id, listener: p[0]! };
      case 'ack': {
        const bytes = p.readUInt32BE(0);
        if (bytes === 0) throw new RelayFrameError('bad_ack', `an ACK of 0 bytes (connection ${id})`);
        return { kind: 'ack', id, bytes };
      }
      case 'data':
        return { kind: 'data', id, payload: p };
      default:
        return { kind: this.#kind, id };
    }
  }
}

/** What the mux needs of a connection (a net.Socket with allowHalfOpen). */
export interface RelaySocket {
  write(chunk: Buffer, cb: (err?: Error | null) => void): boolean;
  end(): unknown;
  destroy(): unknown;
  pause(): unknown;
  resume(): unknown;
  on(event: string, listener: (...args: any[]) => void): unknown;
}

/** The frames' source (the peer's output). */
export interface RelayInput {
  on(event: string, listener: (...args: any[]) => void): unknown;
  pause(): unknown;
  resume(): unknown;
}

/** Where frames go (the peer's input). */
export interface RelayOutput {
  write(chunk: Buffer): boolean;
  on(event: string, listener: (...args: any[]) => void): unknown;
  once(event: string, listener: (...args: any[]) => void): unknown;
  readonly writableLength: number;
}

export interface RelayMuxOptions {
  input: RelayInput;
  output: RelayOutput;
  /** An OPEN from the peer: attach(), refuse(), or throw a RelayFrameError (which ends the mux). */
  onOpen(id: number, listener: number): void;
}

/** One connection's state: what its socket sent that the peer has not acknowledged, and what the peer sent that its socket has not taken. */
class Link {
  gone = false;
  localClosed = false;
  // socket → peer
  held: Buffer[] = [];
  heldBytes = 0;
  inFlight = 0;
  readEnded = false;
  endSent = false;
  closeAfterFlush = false;
  // peer → socket
  recvUnacked = 0;
  ackOwed = 0;
  writing = false;
  staged: Buffer[] = [];
  slabFree = 0;
  endReceived = false;
  destroyAfterFlush = false;

  constructor(readonly id: number, readonly socket: RelaySocket) {}
}

/**
 * Many connections over one byte-stream pair. Per connection a sender has at most WINDOW of
 * DATA unacknowledged (it stops reading its socket meanwhile); a receiver acknowledges what
 * its socket has taken, and refuses a peer that sends past the window; while the output is
 * over its high-water mark no DATA is written and ACKs are summed, and the connections that
 * waited are served in turn when it drains. END is a half-close (sent after the last DATA);
 * CLOSE ends the connection: the receiver delivers what it already has, then destroys its
 * socket. A frame for a connection the receiver no longer has is ignored (the two sides'
 * closes cross). Any other breach of the protocol ends the mux: `done` rejects.
 */
export class RelayMux {
  readonly done: Promise<void>;
  #o: RelayMuxOptions;
  #parser = new FrameParser();
  #links = new Map<number, Link>();
  /** Every socket not yet closed, also those still flushing after their link is gone. */
  #sockets = new Set<RelaySocket>();
  /** Sockets not yet closed whose link is gone (the peer's CLOSE came; they deliver what they have). */
  #lingering = new Set<RelaySocket>();
  /** Links with DATA to send that stopped on the output's backpressure, in the order they stopped. */
  #waiting = new Set<Link>();
  /** Links whose ACK waits for the output to drain. */
  #owing = new Set<Link>();
  #blocked = false;
  #inputPaused = false;
  #ended = false;
  #feeding = false;
  #queued: Buffer[] = [];
  #settle!: (e?: unknown) => void;

  constructor(o: RelayMuxOptions) {
    this.#o = o;
    this.done = new Promise((resolve, reject) => (this.#settle = (e) => (e === undefined ? resolve() : reject(e))));
    this.done.catch(() => undefined);
    o.input.on('data', (chunk: Buffer) => this.#onInput(chunk));
    o.input.on('end', () => this.shutdown());
    o.input.on('error', (e: unknown) => this.shutdown(e ?? new Error('the relay input failed')));
    o.output.on('error', (e: unknown) => this.shutdown(e ?? new Error('the relay output failed')));
  }

  /** Connections that hold anything: open links (also those whose socket closed, with bytes still to send) and sockets still delivering after their link is gone. */
  get size(): number {
    return this.#links.size + this.#lingering.size;
  }

  get ended(): boolean {
    return this.#ended;
  }

  has(id: number): boolean {
    return this.#links.has(id);
  }

  /** Carries a connection as `id`; with `listener`, announces it to the peer (OPEN) first. */
  attach(id: number, socket: RelaySocket, listener?: number): void {
    if (this.#ended) {
      socket.on('error', () => undefined);
      socket.destroy();
      return;
    }
    if (this.#links.has(id)) throw protocolError(`OPEN for connection ${id}, which is open`);
    const l = new Link(id, socket);
    this.#links.set(id, l);
    this.#sockets.add(socket);
    socket.on('data', (chunk: Buffer) => {
      if (l.gone) return;
      l.held.push(chunk);
      l.heldBytes += chunk.length;
      this.#pump(l);
    });
    socket.on('end', () => {
      l.readEnded = true;
      this.#pump(l);
    });
    socket.on('error', () => undefined); // 'close' follows, with hadError
    socket.on('close', (hadError: boolean) => {
      this.#sockets.delete(socket);
      this.#lingering.delete(socket);
      l.localClosed = true;
      if (l.gone) return;
      // A socket that ended cleanly still has its last bytes (and END) to send; one that broke has nothing worth sending.
      if (l.readEnded && !hadError) {
        l.closeAfterFlush = true;
        this.#pump(l);
      } else this.#drop(l, true);
    });
    if (listener !== undefined) this.#write(encodeFrame({ kind: 'open', id, listener }));
  }

  /** Answers an OPEN with CLOSE, connecting nothing. */
  refuse(id: number): void {
    this.#write(encodeFrame({ kind: 'close', id }));
  }

  /** Ends every connection; `done` settles (rejects with `error`, when given). Nothing is written after. */
  shutdown(error?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    this.#lingering.clear();
    for (const l of this.#links.values()) l.gone = true;
    this.#links.clear();
    this.#waiting.clear();
    this.#owing.clear();
    // Keep draining the input (into nothing): an unread source would hold its producer open.
    this.#o.input.resume();
    this.#settle(error);
  }

  #onInput(chunk: Buffer): void {
    if (this.#ended) return;
    // A frame's handler may write, and a peer in the same process may answer at once: what
    // arrives meanwhile waits for this chunk's last frame, so frames are handled in order.
    if (this.#feeding) {
      this.#queued.push(chunk);
      return;
    }
    this.#feeding = true;
    try {
      for (let c: Buffer | undefined = chunk; c !== undefined && !this.#ended; c = this.#queued.shift()) this.#parser.feed(c, (f) => this.#dispatch(f));
    } catch (e) {
      this.shutdown(e);
    } finally {
      this.#feeding = false;
      this.#queued = [];
    }
  }

  #dispatch(f: Frame): void {
    if (this.#ended) return;
    if (f.kind === 'open') return this.#o.onOpen(f.id, f.listener);
    const l = this.#links.get(f.id);
    if (!l) return; // a connection this side already closed: the peer's frame crossed our CLOSE
    switch (f.kind) {
      case 'data':
        return this.#receive(l, f.payload);
      case 'end':
        if (l.endReceived) throw protocolError(`a second END on connection ${l.id}`);
        l.endReceived = true;
        if (!l.writing) l.socket.end();
        return;
      case 'close':
        this.#drop(l, false);
        if (l.writing) l.destroyAfterFlush = true;
        else l.socket.destroy();
        return;
      case 'ack':
        if (f.bytes > l.inFlight) throw protocolError(`an ACK of ${f.bytes} bytes on connection ${l.id}, which has ${l.inFlight} unacknowledged`);
        l.inFlight -= f.bytes;
        return this.#pump(l);
    }
  }

  #receive(l: Link, payload: Buffer): void {
    if (l.endReceived) throw protocolError(`DATA after END on connection ${l.id}`);
    l.recvUnacked += payload.length;
    if (l.recvUnacked > WINDOW) throw protocolError(`connection ${l.id} was sent ${l.recvUnacked} bytes unacknowledged; the window is ${WINDOW}`);
    if (l.localClosed) return this.#owe(l, payload.length); // nobody to deliver to: taken, and dropped
    if (l.writing) this.#stage(l, payload);
    else this.#deliver(l, payload);
  }

  /** One socket write at a time per connection: what comes meanwhile is staged, then written as one. */
  #deliver(l: Link, buf: Buffer): void {
    l.writing = true;
    l.socket.write(buf, () => {
      l.writing = false;
      if (l.staged.length > 0) {
        const last = l.staged.length - 1;
        l.staged[last] = l.staged[last]!.subarray(0, SLAB - l.slabFree);
        const next = l.staged.length === 1 ? l.staged[0]! : Buffer.concat(l.staged);
        l.staged = [];
        l.slabFree = 0;
        this.#deliver(l, next);
      } else if (l.destroyAfterFlush) l.socket.destroy();
      else if (l.endReceived) l.socket.end();
      // Last: the ACK may bring more DATA at once, which must find the staged bytes already written.
      this.#owe(l, buf.length);
    });
  }

  #stage(l: Link, p: Buffer): void {
    let at = 0;
    while (at < p.length) {
      if (l.slabFree === 0) {
        l.staged.push(Buffer.allocUnsafeSlow(SLAB));
        l.slabFree = SLAB;
      }
      const n = p.copy(l.staged[l.staged.length - 1]!, SLAB - l.slabFree, at);
      l.slabFree -= n;
      at += n;
    }
  }

  #owe(l: Link, n: number): void {
    if (l.gone) return;
    l.ackOwed += n;
    if (this.#blocked) this.#owing.add(l);
    else this.#ack(l);
  }

  #ack(l: Link): void {
    if (l.gone || l.ackOwed === 0) return;
    const bytes = l.ackOwed;
    l.ackOwed = 0;
    l.recvUnacked -= bytes;
    this.#write(encodeFrame({ kind: 'ack', id: l.id, bytes }));
  }

  /** Sends what the window and the output allow; then reads on, pauses, or finishes the half-close. */
  #pump(l: Link): void {
    if (l.gone || this.#ended) return;
    while (l.heldBytes > 0 && l.inFlight < WINDOW) {
      if (this.#blocked) {
        this.#waiting.delete(l);
        this.#waiting.add(l);
        break;
      }
      const head = l.held[0]!;
      const n = Math.min(head.length, MAX_DATA, WINDOW - l.inFlight);
      if (n === head.length) l.held.shift();
      else l.held[0] = head.subarray(n);
      l.heldBytes -= n;
      l.inFlight += n;
      this.#write(encodeFrame({ kind: 'data', id: l.id, payload: head.subarray(0, n) }));
    }
    if (l.gone) return; // closed by the peer while writing
    if (l.heldBytes > 0) {
      l.socket.pause();
      return;
    }
    if (!l.readEnded) {
      l.socket.resume();
      return;
    }
    if (!l.endSent) {
      l.endSent = true;
      this.#write(encodeFrame({ kind: 'end', id: l.id }));
    }
    if (l.closeAfterFlush) this.#drop(l, true);
  }

  #drop(l: Link, sendClose: boolean): void {
    if (l.gone) return;
    l.gone = true;
    l.held = [];
    l.heldBytes = 0;
    this.#links.delete(l.id);
    this.#waiting.delete(l);
    this.#owing.delete(l);
    if (!l.localClosed) this.#lingering.add(l.socket);
    if (sendClose) this.#write(encodeFrame({ kind: 'close', id: l.id }));
  }

  #write(frame: Buffer): void {
    if (this.#ended) return;
    const out = this.#o.output;
    if (!out.write(frame) && !this.#blocked) {
      this.#blocked = true;
      out.once('drain', () => this.#onDrain());
    }
    if (!this.#inputPaused && out.writableLength > OUTPUT_CAP) {
      this.#inputPaused = true;
      this.#o.input.pause();
    }
  }

  #onDrain(): void {
    if (this.#ended) return;
    this.#blocked = false;
    if (this.#inputPaused) {
      this.#inputPaused = false;
      this.#o.input.resume();
    }
    const owing = [...this.#owing];
    this.#owing.clear();
    for (const l of owing) this.#ack(l);
    // In turn: a link that blocks the output again goes to the back; the rest keep their places.
    for (const l of this.#waiting) {
      if (this.#blocked) break;
      this.#waiting.delete(l);
      this.#pump(l);
    }
  }
}
