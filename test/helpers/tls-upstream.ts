/** A test certificate (openssl, made at test time) and loopback upstreams standing in for the internet. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';

export function testCert(names: string[]): { key: string; cert: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-egress-cert-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${names[0]}`, '-addext', `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`, '-days', '1', '-keyout', path.join(dir, 'k.pem'), '-out', path.join(dir, 'c.pem')], { stdio: 'ignore' });
    return { key: fs.readFileSync(path.join(dir, 'k.pem'), 'utf8'), cert: fs.readFileSync(path.join(dir, 'c.pem'), 'utf8') };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export interface Upstream {
  accepted: number;
  close(): Promise<void>;
}

const closer = (s: net.Server) => () => new Promise<void>((r) => { (s as http.Server).closeAllConnections?.(); s.close(() => r()); });

/** HTTPS on host:port answering `hello from <host header>` (and a 302 at /redirect to `location`). */
export async function httpsUpstream(host: string, port: number, cert: { key: string; cert: string }, location?: string): Promise<Upstream> {
  const u = { accepted: 0 } as Upstream;
  const s = https.createServer({ ...cert }, (req, res) => {
    if (req.url === '/redirect' && location) return void res.writeHead(302, { location }).end();
    res.end(`hello from ${req.headers.host}\n`);
  });
  s.on('secureConnection', () => u.accepted++);
  await new Promise<void>((r) => s.listen(port, host, () => r()));
  u.close = closer(s);
  return u;
}

export async function httpUpstream(host: string, port: number, location?: string): Promise<Upstream> {
  const u = { accepted: 0 } as Upstream;
  const s = http.createServer((req, res) => {
    if (req.url === '/redirect' && location) return void res.writeHead(302, { location }).end();
    res.end(`hello from ${req.headers.host}\n`);
  });
  s.on('connection', () => u.accepted++);
  await new Promise<void>((r) => s.listen(port, host, () => r()));
  u.close = closer(s);
  return u;
}

/** A server that must never be reached: counts accepts. */
export async function trapUpstream(host: string, port: number): Promise<Upstream> {
  const u = { accepted: 0 } as Upstream;
  const s = net.createServer((c) => {
    u.accepted++;
    c.destroy();
  });
  await new Promise<void>((r) => s.listen(port, host, () => r()));
  u.close = closer(s);
  return u;
}

/** What an echo upstream received: every request's headers, target and body. */
export interface EchoUpstream extends Upstream {
  seen: { headers: http.IncomingHttpHeaders; url: string; body: string }[];
}

/**
 * HTTPS answering every request with its own headers, target and body as JSON (and the
 * authorization header as `x-echo-auth`): an endpoint that reflects a credential. `/gzip`
 * answers gzip-encoded whatever the request asked.
 */
export async function echoUpstream(host: string, port: number, cert: { key: string; cert: string }): Promise<EchoUpstream> {
  const u = { accepted: 0, seen: [] } as unknown as EchoUpstream;
  const s = https.createServer({ ...cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const got = { headers: req.headers, url: req.url ?? '', body: Buffer.concat(chunks).toString() };
      u.seen.push(got);
      const text = JSON.stringify(got);
      if (req.url?.startsWith('/v1/gzip')) return void res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/json' }).end(zlib.gzipSync(text));
      res.writeHead(200, { 'content-type': 'application/json', ...(req.headers.authorization ? { 'x-echo-auth': req.headers.authorization } : {}) }).end(text);
    });
  });
  s.on('secureConnection', () => u.accepted++);
  await new Promise<void>((r) => s.listen(port, host, () => r()));
  u.close = closer(s);
  return u;
}

/** A port free on `host` now (listen on 0, close): for upstreams whose port goes into a lease's rules before they start. */
export async function freePort(host: string): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, host, () => r()));
  const p = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}
