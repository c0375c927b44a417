/**
 * Exec into a pod's container over the Kubernetes API's WebSocket exec protocol, with no
 * kubectl and no client library: how the Kubernetes jail streams a pod's outputs out
 * (`tar -c`), signals its program (`kill -TERM 1`) and relays a byte stream over stdin/stdout.
 *
 * The wire (`v5.channel.k8s.io`, or `v4.channel.k8s.io` when there is no stdin): every binary
 * message starts with its channel — 0 stdin, 1 stdout, 2 stderr, 3 the exec's end (a
 * metav1.Status), 4 resize; v5 adds the close signal `[255, channel]`, which half-closes stdin.
 *
 * Guarantees: TLS to the kubeconfig's server verifies against its CA, always; stdout is a
 * Readable with backpressure — while its reader lags the socket is paused, so the host holds at
 * most the reader's high-water mark plus one socket read, whatever the output's size; stderr is
 * kept as a bounded tail; the exit code comes only from channel 3's Status, so a connection that
 * ends without one is a failure, never exit 0; stdin is closed with v5's close signal when its
 * source ends (a server that picked v4 cannot, and is refused when stdin is given); after the
 * end or close() no socket or timer is left to keep the process alive.
 * Threat: the output of a container brig does not trust — its size (bounded, or paced by the
 * reader), its status (parsed defensively, bounded). Trusts: the API server and the kubelet
 * to frame the channels faithfully. Fails closed: a refused handshake, an unknown channel, a
 * status that does not parse, a dropped connection each reject `done` with a BrigError.
 */
import { createRequire } from 'node:module';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type WebSocketType from 'ws';
import { BrigError } from '../../util/errors.js';
import type { KubeApi } from './kube-api.js';

const require = createRequire(import.meta.url);

const V5 = 'v5.channel.k8s.io';
const V4 = 'v4.channel.k8s.io';
const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const CLOSE_SIGNAL = 255;
/** What is kept of stderr: its last bytes. */
const STDERR_TAIL = 16 * 1024;
/** A status over this is not a status. */
const STATUS_MAX = 64 * 1024;
/** The largest message taken from the server (it sends its reads of ≤ 32 KiB). */
const MAX_MESSAGE = 4 * 1024 * 1024;
/** The stdout Readable's high-water mark: past it, the socket is paused. */
const STDOUT_HWM = 256 * 1024;
const STDIN_CHUNK = 32 * 1024;
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_TEXT_MAX = 1024 * 1024;

export interface ExecOptions {
  /** The process's stdin; closed (v5's close signal) when the source ends. Without it the process has no stdin. */
  stdin?: Buffer | NodeJS.ReadableStream;
  /** Bound on connect + handshake (default 30 s); the exec itself runs unbounded until done or close(). */
  timeoutMs?: number;
}

export interface ExecEnd {
  exitCode: number;
  /** Its last 16 KiB. */
  stderr: string;
  /** Every byte of stderr the process wrote. */
  stderrBytes: number;
}

export interface ExecSession {
  /**
   * The process's stdout, with backpressure: a slow reader pauses the socket. Read it to the
   * end (or `stdout.resume()` to drop it): unread, it holds the connection, and `done`, open.
   * On a failure it is destroyed with the BrigError `done` rejects with (a pipeline or a
   * for-await over it throws that; unread, it crashes nothing).
   */
  stdout: Readable;
  /** Resolves when the remote process ended: its exit code (channel 3's Status) and stderr's tail. Rejects on a protocol or connection failure with a BrigError. */
  done: Promise<ExecEnd>;
  /** The subprotocol the API server chose (v5.channel.k8s.io or v4.channel.k8s.io). */
  protocol: string;
  /** Closes the connection (the remote process may be left running: that is Kubernetes' behaviour); `done` rejects if it had not ended. */
  close(): void;
}

export interface ExecText extends ExecEnd {
  stdout: string;
}

/**
 * The API server's message, bounded: a Go error chain names its root cause last ("…: exec:
 * \"prog\": no such file or directory"), so a long one keeps its tail; the API server's own
 * repeated "Internal error occurred: " prefix is said once.
 */
function serverMessage(m: string): string {
  const once = m.replace(/^(Internal error occurred: )+/, 'Internal error occurred: ');
  return once.length <= 400 ? once : `…${once.slice(-400)}`;
}

/** The exec URL (https; ws upgrades it): one `command` per argv element, stdin only when asked. */
function execUrl(api: KubeApi, pod: string, container: string, argv: readonly string[], stdin: boolean): string {
  const q = new URLSearchParams({ container });
  for (const a of argv) q.append('command', a);
  q.append('stdout', 'true');
  q.append('stderr', 'true');
  if (stdin) q.append('stdin', 'true');
  return `${api.podSubresourceUrl(pod, 'exec')}?${q.toString()}`;
}

/** The exit code a channel-3 Status says (pure): Success → 0, NonZeroExitCode → its code; any other failure is a BrigError naming the server's message. */
export function exitCodeOfStatus(text: string, what: string): number {
  let s: { status?: unknown; reason?: unknown; message?: unknown; details?: { causes?: { reason?: unknown; message?: unknown }[] } };
  try {
    s = JSON.parse(text) as typeof s;
  } catch {
    throw new BrigError('jail_failed', `${what}: the exec's status is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
  }
  if (s?.status === 'Success') return 0;
  if (s?.status === 'Failure' && s.reason === 'NonZeroExitCode') {
    const cause = (Array.isArray(s.details?.causes) ? s.details.causes : []).find((c) => c?.reason === 'ExitCode');
    const code = Number(cause?.message);
    if (Number.isInteger(code) && code > 0 && code < 256) return code;
  }
  throw new BrigError('jail_failed', `${what} failed: ${serverMessage(String(s?.message ?? s?.reason ?? text))}`, {
    data: { reason: typeof s?.reason === 'string' ? s.reason : null },
    hint: 'The command could not run in the container (it is not running, or the program is not in its image): the message says which.',
  });
}

/** A refused handshake as a BrigError: the HTTP status and the API server's own message (a Status' `message`, bounded). */
function refused(what: string, status: number, body: string, namespace: string): BrigError {
  let message = body;
  try {
    message = String((JSON.parse(body) as { message?: unknown }).message ?? message);
  } catch {
    // not a Status object: the raw text, bounded
  }
  message = serverMessage(message);
  const hints: Record<number, string> = {
    401: "The API server did not accept the kubeconfig's credentials: renew the token or the client certificate.",
    403: `brig's Kubernetes account may not exec into pods of namespace ${namespace}: grant it create and get on pods/exec (deploy/kubernetes/rbac.yaml).`,
    404: 'The pod is gone, or is in another namespace.',
    400: 'The pod cannot be exec’d into as asked (a container it does not have, or one not running): the message says which.',
  };
  return new BrigError('jail_failed', `Kubernetes ${what}: ${status} ${message}`, { data: { status }, ...(hints[status] ? { hint: hints[status] } : {}) });
}

/** One exec's connection: demultiplexes the channels, paces the socket by stdout's reader, settles once. */
class ExecConnection {
  readonly stdout: Readable;
  readonly opened: Promise<void>;
  readonly done: Promise<ExecEnd>;
  #open!: { resolve: () => void; reject: (e: BrigError) => void };
  #end!: { resolve: (v: ExecEnd) => void; reject: (e: BrigError) => void };
  #stderr: Buffer[] = [];
  #stderrBytes = 0;
  #stderrTotal = 0;
  #status: Buffer[] = [];
  #statusBytes = 0;
  #isOpen = false;
  #settled = false;
  #timer: NodeJS.Timeout;

  constructor(
    readonly ws: WebSocketType,
    readonly what: string,
    readonly server: string,
    readonly namespace: string,
    timeoutMs: number,
    readonly stdin: Buffer | NodeJS.ReadableStream | undefined,
  ) {
    this.opened = new Promise((resolve, reject) => (this.#open = { resolve, reject }));
    this.done = new Promise((resolve, reject) => (this.#end = { resolve, reject }));
    // Nobody may await `done` (a close() right after the open): its rejection is not unhandled.
    this.opened.catch(() => undefined);
    this.done.catch(() => undefined);
    this.stdout = new Readable({
      highWaterMark: STDOUT_HWM,
      read: () => this.ws.resume(),
      destroy: (err, cb) => {
        this.#fail(new BrigError('jail_failed', `${what}: its stdout was closed by the reader before the process ended`));
        cb(err);
      },
    });
    // The failure is `done`'s to report: an unread stdout's error must not crash the process.
    // A reader still gets it (a pipeline, a for-await — even one started after the failure).
    this.stdout.on('error', () => undefined);
    this.#timer = setTimeout(() => this.#fail(new BrigError('engine_unavailable', `${what}: the Kubernetes API at ${server} did not complete the handshake within ${timeoutMs} ms`)), timeoutMs);
    // Attached before anything can arrive: a message is never emitted with no listener.
    ws.on('unexpected-response', (req, res) => void this.#refusal(res).finally(() => req.destroy()));
    ws.on('open', () => this.#onOpen());
    ws.on('message', (data: Buffer, isBinary: boolean) => this.#onMessage(data, isBinary));
    ws.on('error', (e: Error) => this.#onError(e));
    ws.on('close', (code: number, reason: Buffer) => this.#onClose(code, reason));
  }

  close(): void {
    this.#fail(new BrigError('jail_failed', `${this.what}: the connection was closed by brig before the process ended`));
  }

  async #refusal(res: IncomingMessage): Promise<void> {
    const chunks: Buffer[] = [];
    let n = 0;
    try {
      for await (const c of res as AsyncIterable<Buffer>) {
        if (n < STATUS_MAX) chunks.push(c);
        n += c.length;
      }
    } catch {
      // a cut body: what came is the message
    }
    this.#fail(refused(this.what, res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), this.namespace));
  }

  #onOpen(): void {
    clearTimeout(this.#timer);
    if (this.stdin !== undefined && this.ws.protocol !== V5) {
      this.#fail(new BrigError('jail_failed', `${this.what}: the API server chose ${this.ws.protocol || 'no subprotocol'}, which cannot close a process's stdin; exec with stdin needs ${V5} (Kubernetes ≥ 1.30)`, {
        hint: 'Upgrade the cluster to Kubernetes 1.30 or later (v5.channel.k8s.io), or exec without stdin.',
      }));
      return;
    }
    this.#isOpen = true;
    this.#open.resolve();
    if (this.stdin !== undefined) void this.#pumpStdin(this.stdin);
  }

  #onMessage(data: Buffer, isBinary: boolean): void {
    if (this.#settled) return;
    if (!isBinary) return this.#fail(new BrigError('jail_failed', `${this.what}: the API server sent a text message on a binary channel protocol`));
    if (data.length === 0) return; // no channel: nothing to deliver
    const payload = data.subarray(1);
    switch (data[0]) {
      case STDOUT:
        if (payload.length > 0 && !this.stdout.push(payload)) this.ws.pause();
        return;
      case STDERR:
        this.#stderr.push(payload);
        this.#stderrBytes += payload.length;
        this.#stderrTotal += payload.length;
        while (this.#stderr.length > 1 && this.#stderrBytes - this.#stderr[0]!.length >= STDERR_TAIL) this.#stderrBytes -= this.#stderr.shift()!.length;
        return;
      case STATUS:
        this.#statusBytes += payload.length;
        if (this.#statusBytes > STATUS_MAX) return this.#fail(new BrigError('jail_failed', `${this.what}: the exec's status is over ${STATUS_MAX} bytes`));
        this.#status.push(payload);
        return;
      case CLOSE_SIGNAL:
        return; // the server closing a channel of its own: its end comes with the status
      default:
        return this.#fail(new BrigError('jail_failed', `${this.what}: the API server sent on channel ${data[0]}, which the exec protocol does not have`));
    }
  }

  #onError(e: Error): void {
    if (this.#isOpen) this.#fail(new BrigError('jail_failed', `${this.what}: the connection failed: ${e.message}`, { cause: e }));
    else
      this.#fail(new BrigError('engine_unavailable', `${this.what}: the Kubernetes API at ${this.server} did not accept the connection: ${e.message}`, {
        cause: e,
        hint: "Check that the API server is up and that the kubeconfig's CA signed its certificate (brig always verifies TLS).",
      }));
  }

  /** The socket is closed: every message before it was delivered, so the status is whole. */
  #onClose(code: number, reason: Buffer): void {
    clearTimeout(this.#timer);
    if (this.#settled) return;
    if (this.#status.length === 0) {
      return this.#fail(new BrigError('jail_failed', `${this.what}: the connection closed (${code}${reason.length ? ` ${reason.toString('utf8').slice(0, 200)}` : ''}) before the process's exit status came`));
    }
    let exitCode: number;
    try {
      exitCode = exitCodeOfStatus(Buffer.concat(this.#status).toString('utf8'), this.what);
    } catch (e) {
      return this.#fail(e as BrigError);
    }
    this.#settled = true;
    this.stdout.push(null);
    this.#end.resolve({ exitCode, stderr: this.#stderrTail(), stderrBytes: this.#stderrTotal });
  }

  #stderrTail(): string {
    const all = Buffer.concat(this.#stderr);
    return all.subarray(Math.max(0, all.length - STDERR_TAIL)).toString('utf8');
  }

  #fail(e: BrigError): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#timer);
    this.ws.terminate();
    this.#open.reject(e);
    this.#end.reject(e);
    if (!this.stdout.destroyed) this.stdout.destroy(e);
  }

  /** Stdin in chunks, each sent before the next is read (the socket's pace), then v5's close signal. */
  async #pumpStdin(src: Buffer | NodeJS.ReadableStream): Promise<void> {
    try {
      const chunks: AsyncIterable<Buffer | string> | Buffer[] = Buffer.isBuffer(src) ? [src] : src;
      for await (const c of chunks) {
        const b = typeof c === 'string' ? Buffer.from(c) : c;
        for (let i = 0; i < b.length; i += STDIN_CHUNK) if (!(await this.#send(STDIN, b.subarray(i, i + STDIN_CHUNK)))) return;
      }
      await this.#send(CLOSE_SIGNAL, Buffer.of(STDIN));
    } catch (e) {
      this.#fail(new BrigError('jail_failed', `${this.what}: its stdin source failed: ${(e as Error).message}`, { cause: e }));
    }
  }

  /** False when the connection is ending (its outcome is the close's, not this send's). */
  #send(channel: number, payload: Buffer): Promise<boolean> {
    if (this.#settled || this.ws.readyState !== this.ws.OPEN) return Promise.resolve(false);
    return new Promise((resolve) => this.ws.send(Buffer.concat([Buffer.of(channel), payload]), { binary: true }, (err) => resolve(!err)));
  }
}

/**
 * Runs argv in a container of a pod, over one WebSocket to the API server; resolves once the
 * exec is open (the process started), with its stdout to read and its end to await.
 */
export async function execInPod(api: KubeApi, pod: string, container: string, argv: string[], o: ExecOptions = {}): Promise<ExecSession> {
  if (argv.length === 0) throw new BrigError('invalid_input', `exec into pod ${pod} needs a command: argv is empty`);
  const WebSocket = require('ws') as typeof WebSocketType;
  const { config } = api;
  const what = `exec into pod ${pod} container ${container}`;
  const ws = new WebSocket(execUrl(api, pod, container, argv, o.stdin !== undefined), [V5, V4], {
    ...(config.ca ? { ca: config.ca } : {}),
    ...(config.cert ? { cert: config.cert } : {}),
    ...(config.key ? { key: config.key } : {}),
    headers: config.token ? { authorization: `Bearer ${config.token}` } : {},
    perMessageDeflate: false,
    followRedirects: false,
    maxPayload: MAX_MESSAGE,
  });
  const conn = new ExecConnection(ws, what, config.server, api.namespace, o.timeoutMs ?? DEFAULT_TIMEOUT_MS, o.stdin);
  await conn.opened;
  return { stdout: conn.stdout, done: conn.done, protocol: ws.protocol, close: () => conn.close() };
}

/**
 * execInPod for a short answer: stdout and stderr as text, the exit code. Stdout over
 * `maxStdoutBytes` (default 1 MiB) is refused, not truncated: stream a large output with
 * execInPod.
 */
export async function execText(api: KubeApi, pod: string, container: string, argv: string[], o: ExecOptions & { maxStdoutBytes?: number } = {}): Promise<ExecText> {
  const max = o.maxStdoutBytes ?? DEFAULT_TEXT_MAX;
  const s = await execInPod(api, pod, container, argv, o);
  const chunks: Buffer[] = [];
  let n = 0;
  try {
    for await (const c of s.stdout as AsyncIterable<Buffer>) {
      n += c.length;
      if (n > max) throw new BrigError('output_too_large', `exec into pod ${pod} container ${container}: stdout is over ${max} bytes`, { hint: 'Stream a large output with execInPod (its stdout is a Readable), or raise maxStdoutBytes.' });
      chunks.push(c);
    }
    const end = await s.done;
    return { ...end, stdout: Buffer.concat(chunks).toString('utf8') };
  } catch (e) {
    if (e instanceof BrigError) throw e;
    // The session's own reason (close() settles it if nothing else did): a stream error is only its echo.
    s.close();
    throw await s.done.then(() => e, (reason: unknown) => reason);
  } finally {
    s.close();
  }
}
