/**
 * The operator's web console: one page (console-page.ts, no framework, nothing fetched at run
 * time) and the daemon's own API under /api, on a loopback TCP address only, behind a random
 * access token.
 *
 * Guarantees: nothing is served without the token — not the page, not the API, not the event
 * stream (401 with an empty body); the token is compared in constant time, is never logged
 * (the log keeps route templates, never a query string) and never reaches the ledger; the
 * listener refuses any address that is not loopback, and a request whose Host header does not
 * name a loopback address gets an empty 421 (DNS rebinding: a site whose name now resolves to
 * 127.0.0.1 is same-origin with itself, not with the console). The page drops the token from
 * the address bar once loaded (history.replaceState) and keeps it in memory for its calls. The
 * API under /api is the daemon's (`apiHandler`): the same routes, contract, validation and
 * statuses as on the unix socket.
 * Threat: another local user or a web page in the operator's browser reaching the daemon
 * through the console (a loopback port is open to every local uid, and to any site's
 * JavaScript that guesses it): the token stops both, the Host check stops a rebound name before
 * any token is tried; responses carry no CORS headers and the page sets a restrictive
 * Content-Security-Policy. Trusts: the browser to send the name it resolved as Host. Fails
 * closed: no or an unparsable Host is refused. Not covered: the token printed on stdout (the
 * journal, under a service manager) is readable by whoever reads that.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { BrigError } from '../util/errors.js';
import { CONSOLE_PAGE } from './console-page.js';

export interface ConsoleServer {
  /** The address with its access token: what `brig serve --ui` prints. */
  url: string;
  close(): Promise<void>;
}

function loopback(host: string): boolean {
  return host === 'localhost' || (net.isIP(host) !== 0 && (host === '::1' || host.startsWith('127.')));
}

/** `127.0.0.1:8080`, `:0`, `8080` or `[::1]:0` as host and port; refuses a non-loopback host. */
export function consoleAddress(addr: string | undefined): { host: string; port: number } {
  const text = (addr ?? '').trim();
  const m = /^(?:\[([^\]]+)\]|([^:]*))?(?::?(\d{1,5}))?$/.exec(text);
  const host = (m?.[1] ?? m?.[2]) || '127.0.0.1';
  const port = Number(m?.[3] ?? 0);
  if (!m || !Number.isInteger(port) || port > 65535) throw new BrigError('invalid_input', `--ui ${JSON.stringify(text.slice(0, 60))} is not an address`, { hint: 'Give 127.0.0.1:PORT, :PORT or nothing (a free loopback port).' });
  if (!loopback(host)) throw new BrigError('invalid_input', `the console listens on loopback only, not ${host}`, { hint: 'Give 127.0.0.1 (or ::1); reach it from elsewhere through an SSH tunnel.' });
  return { host, port };
}

/**
 * The Host header names a loopback address (the listen address, `localhost`, 127.x, ::1), any
 * port: a page whose DNS name was rebound to 127.0.0.1 sends its own name, and an SSH tunnel's
 * local end may listen on another port.
 */
function loopbackHost(header: string | undefined): boolean {
  if (!header) return false;
  let u: URL;
  try {
    u = new URL(`http://${header}`);
  } catch {
    return false;
  }
  if (u.username || u.password || u.pathname !== '/' || u.search || u.hash) return false;
  return loopback(u.hostname.replace(/^\[(.*)\]$/, '$1'));
}

function tokenOf(req: http.IncomingMessage, url: URL): string {
  const h = req.headers.authorization;
  if (typeof h === 'string' && h.startsWith('Bearer ')) return h.slice(7);
  return url.searchParams.get('token') ?? '';
}

function sameToken(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

/**
 * What a person opening the console without a valid token sees: the same constant text for a
 * missing, wrong or stale token (a daemon restarted since makes a new one) — nothing of the
 * daemon, its runs or whether a guess came close.
 */
export const STALE_TOKEN_PAGE = `<!doctype html><meta charset="utf-8"><title>Not signed in</title><style>body{font:15px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}code{background:#eee;padding:0 .2em}</style><h1>This address has no valid token</h1><p>The token in the address is missing or no longer valid: each start of <code>brig serve --ui</code> makes a new one, and a reload of the page needs the address again.</p><p>Open the address the daemon printed last (its first output line, or the log under a service manager).</p>`;

/** Serves the console; `api` is the daemon's own request listener (apiHandler). */
export async function listenConsole(api: http.RequestListener, addr?: string): Promise<ConsoleServer> {
  const { host, port } = consoleAddress(addr);
  const token = crypto.randomBytes(24).toString('base64url');
  const server = http.createServer((req, res) => {
    // Before the token: a rebound name learns nothing, not even whether its guess was right.
    if (!loopbackHost(req.headers.host)) {
      res.writeHead(421, { 'content-type': 'text/plain', 'cache-control': 'no-store', 'content-length': 0 });
      return void res.end();
    }
    const url = new URL(req.url ?? '/', 'http://console');
    if (!sameToken(tokenOf(req, url), token)) {
      // A person opening the page with a stale address gets a constant page saying what to do;
      // everything else (the API, the event stream) an empty 401.
      if (url.pathname === '/' && (req.method === 'GET' || req.method === 'HEAD')) {
        res.writeHead(401, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY', 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'", 'content-length': Buffer.byteLength(STALE_TOKEN_PAGE) });
        return void res.end(req.method === 'HEAD' ? undefined : STALE_TOKEN_PAGE);
      }
      res.writeHead(401, { 'content-type': 'text/plain', 'cache-control': 'no-store', 'content-length': 0 });
      return void res.end();
    }
    if (url.pathname === '/' && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
        'x-frame-options': 'DENY',
        'content-security-policy': "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      });
      return void res.end(CONSOLE_PAGE);
    }
    if (url.pathname.startsWith('/api/v1/')) {
      // The daemon's API, unchanged, minus the token (as a query or a header): the API never sees it.
      url.searchParams.delete('token');
      req.url = `${url.pathname.slice('/api'.length)}${url.search}`;
      delete req.headers.authorization;
      for (let i = req.rawHeaders.length - 2; i >= 0; i -= 2) if (req.rawHeaders[i]!.toLowerCase() === 'authorization') req.rawHeaders.splice(i, 2);
      // Whatever the page says, what comes through here is the console's (the API's log line names it).
      req.headers['x-brig-client'] = 'console';
      return api(req, res);
    }
    res.writeHead(404, { 'content-type': 'text/plain', 'content-length': 0 });
    res.end();
  });
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address() as net.AddressInfo;
  const shown = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return {
    url: `http://${shown}:${a.port}/?token=${token}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
