/**
 * The Kubernetes broker relay (src/child/pod-relay.ts ⇄ src/jail/k8s/host-relay.ts over the
 * frames of relay-frames.ts), with no cluster: the two ends wired back to back through two
 * PassThrough streams (standing in for the exec's stdout and stdin), real unix-socket servers
 * on the "host" paths and real clients on the "pod" paths. Then the host end alone, fed hostile
 * frames by hand.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { podRelay, type PodRelay } from '../../../src/child/pod-relay.js';
import { hostRelay, type HostRelay } from '../../../src/jail/k8s/host-relay.js';
import { RELAY_ARGV, relayTargets } from '../../../src/jail/k8s/k8s-jail-driver.js';
import { encodeFrame, FrameParser, HEADER_BYTES, MAX_DATA, OUTPUT_CAP, RelayFrameError, WINDOW, type Frame } from '../../../src/child/relay-frames.js';
import { isBrigError } from '../../../src/util/errors.js';


/** A raw frame header (a frame's 9 bytes, whatever they claim). */
const header = (id: number, type: number, len: number) => {
  const h = Buffer.alloc(HEADER_BYTES);
  h.writeUInt32BE(id, 0);
  h[4] = type;
  h.writeUInt32BE(len, 5);
  return h;
};

function tmpdir(t: TestContext): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-relay-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

/** A unix-socket server on the host side, closed (with its connections) after the test. */
async function serve(t: TestContext, at: string, onConn: (s: net.Socket) => void): Promise<{ server: net.Server; conns: Set<net.Socket> }> {
  const conns = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    conns.add(s);
    s.on('close', () => conns.delete(s));
    s.on('error', () => undefined);
    onConn(s);
  });
  await new Promise<void>((r) => server.listen(at, r));
  t.after(() => {
    for (const s of conns) s.destroy();
    server.close();
  });
  return { server, conns };
}

/** Echoes every byte, and ends when its client ends. */
const echo = (s: net.Socket) => s.pipe(s);

/**
 * One direction of the exec: the sender writes `in`, the receiver reads `out`, and each chunk
 * crosses on a later turn of the event loop (as over the WebSocket), so a sender that outruns
 * it meets `in`'s backpressure. Records the most bytes `in` ever held, right after a write.
 */
function meteredPipe(): { in: PassThrough; out: PassThrough; max: () => number } {
  const into = new PassThrough();
  const out = new PassThrough();
  into.on('data', (c: Buffer) => {
    into.pause();
    setImmediate(() => {
      out.write(c);
      into.resume();
    });
  });
  into.on('end', () => setImmediate(() => out.end()));
  let max = 0;
  const write = into.write.bind(into) as (chunk: Buffer) => boolean;
  (into as unknown as { write: (chunk: Buffer) => boolean }).write = (chunk: Buffer) => {
    const ok = write(chunk);
    max = Math.max(max, into.writableLength + into.readableLength);
    return ok;
  };
  return { in: into, out, max: () => max };
}

interface Wired {
  pod: PodRelay;
  host: HostRelay;
  /** The pod's paths, one per host socket. */
  paths: string[];
  /** The most bytes either pipe held. */
  maxBuffered: () => number;
}

/** pod.output → host.input and host.output → pod.input; listener i of the pod goes to hostSockets[i]. */
async function wire(t: TestContext, dir: string, hostSockets: string[]): Promise<Wired> {
  const up = meteredPipe(); // the exec's stdout: pod → host
  const down = meteredPipe(); // the exec's stdin: host → pod
  const host = hostRelay({ input: up.out, output: down.in, sockets: hostSockets });
  const paths = hostSockets.map((_, i) => path.join(dir, `pod-${i}.sock`));
  const pod = await podRelay({ input: down.out, output: up.in, listen: paths });
  t.after(() => {
    pod.close();
    host.close();
  });
  return { pod, host, paths, maxBuffered: () => Math.max(up.max(), down.max()) };
}

function connect(p: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const c = net.connect({ path: p });
    c.once('connect', () => {
      c.off('error', reject);
      resolve(c);
    });
    c.once('error', reject);
  });
}

/** Everything a socket reads until its end. */
function readAll(s: net.Socket): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.once('end', () => resolve(Buffer.concat(chunks)));
    s.once('error', reject);
  });
}

function readBytes(s: net.Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let have = 0;
    const onData = (c: Buffer) => {
      chunks.push(c);
      have += c.length;
      if (have >= n) {
        s.off('data', onData);
        resolve(Buffer.concat(chunks));
      }
    };
    s.on('data', onData);
    s.once('error', reject);
    s.once('end', () => have < n && reject(new Error(`ended after ${have} of ${n} bytes`)));
  });
}

const closed = (s: net.Socket) => new Promise<void>((r) => (s.destroyed && s.closed ? r() : s.once('close', () => r())));

// ── the codec ───────────────────────────────────────────────────────────────────────────────

test('frames round-trip through the parser whatever the chunk boundaries', () => {
  const frames: Frame[] = [
    { kind: 'open', id: 7, listener: 1 },
    { kind: 'data', id: 7, payload: randomBytes(MAX_DATA) },
    { kind: 'data', id: 0xffffffff, payload: Buffer.from('x') },
    { kind: 'end', id: 7 },
    { kind: 'ack', id: 7, bytes: 12345 },
    { kind: 'close', id: 7 },
  ];
  const wire = Buffer.concat(frames.map(encodeFrame));
  assert.equal(wire.length, frames.length * HEADER_BYTES + 1 + MAX_DATA + 1 + 4);
  for (const size of [1, 2, 8, 9, 10, 4096, 65545, wire.length]) {
    const p = new FrameParser();
    const got: Frame[] = [];
    for (let i = 0; i < wire.length; i += size) p.feed(wire.subarray(i, i + size), (f) => got.push(f));
    assert.deepEqual(got, frames, `cut every ${size} bytes`);
    assert.equal(p.buffered, 0);
  }
  // A payload is its own copy, never a view of the chunk it came in.
  const p = new FrameParser();
  const chunk = encodeFrame({ kind: 'data', id: 1, payload: Buffer.from('abc') });
  const got: Frame[] = [];
  p.feed(chunk, (f) => got.push(f));
  chunk.fill(0);
  assert.deepEqual(got, [{ kind: 'data', id: 1, payload: Buffer.from('abc') }]);
});

test('the parser refuses an unknown type, an oversized payload and malformed OPEN/ACK/END/CLOSE, at the header', () => {
  const cases: [Buffer, string][] = [
    [header(1, 0, 0), 'unknown_type'],
    [header(1, 6, 0), 'unknown_type'],
    [header(1, 2, MAX_DATA + 1), 'too_large'],
    [header(1, 2, 2 ** 31), 'too_large'],
    [header(1, 1, 0), 'bad_open'],
    [header(1, 1, 2), 'bad_open'],
    [header(1, 5, 3), 'bad_ack'],
    [Buffer.concat([header(1, 5, 4), Buffer.alloc(4)]), 'bad_ack'],
    [header(1, 3, 1), 'bad_control'],
    [header(1, 4, 8), 'bad_control'],
  ];
  for (const [bytes, fault] of cases) {
    const p = new FrameParser();
    assert.throws(() => p.feed(bytes, () => assert.fail('no frame')), (e: unknown) => e instanceof RelayFrameError && e.fault === fault, fault);
    // Once refused, always refused: the stream has lost its framing.
    assert.throws(() => p.feed(encodeFrame({ kind: 'end', id: 1 }), () => assert.fail('no frame')), RelayFrameError);
  }
  assert.throws(() => encodeFrame({ kind: 'data', id: 1, payload: Buffer.alloc(MAX_DATA + 1) }), RelayFrameError);
});

// ── both ends, back to back ─────────────────────────────────────────────────────────────────

test('a request/response round trip reaches the host socket and back', async (t) => {
  const dir = tmpdir(t);
  const hostSock = path.join(dir, 'broker.sock');
  await serve(t, hostSock, (s) => s.once('data', (b: Buffer) => s.write(`re: ${b.toString()}`)));
  const w = await wire(t, dir, [hostSock]);
  assert.equal(fs.statSync(w.paths[0]!).mode & 0o777, 0o600, "the pod's socket is its uid's only");
  const c = await connect(w.paths[0]!);
  c.write('hello');
  assert.equal((await readBytes(c, 9)).toString(), 're: hello');
  c.destroy();
});

test('20 concurrent connections each get exactly their own bytes back', async (t) => {
  const dir = tmpdir(t);
  const hostSock = path.join(dir, 'echo.sock');
  await serve(t, hostSock, echo);
  const w = await wire(t, dir, [hostSock]);
  const sent = Array.from({ length: 20 }, (_, i) => Buffer.concat([Buffer.from(`conn ${i}:`), randomBytes(40_000 + i * 1000)]));
  const got = await Promise.all(
    sent.map(async (data) => {
      const c = await connect(w.paths[0]!);
      const all = readAll(c);
      // In pieces, so that the connections' frames interleave.
      for (let i = 0; i < data.length; i += 7000) c.write(data.subarray(i, i + 7000));
      c.end();
      const back = await all;
      c.destroy();
      return back;
    }),
  );
  for (const [i, b] of got.entries()) assert.ok(b.equals(sent[i]!), `connection ${i}: ${b.length} bytes back of ${sent[i]!.length}`);
});

test('32 MiB on one connection arrive byte-exact while an echo on another completes, with the pipes bounded', async (t) => {
  const dir = tmpdir(t);
  const sinkSock = path.join(dir, 'sink.sock');
  const echoSock = path.join(dir, 'echo.sock');
  const TOTAL = 32 * 1024 * 1024;
  let sunk = 0;
  let sunkAtEcho = -1;
  let echoStarted!: () => void;
  const started = new Promise<void>((r) => (echoStarted = r));
  await serve(t, sinkSock, (s) => {
    const h = createHash('sha256');
    s.on('data', (b: Buffer) => {
      h.update(b);
      sunk += b.length;
      if (sunk >= 4 * 1024 * 1024) echoStarted();
    });
    s.on('end', () => s.end(h.digest('hex')));
  });
  await serve(t, echoSock, echo);
  const w = await wire(t, dir, [sinkSock, echoSock]);

  const block = randomBytes(1024 * 1024);
  const want = createHash('sha256');
  const big = await connect(w.paths[0]!);
  const reply = readAll(big);
  const t0 = process.hrtime.bigint();
  const pump = (async () => {
    for (let i = 0; i < 32; i++) {
      const piece = Buffer.from(block);
      piece.writeUInt32BE(i, 0); // every MiB differs
      want.update(piece);
      if (!big.write(piece)) await new Promise((r) => big.once('drain', r));
    }
    big.end();
  })();

  await started;
  const small = await connect(w.paths[1]!);
  small.write('still there?');
  assert.equal((await readBytes(small, 12)).toString(), 'still there?');
  sunkAtEcho = sunk;
  small.end();
  small.destroy();

  await pump;
  const digest = (await reply).toString();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  big.destroy();
  assert.equal(sunk, TOTAL);
  assert.equal(digest, want.digest('hex'), 'the sink hashed exactly what was sent');
  assert.ok(sunkAtEcho < TOTAL, `the echo completed while the transfer ran (at ${sunkAtEcho} of ${TOTAL} bytes), not after it`);
  // DATA stops at a pipe's high-water mark (16 KiB; a PassThrough holds a frame on each of its
  // two sides past it): what a pipe holds is a few frames, whatever the transfer's size.
  const max = w.maxBuffered();
  assert.ok(max <= 4 * (MAX_DATA + HEADER_BYTES), `a pipe held ${max} bytes`);
  t.diagnostic(`32 MiB in ${ms.toFixed(0)} ms (${((TOTAL / 1024 / 1024) / (ms / 1000)).toFixed(0)} MiB/s); the echo came back at ${(sunkAtEcho / 1024 / 1024).toFixed(1)} MiB; the most a pipe held: ${max} bytes`);
});

test('half-close: a client that ends its writing still gets the reply', async (t) => {
  const dir = tmpdir(t);
  const hostSock = path.join(dir, 'broker.sock');
  await serve(t, hostSock, (s) => {
    const chunks: Buffer[] = [];
    s.on('data', (b: Buffer) => chunks.push(b));
    // The reply comes only after the client's end, and a little later.
    s.on('end', () => setTimeout(() => s.end(`${Buffer.concat(chunks).length} bytes, then your end`), 20));
  });
  const w = await wire(t, dir, [hostSock]);
  const c = await connect(w.paths[0]!);
  const all = readAll(c);
  c.end('question');
  assert.equal((await all).toString(), '8 bytes, then your end');
  await closed(c);
});

test('a host server that closes the connection closes the pod client, after its last bytes', async (t) => {
  const dir = tmpdir(t);
  const hostSock = path.join(dir, 'broker.sock');
  await serve(t, hostSock, (s) => s.write('bye', () => s.destroy()));
  const w = await wire(t, dir, [hostSock]);
  const c = await connect(w.paths[0]!);
  c.on('error', () => undefined);
  const chunks: Buffer[] = [];
  c.on('data', (b: Buffer) => chunks.push(b));
  await closed(c);
  assert.equal(Buffer.concat(chunks).toString(), 'bye');
  // And one that cannot be reached at all: the client is closed, the relay goes on.
  const w2 = await wire(t, dir, [path.join(dir, 'nobody.sock')]);
  const c2 = await connect(w2.paths[0]!);
  c2.on('error', () => undefined);
  await closed(c2);
});

test("the pod relay ends with its input: clients closed, listeners closed, paths removed", async (t) => {
  const dir = tmpdir(t);
  const hostSock = path.join(dir, 'echo.sock');
  await serve(t, hostSock, echo);
  const w = await wire(t, dir, [hostSock]);
  const c = await connect(w.paths[0]!);
  c.on('error', () => undefined);
  c.write('x');
  await readBytes(c, 1);
  // brig goes away: its end closes, which ends the pod's stdin.
  w.host.close();
  await w.host.done;
  await w.pod.done;
  await closed(c);
  assert.equal(fs.existsSync(w.paths[0]!), false, 'the socket path is removed');
  await assert.rejects(connect(w.paths[0]!), /ENOENT|ECONNREFUSED/);
});

test('the pod relay replaces a stale socket, refuses a path that is not one, and closes connections past its cap', async (t) => {
  const dir = tmpdir(t);
  // A socket file with nobody listening, as a relay that was killed leaves it.
  const stale = path.join(dir, 'stale.sock');
  const old = net.createServer().listen(`${stale}.bound`);
  await new Promise((r) => old.once('listening', r));
  fs.renameSync(`${stale}.bound`, stale); // what libuv unlinks on close is the bound name
  await new Promise((r) => old.close(r));
  await assert.rejects(connect(stale), /ECONNREFUSED/);
  const hostSock = path.join(dir, 'echo.sock');
  await serve(t, hostSock, echo);
  const up = new PassThrough();
  const down = new PassThrough();
  const host = hostRelay({ input: up, output: down, sockets: [hostSock] });
  const pod = await podRelay({ input: down, output: up, listen: [stale], maxConnections: 1 });
  t.after(() => {
    pod.close();
    host.close();
  });
  const a = await connect(stale);
  a.write('a');
  assert.equal((await readBytes(a, 1)).toString(), 'a');
  const b = await connect(stale);
  b.on('error', () => undefined);
  await closed(b); // past the cap: closed on accept
  a.destroy();

  const file = path.join(dir, 'file');
  fs.writeFileSync(file, 'not a socket');
  await assert.rejects(podRelay({ input: new PassThrough(), output: new PassThrough(), listen: [file] }), /not a socket/);
  assert.equal(fs.readFileSync(file, 'utf8'), 'not a socket');
});

// ── the host end, fed hostile frames ────────────────────────────────────────────────────────

interface Hostile {
  relay: HostRelay;
  /** Writes frames (or raw bytes) as the pod. */
  send: (...frames: (Frame | Buffer)[]) => void;
  /** Every frame brig sent back. */
  frames: Frame[];
  /** Connections the host socket accepted. */
  accepted: () => number;
  server: { conns: Set<net.Socket> };
  input: PassThrough;
  output: PassThrough;
}

async function hostile(t: TestContext, o: { maxConnections?: number; onConn?: (s: net.Socket) => void } = {}): Promise<Hostile> {
  const dir = tmpdir(t);
  const hostSock = path.join(dir, 'broker.sock');
  let accepted = 0;
  const server = await serve(t, hostSock, (s) => {
    accepted++;
    o.onConn?.(s);
  });
  const input = new PassThrough();
  const output = new PassThrough();
  const frames: Frame[] = [];
  const parser = new FrameParser();
  output.on('data', (c: Buffer) => parser.feed(c, (f) => frames.push(f)));
  const relay = hostRelay({ input, output, sockets: [hostSock], ...(o.maxConnections ? { maxConnections: o.maxConnections } : {}) });
  t.after(() => relay.close());
  const send = (...parts: (Frame | Buffer)[]) => input.write(Buffer.concat(parts.map((f) => (Buffer.isBuffer(f) ? f : encodeFrame(f)))));
  return { relay, send, frames, accepted: () => accepted, server, input, output };
}

async function until(what: string, cond: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

test('hostile: an OPEN with a listener brig did not give is answered CLOSE, connecting nothing', async (t) => {
  const h = await hostile(t);
  h.send({ kind: 'open', id: 5, listener: 9 }, { kind: 'data', id: 5, payload: Buffer.from('let me in') });
  await until('the CLOSE', () => h.frames.length > 0);
  assert.deepEqual(h.frames, [{ kind: 'close', id: 5 }]);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(h.accepted(), 0);
});

test('hostile: 100 OPENs past the cap are each answered CLOSE; the first 64 connect', async (t) => {
  const h = await hostile(t);
  h.send(...Array.from({ length: 164 }, (_, i): Frame => ({ kind: 'open', id: 1000 + i, listener: 0 })));
  await until('100 CLOSEs and 64 connections', () => h.frames.length >= 100 && h.accepted() >= 64);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(h.accepted(), 64, 'the default cap is 64 live connections');
  assert.deepEqual(h.frames.map((f) => f.kind), Array(100).fill('close'));
  assert.deepEqual(h.frames.map((f) => f.id), Array.from({ length: 100 }, (_, i) => 1064 + i));
});

test('hostile: frames for ids never opened are ignored, and the relay carries on', async (t) => {
  let got = '';
  const h = await hostile(t, { onConn: (s) => s.on('data', (b: Buffer) => (got += b.toString())) });
  h.send({ kind: 'data', id: 77, payload: Buffer.from('nobody') }, { kind: 'end', id: 77 }, { kind: 'ack', id: 77, bytes: 5 }, { kind: 'close', id: 77 });
  h.send({ kind: 'open', id: 1, listener: 0 }, { kind: 'data', id: 1, payload: Buffer.from('real') });
  await until('the real bytes', () => got === 'real');
  assert.equal(h.accepted(), 1);
  assert.deepEqual(h.frames, [{ kind: 'ack', id: 1, bytes: 4 }], 'only the real DATA is acknowledged');
});

for (const [name, bytes, fault] of [
  ['a header claiming 2^31 bytes', header(1, 2, 2 ** 31), 'too_large'],
  ['an unknown frame type', header(1, 9, 0), 'unknown_type'],
  ['an OPEN with a 4-byte payload', Buffer.concat([header(2, 1, 4), Buffer.alloc(4)]), 'bad_open'],
  ['an OPEN for an id that is open', encodeFrame({ kind: 'open', id: 1, listener: 0 }), 'protocol'],
  ['an ACK of bytes never sent', encodeFrame({ kind: 'ack', id: 1, bytes: 1 }), 'protocol'],
  ['DATA past the window', Buffer.concat(Array.from({ length: WINDOW / MAX_DATA + 1 }, () => encodeFrame({ kind: 'data', id: 1, payload: Buffer.alloc(MAX_DATA) }))), 'protocol'],
  ['DATA after END', Buffer.concat([encodeFrame({ kind: 'end', id: 1 }), encodeFrame({ kind: 'data', id: 1, payload: Buffer.from('x') })]), 'protocol'],
] as const) {
  test(`hostile: ${name} ends the whole relay with a BrigError, closing its connections`, async (t) => {
    // (DATA past the window comes in one chunk: no socket write can complete, and ACK, in between.)
    const h = await hostile(t, { onConn: (s) => s.resume().on('end', () => s.destroy()) });
    h.send({ kind: 'open', id: 1, listener: 0 });
    await until('the first connection', () => h.accepted() === 1);
    h.send(bytes);
    await assert.rejects(h.relay.done, (e: unknown) => isBrigError(e) && e.code === 'jail_failed' && e.data.fault === fault && /broke its protocol/.test(e.message));
    await until('the host side closed', () => h.server.conns.size === 0);
    assert.ok(h.output.writableEnded, "the pod's input is ended");
    h.send({ kind: 'open', id: 3, listener: 0 }); // after the end: nothing connects
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(h.accepted(), 1);
  });
}

test('hostile: a pod that never reads its input cannot grow what brig queues for it', async (t) => {
  // The host socket sends 8 MiB at once; nothing reads the pod's input. brig stops at the window.
  const h = await hostile(t, { onConn: (s) => s.write(Buffer.alloc(8 * 1024 * 1024)) });
  h.output.pause();
  h.output.removeAllListeners('data');
  h.send({ kind: 'open', id: 1, listener: 0 });
  await until('the first connection', () => h.accepted() === 1);
  await new Promise((r) => setTimeout(r, 50));
  const queued = h.output.writableLength + h.output.readableLength;
  assert.ok(queued <= WINDOW + (WINDOW / MAX_DATA) * HEADER_BYTES, `brig queued ${queued} bytes for a pod that reads nothing`);
  // A flood of refused OPENs (each answered CLOSE), in 64 KiB messages as the exec brings them:
  // past OUTPUT_CAP queued, brig stops reading the pod until the pod reads.
  const flood = Buffer.concat(Array.from({ length: 200_000 }, (_, i) => encodeFrame({ kind: 'open', id: 10 + i, listener: 7 })));
  for (let i = 0; i < flood.length; i += 64 * 1024) h.send(flood.subarray(i, i + 64 * 1024));
  await new Promise((r) => setTimeout(r, 50));
  const after = h.output.writableLength + h.output.readableLength;
  assert.ok(after <= queued + OUTPUT_CAP + 64 * 1024, `brig queued ${after} bytes`);
  assert.ok(h.input.writableLength + h.input.readableLength > 0, "brig stopped reading the pod's output");
  t.diagnostic(`queued for a pod that reads nothing: ${queued} bytes with 8 MiB waiting on the host socket; ${after} after 200,000 refused OPENs`);
});

test("the pod relay refuses an OPEN from brig's side: only the pod opens", async (t) => {
  const dir = tmpdir(t);
  const input = new PassThrough();
  const pod = await podRelay({ input, output: new PassThrough(), listen: [path.join(dir, 'x.sock')] });
  t.after(() => pod.close());
  input.write(encodeFrame({ kind: 'open', id: 1, listener: 0 }));
  await assert.rejects(pod.done, (e: unknown) => e instanceof RelayFrameError && e.fault === 'protocol');
  assert.equal(fs.existsSync(path.join(dir, 'x.sock')), false);
});

test("the driver's two sockets: egress.sock is made before broker.sock, each reaches its own host socket, and a run without a host egress.sock gets its connection closed, the broker's untouched", async (t) => {
  const dir = tmpdir(t);
  assert.deepEqual(RELAY_ARGV.slice(2), ['/run/brig/egress.sock', '/run/brig/broker.sock'], 'the child waits for broker.sock: egress.sock is there by then');
  const [egressSock, brokerSock] = relayTargets(dir);
  assert.deepEqual([egressSock, brokerSock], [path.join(dir, 'egress.sock'), path.join(dir, 'broker.sock')]);
  await serve(t, brokerSock!, (s) => s.once('data', (b: Buffer) => s.write(`broker: ${b.toString()}`)));
  // No gate for this run: nothing listens at the host's egress.sock.
  const w = await wire(t, dir, relayTargets(dir));
  const e = await connect(w.paths[0]!);
  e.on('error', () => undefined);
  e.write('CONNECT anywhere:443 HTTP/1.1\r\n\r\n');
  assert.equal((await readAll(e)).length, 0, 'closed with nothing read');
  const b = await connect(w.paths[1]!);
  b.write('hi');
  assert.equal((await readBytes(b, 10)).toString(), 'broker: hi');
  b.destroy();
  await serve(t, egressSock!, (s) => s.once('data', () => s.end('gate')));
  const e2 = await connect(w.paths[0]!);
  e2.write('x');
  assert.equal((await readAll(e2)).toString(), 'gate', 'once the gate has a socket, the same listener reaches it');
});
