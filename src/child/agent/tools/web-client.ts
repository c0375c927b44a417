/**
 * HTTP from inside the jail: the one way the agent's web tools reach anything. Every request
 * goes to the egress relay on the jail's own loopback (127.0.0.1:3128) — an absolute-form
 * request for `http://`, a CONNECT tunnel and then TLS for `https://` (certificates verified:
 * the host's roots, and the run's CA when the gate inspects) — so the supervisor's gate is
 * the single enforcement point: it decides every host, and this client has no resolver and
 * no route of its own. One request each: a redirect is returned, never followed here (the
 * tool follows it as a new request the gate decides again). A body is read up to `maxBytes`.
 * Trusts nothing it reads; fails closed (a refusal or an error, never a guess).
 */
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import tls from 'node:tls';
import { EGRESS_PATHS } from '../../paths.js';

export interface WebResponse {
  url: string;
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The body went past maxBytes: the rest was not read. */
  truncated: boolean;
}

/** The gate refused (its `X-Brig-Egress` reason), or the tunnel was cut before TLS finished. */
export class WebRefusal extends Error {
  override name = 'WebRefusal';
  constructor(readonly reason: string, message: string) {
    super(message);
  }
}

export interface WebRequest {
  method: 'GET' | 'HEAD';
  headers?: Record<string, string>;
  maxBytes: number;
  signal: AbortSignal;
  /** Where the relay listens (tests: an in-process relay). */
  proxy?: { host: string; port: number };
  /** The CA bundle file (the run's CA when the gate inspects TLS); absent file: the host's roots only. */
  caFile?: string;
}

let cachedCa: { file: string; ca: string[] | undefined } | undefined;
function caFor(file: string): string[] | undefined {
  if (cachedCa?.file !== file) {
    let extra: string | undefined;
    try {
      extra = fs.readFileSync(file, 'utf8');
    } catch {
      extra = undefined;
    }
    cachedCa = { file, ca: extra ? [...tls.rootCertificates, extra] : undefined };
  }
  return cachedCa.ca;
}

const refusalOf = (res: http.IncomingMessage): WebRefusal | null => {
  const reason = res.headers['x-brig-egress'];
  return typeof reason === 'string' ? new WebRefusal(reason, `brig's egress gate refused it: ${reason} (the lease allows only the hosts its egress rules name)`) : null;
};

/** CONNECT through the relay; the tunnel's socket, or the gate's refusal. */
function tunnel(proxy: { host: string; port: number }, authority: string, signal: AbortSignal): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: proxy.host, port: proxy.port, method: 'CONNECT', path: authority, headers: { host: authority }, agent: false, signal });
    req.once('connect', (res, socket) => {
      if (res.statusCode === 200) return resolve(socket);
      socket.destroy();
      reject(refusalOf(res) ?? new Error(`the egress relay answered ${res.statusCode} to CONNECT`));
    });
    req.once('error', (e) => reject(relayError(e)));
    req.end();
  });
}

function relayError(e: Error): Error {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ECONNREFUSED') return new WebRefusal('no_egress', 'no egress: nothing listens on the relay (this run\'s lease has no egress rules)');
  if (e.name === 'AbortError') return e;
  return new Error(`the request failed: ${code ?? e.message}`);
}

/** One request, no redirect followed. */
export async function webRequest(url: URL, o: WebRequest): Promise<WebResponse> {
  const proxy = o.proxy ?? { host: EGRESS_PATHS.host, port: EGRESS_PATHS.port };
  const headers: Record<string, string> = { 'user-agent': 'brig-web-fetch/1', accept: '*/*', 'accept-encoding': 'identity', ...o.headers, host: url.host, connection: 'close' };
  let opts: http.RequestOptions;
  if (url.protocol === 'http:') {
    opts = { host: proxy.host, port: proxy.port, method: o.method, path: url.href, headers, agent: false, signal: o.signal };
  } else if (url.protocol === 'https:') {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const raw = await tunnel(proxy, `${url.hostname}:${url.port || '443'}`, o.signal);
    const secure = await new Promise<tls.TLSSocket>((resolve, reject) => {
      const ca = caFor(o.caFile ?? EGRESS_PATHS.caBundle);
      const t = tls.connect({ socket: raw, ...(/^[\d.]+$|:/.test(host) ? {} : { servername: host }), ...(ca ? { ca } : {}), ALPNProtocols: ['http/1.1'] });
      t.once('secureConnect', () => resolve(t));
      t.once('error', (e: NodeJS.ErrnoException) => {
        raw.destroy();
        reject(e.code === 'ECONNRESET' || e.message.includes('socket disconnected') ? new WebRefusal('tunnel_closed', 'the TLS tunnel was closed before the handshake finished (the egress gate refuses a ClientHello that does not name the allowed host, and a host whose address is not public)') : new Error(`TLS failed: ${e.code ?? e.message}`));
      });
    });
    // No `agent` here: Node uses createConnection only without one (`agent: false` makes a fresh
    // Agent that dials host:port itself — a name lookup the jail cannot answer).
    opts = { method: o.method, path: `${url.pathname}${url.search}`, headers, signal: o.signal, createConnection: () => secure };
  } else {
    throw new Error(`only http:// and https:// URLs are fetched, not ${url.protocol}`);
  }
  return await new Promise<WebResponse>((resolve, reject) => {
    const req = http.request(opts, (res) => {
      const refused = refusalOf(res);
      if (refused) {
        res.resume();
        return reject(refused);
      }
      const parts: Buffer[] = [];
      let bytes = 0;
      let truncated = false;
      const done = () => resolve({ url: url.href, status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts), truncated });
      res.on('data', (c: Buffer) => {
        if (truncated) return;
        const room = o.maxBytes - bytes;
        if (c.length > room) {
          parts.push(c.subarray(0, room));
          bytes = o.maxBytes;
          truncated = true;
          done();
          res.destroy();
          return;
        }
        parts.push(c);
        bytes += c.length;
      });
      res.once('end', () => !truncated && done());
      res.once('error', (e) => !truncated && reject(relayError(e)));
    });
    req.once('error', (e) => reject(relayError(e)));
    req.end();
  });
}
