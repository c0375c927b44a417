/**
 * The egress gate on real sockets, real TLS and a real (fake) DNS server, all on loopback:
 * 127.0.0.2 stands in for the internet (egress.testPublicCidrs), 127.0.0.3 must never be
 * reached, 10.0.0.5 / 169.254.169.254 / their IPv6 spellings are answers the gate must refuse.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, test } from 'node:test';
import { EgressGate, makeResolver, systemClassifier, type EgressRunHandle } from '../../../src/egress/index.js';
import type { LedgerEvent } from '../../../src/ledger/index.js';
import { DEFAULT_EGRESS_BUDGETS } from '../../../src/lease/index.js';
import type { EgressGrant } from '../../../src/protocol/index.js';
import { startFakeDns, type FakeDns } from '../../helpers/fake-dns.js';
import { freePort, httpUpstream, httpsUpstream, testCert, trapUpstream, type Upstream } from '../../helpers/tls-upstream.js';

let dns: FakeDns;
let ups: Upstream[] = [];
let httpsPort = 0;
let httpPort = 0;
let trap: Upstream;
let cert: { key: string; cert: string };
const ledger: LedgerEvent[] = [];
let gate: EgressGate;
let handle: EgressRunHandle;
let dir: string;

const NAMES = ['allowed.test', 'other.test', 'private.test', 'meta.test', 'mapped.test', 'nat64.test', 'mixed.test', 'rebind.test', 'sixtofour.test'];

before(async () => {
  cert = testCert(['allowed.test', 'other.test', 'rebind.test']);
  const s = await httpsUpstream('127.0.0.2', 0, cert);
  httpsPort = ((s as unknown as { addr: number }).addr ?? 0) || 0;
  ups.push(s);
  dns = await startFakeDns({
    'allowed.test': ['127.0.0.2'],
    'other.test': ['127.0.0.2'],
    'denied.test': ['127.0.0.3'],
    'private.test': ['10.0.0.5'],
    'meta.test': ['169.254.169.254'],
    'mapped.test': ['::ffff:a9fe:a9fe'],
    'nat64.test': ['64:ff9b::a9fe:a9fe'],
    'sixtofour.test': ['2002:a00:5::1'],
    'mixed.test': ['127.0.0.2', '10.0.0.5'],
    'rebind.test': { alternate: [['127.0.0.2'], ['10.0.0.5']] },
  });
});

after(async () => {
  await gate?.close();
  for (const u of [...ups, trap]) await u?.close();
  await dns?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});


async function setup(): Promise<void> {
  if (gate) return;
  for (const u of ups) await u.close();
  ups = [];
  httpsPort = await freePort('127.0.0.2');
  httpPort = await freePort('127.0.0.2');
  ups.push(await httpsUpstream('127.0.0.2', httpsPort, cert));
  ups.push(await httpUpstream('127.0.0.2', httpPort, `http://private.test:${httpPort}/`));
  trap = await trapUpstream('127.0.0.3', httpsPort);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-eg-'));
  const grant: EgressGrant = {
    rules: [
      { id: 'web', hosts: NAMES, ports: [httpsPort], scheme: 'https', tls: 'tunnel', websocket: false },
      { id: 'plain', hosts: NAMES, ports: [httpPort], scheme: 'http', tls: 'tunnel', methods: ['GET', 'HEAD'], websocket: false },
    ],
    budgets: { ...DEFAULT_EGRESS_BUDGETS },
  };
  gate = new EgressGate({
    ledger: { append: (e) => void ledger.push(e) },
    resolver: makeResolver([dns.server]),
    classify: systemClassifier({ testPublicCidrs: ['127.0.0.2/32'] }),
    policy: { denyHosts: [] },
    helloTimeoutMs: 3000,
  });
  handle = await gate.openRun({ runId: 'r-test', leaseId: 'l-test', dir, grant });
}

/** CONNECT through the gate: the status line and headers, and the socket when 200. */
function connect(authority: string): Promise<{ status: number; reason: string | undefined; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: handle.socketPath, method: 'CONNECT', path: authority });
    req.on('connect', (res, socket) => resolve({ status: res.statusCode ?? 0, reason: res.headers['x-brig-egress'] as string | undefined, socket }));
    req.on('error', reject);
    req.end();
  });
}

/** TLS over an open tunnel with the given SNI (false: none); the body of GET /, or the error. */
function tlsGet(socket: net.Socket, sni: string | false, host: string): Promise<{ body?: string; error?: string }> {
  return new Promise((resolve) => {
    const t = tls.connect({ socket, ...(sni ? { servername: sni } : {}), ca: cert.cert, checkServerIdentity: () => undefined });
    let body = '';
    t.on('secureConnect', () => t.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
    t.on('data', (c: Buffer) => (body += c.toString()));
    t.on('end', () => resolve(body ? { body } : { error: 'ended before any byte' }));
    t.on('error', (e) => resolve({ error: e.message }));
    t.on('close', () => resolve(body ? { body } : { error: 'closed' }));
  });
}

function plainGet(url: string): Promise<{ status: number; reason: string | undefined; body: string; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: handle.socketPath, method: 'GET', path: url, headers: { host: new URL(url).host } });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reason: res.headers['x-brig-egress'] as string | undefined, body, location: res.headers.location }));
    });
    req.on('error', reject);
    req.end();
  });
}

const denies = () => ledger.filter((e) => e.type === 'egress.deny');

test('an allowed host is reached through a tunnel whose SNI names it; one content-free egress.conn at close', async () => {
  await setup();
  const c = await connect(`allowed.test:${httpsPort}`);
  assert.equal(c.status, 200);
  const r = await tlsGet(c.socket, 'allowed.test', 'allowed.test');
  assert.match(r.body ?? r.error ?? '', /hello from allowed\.test/);
  await new Promise((r) => setTimeout(r, 100));
  const conn = ledger.find((e) => e.type === 'egress.conn' && e.host === 'allowed.test');
  assert.ok(conn, 'an egress.conn record');
  assert.equal(conn.ruleId, 'web');
  assert.equal(conn.addrClass, 'test_public');
  assert.ok((conn.bytesDown as number) > 0 && (conn.bytesUp as number) > 0);
  assert.ok(!JSON.stringify(conn).includes('GET /'), 'no request line in the ledger');
});

test('a host no rule names: 403 at once, zero DNS queries for it, recorded hashed', async () => {
  await setup();
  const c = await connect(`s3cr3t-payload.denied.test:${httpsPort}`);
  assert.equal(c.status, 403);
  assert.equal(c.reason, 'host_not_allowed');
  assert.equal(dns.queries.get('s3cr3t-payload.denied.test') ?? 0, 0, 'the gate asked DNS about a name no rule names');
  assert.equal(trap.accepted, 0);
  const d = denies().at(-1)!;
  assert.equal(d.reason, 'host_not_allowed');
  assert.ok(!JSON.stringify(d).includes('s3cr3t'), 'a denied host is never recorded verbatim');
  assert.equal(d.hostTail, 'denied.test');
  assert.equal(d.hostLen, 's3cr3t-payload.denied.test'.length);
});

test('IP literals and their odd spellings match IP rules only', async () => {
  await setup();
  for (const a of ['127.0.0.2', '2130706434', '0x7f.2', '127.2', '0177.0.0.2', '[::ffff:127.0.0.2]', '[::1]']) {
    const c = await connect(`${a}:${httpsPort}`);
    assert.equal(c.status, 403, a);
    assert.equal(c.reason, 'host_not_allowed', a);
  }
  for (const a of ['allowed.test..', 'allowed%2etest', 'allowed.test:99999', 'allowed.test']) {
    const c = await connect(a.includes(':') || a === 'allowed.test' ? a : `${a}:${httpsPort}`);
    assert.ok(c.status === 403 || c.status === 400, `${a}: ${c.status}`);
  }
  // Non-ASCII (a fullwidth ａ, sent as UTF-8 bytes): refused, never mapped to ASCII.
  const raw = net.connect(handle.socketPath);
  raw.write(Buffer.concat([Buffer.from('CONNECT '), Buffer.from('ａllowed.test', 'utf8'), Buffer.from(`:${httpsPort} HTTP/1.1\r\n\r\n`)]));
  const answer = await new Promise<string>((r) => {
    let t = '';
    raw.on('data', (c: Buffer) => (t += c.toString('latin1')));
    raw.on('close', () => r(t));
  });
  assert.match(answer, /^HTTP\/1\.1 (400|403)/);
  assert.equal(trap.accepted, 0);
});

test('a tunnel whose ClientHello names another host, or none, is closed before anything is dialled', async () => {
  await setup();
  const before = (ups[0] as Upstream).accepted;
  const c1 = await connect(`allowed.test:${httpsPort}`);
  assert.equal(c1.status, 200);
  const r1 = await tlsGet(c1.socket, 'other.test', 'other.test');
  assert.ok(r1.error, 'fronting inside the tunnel must fail');
  const c2 = await connect(`allowed.test:${httpsPort}`);
  const r2 = await tlsGet(c2.socket, false, 'allowed.test');
  assert.ok(r2.error, 'no SNI must fail');
  const c3 = await connect(`allowed.test:${httpsPort}`);
  c3.socket.write('GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n');
  await new Promise((r) => c3.socket.once('close', r));
  await new Promise((r) => setTimeout(r, 100));
  assert.equal((ups[0] as Upstream).accepted, before, 'the upstream saw none of them');
  const reasons = denies().slice(-3).map((d) => d.reason);
  assert.deepEqual(reasons, ['sni_mismatch', 'no_sni', 'scheme_not_allowed']);
});

test('names whose answers are private, metadata, mapped, NAT64, 6to4 or mixed are refused; rebinding is checked per connection', async () => {
  await setup();
  for (const n of ['private.test', 'meta.test', 'mapped.test', 'nat64.test', 'sixtofour.test', 'mixed.test']) {
    const c = await connect(`${n}:${httpsPort}`);
    assert.equal(c.status, 200, n);
    const r = await tlsGet(c.socket, n, n);
    assert.ok(r.error, `${n} must not be reached`);
    const d = denies().at(-1)!;
    assert.equal(d.reason, 'address_not_allowed', n);
  }
  const cls = denies().slice(-6).map((d) => d.addrClass);
  assert.deepEqual(cls, ['private', 'metadata', 'metadata', 'metadata', 'private', 'private']);
  const first = await connect(`rebind.test:${httpsPort}`);
  assert.match((await tlsGet(first.socket, 'rebind.test', 'rebind.test')).body ?? '', /hello/);
  const second = await connect(`rebind.test:${httpsPort}`);
  assert.ok((await tlsGet(second.socket, 'rebind.test', 'rebind.test')).error, 'the rebound answer is refused');
  assert.equal(denies().at(-1)!.reason, 'address_not_allowed');
});

test('plain http: a redirect is relayed, never followed; its target is a new request, decided again; TRACE refused', async () => {
  await setup();
  const r = await plainGet(`http://allowed.test:${httpPort}/redirect`);
  assert.equal(r.status, 302);
  assert.equal(r.location, `http://private.test:${httpPort}/`);
  const f = await plainGet(r.location!);
  assert.equal(f.status, 403);
  assert.equal(f.reason, 'address_not_allowed');
  const ok = await plainGet(`http://other.test:${httpPort}/x`);
  assert.match(ok.body, /hello from other\.test/);
  const t = await new Promise<number>((resolve) => {
    const req = http.request({ socketPath: handle.socketPath, method: 'TRACE', path: `http://allowed.test:${httpPort}/`, headers: { host: `allowed.test:${httpPort}` } }, (res) => resolve(res.statusCode ?? 0));
    req.end();
  });
  assert.equal(t, 403);
});

test('closing the run (a revoked lease) closes its open connections and refuses new ones', async () => {
  await setup();
  const c = await connect(`allowed.test:${httpsPort}`);
  const t = tls.connect({ socket: c.socket, servername: 'allowed.test', ca: cert.cert, checkServerIdentity: () => undefined });
  await new Promise((r) => t.once('secureConnect', r));
  const closed = new Promise((r) => t.once('close', r));
  await handle.close('lease_revoked');
  await closed;
  assert.ok(ledger.some((e) => e.type === 'egress.closed' && e.reason === 'lease_revoked'));
  await assert.rejects(connect(`allowed.test:${httpsPort}`));
});

test('budgets bind across the tree: two children under one ancestor share its connections budget; the (k+1)th is 403 budget_exhausted', async () => {
  await setup();
  const g = new EgressGate({ ledger: { append: (e) => void ledger.push(e) }, resolver: makeResolver([dns.server]), classify: systemClassifier({ testPublicCidrs: ['127.0.0.2/32'] }), policy: { denyHosts: [] } });
  const rule = { id: 'web', hosts: ['allowed.test'], ports: [httpsPort], scheme: 'https' as const, tls: 'tunnel' as const, websocket: false };
  const ancestor = { leaseId: 'l-anc', budgets: { ...DEFAULT_EGRESS_BUDGETS, connections: 3 } };
  const dirs = [fs.mkdtempSync(path.join(os.tmpdir(), 'brig-eg-')), fs.mkdtempSync(path.join(os.tmpdir(), 'brig-eg-'))];
  try {
    const a = await g.openRun({ runId: 'r-a', leaseId: 'l-a', dir: dirs[0]!, grant: { rules: [rule], budgets: { ...DEFAULT_EGRESS_BUDGETS, connections: 2 } }, ancestors: [ancestor] });
    const b = await g.openRun({ runId: 'r-b', leaseId: 'l-b', dir: dirs[1]!, grant: { rules: [rule], budgets: { ...DEFAULT_EGRESS_BUDGETS } }, ancestors: [ancestor] });
    const via = (sock: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request({ socketPath: sock, method: 'CONNECT', path: `allowed.test:${httpsPort}` });
        req.on('connect', (res, s) => {
          resolve(res.statusCode ?? 0);
          if (res.statusCode === 200) void tlsGet(s, 'allowed.test', 'allowed.test');
          else s.destroy();
        });
        req.on('error', reject);
        req.end();
      });
    assert.deepEqual([await via(a.socketPath), await via(a.socketPath), await via(a.socketPath)], [200, 200, 403], "a's own budget: 2");
    assert.equal(await via(b.socketPath), 200, 'the ancestor has one left');
    assert.equal(await via(b.socketPath), 403, "b's own budget is wide, the ancestor's (3) is spent");
    assert.equal(denies().at(-1)!.reason, 'budget_exhausted');
  } finally {
    await g.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  }
});

test('plain http: h2c and an unasked websocket upgrade are refused at once (403), a POST on a GET-only rule too', async () => {
  const g = new EgressGate({ ledger: { append: (e) => void ledger.push(e) }, resolver: makeResolver([dns.server]), classify: systemClassifier({ testPublicCidrs: ['127.0.0.2/32'] }), policy: { denyHosts: [] } });
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-eg-'));
  try {
    if (!httpPort) await setup();
    const h = await g.openRun({ runId: 'r-up', leaseId: 'l-up', dir: d, grant: { rules: [{ id: 'plain', hosts: ['allowed.test'], ports: [httpPort], scheme: 'http', tls: 'tunnel', methods: ['GET', 'HEAD'], websocket: false }], budgets: { ...DEFAULT_EGRESS_BUDGETS } } });
    const send = (method: string, headers: Record<string, string>) =>
      new Promise<{ status: number; reason: string | undefined }>((resolve) => {
        const req = http.request({ socketPath: h.socketPath, method, path: `http://allowed.test:${httpPort}/`, headers: { host: `allowed.test:${httpPort}`, ...headers } });
        req.on('response', (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, reason: res.headers['x-brig-egress'] as string | undefined });
        });
        req.on('upgrade', (res, s) => {
          s.destroy();
          resolve({ status: res.statusCode ?? 0, reason: 'upgraded' });
        });
        req.on('error', () => resolve({ status: 0, reason: 'error' }));
        req.end();
      });
    assert.equal((await send('GET', {})).status, 200, 'the control: a plain GET passes');
    const h2c = await send('GET', { connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'http2-settings': 'AAMAAABkAARAAAAAAAIAAAAA' });
    assert.equal(h2c.status, 403);
    const ws = await send('GET', { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' });
    assert.equal(ws.status, 403);
    const post = await send('POST', { 'content-length': '0' });
    assert.deepEqual([post.status, post.reason], [403, 'method_not_allowed']);
  } finally {
    await g.close();
    fs.rmSync(d, { recursive: true, force: true });
  }
});

test('a tcp rule opens an opaque stream to its exact host and port only after the dial; a bytesDown budget closes a tunnel that passes it', async () => {
  if (!httpPort) await setup();
  const echo = net.createServer((c) => c.pipe(c));
  const echoPort = await freePort('127.0.0.2');
  await new Promise<void>((r) => echo.listen(echoPort, '127.0.0.2', () => r()));
  const g = new EgressGate({ ledger: { append: (e) => void ledger.push(e) }, resolver: makeResolver([dns.server]), classify: systemClassifier({ testPublicCidrs: ['127.0.0.2/32'] }), policy: { denyHosts: [] } });
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-eg-'));
  try {
    const h = await g.openRun({
      runId: 'r-tcp', leaseId: 'l-tcp', dir: d,
      grant: { rules: [{ id: 'git', hosts: ['allowed.test'], ports: [echoPort], scheme: 'tcp', tls: 'tunnel', websocket: false }, { id: 'web', hosts: ['allowed.test'], ports: [httpsPort], scheme: 'https', tls: 'tunnel', websocket: false }], budgets: { ...DEFAULT_EGRESS_BUDGETS, bytesDown: 4096 } },
    });
    const open = (authority: string) =>
      new Promise<{ status: number; socket: net.Socket }>((resolve, reject) => {
        const req = http.request({ socketPath: h.socketPath, method: 'CONNECT', path: authority });
        req.on('connect', (res, socket) => resolve({ status: res.statusCode ?? 0, socket }));
        req.on('error', reject);
        req.end();
      });
    const t = await open(`allowed.test:${echoPort}`);
    assert.equal(t.status, 200);
    t.socket.write('ping');
    assert.equal(String(await new Promise<Buffer>((r) => t.socket.once('data', r))), 'ping');
    t.socket.destroy();
    const wrongPort = await open(`other.test:${echoPort}`);
    assert.equal(wrongPort.status, 403, 'another host on the tcp rule’s port');
    // 4 KiB down for the whole lease: an echo of 8 KiB is cut.
    const big = await open(`allowed.test:${echoPort}`);
    let got = 0;
    big.socket.on('data', (c: Buffer) => (got += c.length));
    big.socket.write(Buffer.alloc(8192, 1));
    await new Promise((r) => big.socket.once('close', r));
    assert.ok(got < 8192, `the budget cut the stream (${got} bytes)`);
    await new Promise((r) => setTimeout(r, 50));
    assert.ok(ledger.some((e) => e.type === 'egress.conn' && e.runId === 'r-tcp' && e.closedBy === 'budget_exhausted'));
  } finally {
    await g.close();
    echo.close();
    fs.rmSync(d, { recursive: true, force: true });
  }
});

// req: jail:egress-gated
test('[INV-2] plain http inside a CONNECT (undici’s default for http://): each request on the tunnel decided — a GET answered, a POST refused 403, another Host 421; one egress.conn of mode plain at close', async (t) => {
  if (!httpPort) await setup();
  const g = new EgressGate({ ledger: { append: (e) => void ledger.push(e) }, resolver: makeResolver([dns.server]), classify: systemClassifier({ testPublicCidrs: ['127.0.0.2/32'] }), policy: { denyHosts: [] } });
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-eg-'));
  const h = await g.openRun({ runId: 'r-pic', leaseId: 'l-pic', dir: d, grant: { rules: [{ id: 'plain', hosts: ['allowed.test', 'other.test'], ports: [httpPort], scheme: 'http', tls: 'tunnel', methods: ['GET', 'HEAD'], websocket: false }], budgets: { ...DEFAULT_EGRESS_BUDGETS } } });
  t.after(async () => {
    await g.close();
    fs.rmSync(d, { recursive: true, force: true });
  });
  /** One request on a fresh tunnel: the raw answer. */
  const onTunnel = async (line: string, host: string): Promise<string> => {
    const c = await new Promise<{ status: number; socket: net.Socket }>((resolve, reject) => {
      const req = http.request({ socketPath: h.socketPath, method: 'CONNECT', path: `allowed.test:${httpPort}` });
      req.on('connect', (res, socket) => resolve({ status: res.statusCode ?? 0, socket }));
      req.on('error', reject);
      req.end();
    });
    assert.equal(c.status, 200);
    c.socket.write(`${line}\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    let got = '';
    c.socket.on('data', (d: Buffer) => (got += d.toString()));
    await new Promise((r) => c.socket.once('close', r));
    return got;
  };
  const ok = await onTunnel('GET /inside HTTP/1.1', `allowed.test:${httpPort}`);
  assert.match(ok, /^HTTP\/1\.1 200 [\s\S]*hello from allowed\.test/);
  const post = await onTunnel('POST /inside HTTP/1.1', `allowed.test:${httpPort}`);
  assert.match(post, /^HTTP\/1\.1 403 [\s\S]*X-Brig-Egress: method_not_allowed/i);
  const other = await onTunnel('GET /inside HTTP/1.1', `other.test:${httpPort}`);
  assert.match(other, /^HTTP\/1\.1 421 [\s\S]*X-Brig-Egress: host_mismatch/i);
  await new Promise((r) => setTimeout(r, 100));
  const conns = ledger.filter((e) => e.type === 'egress.conn' && e.runId === 'r-pic' && e.mode === 'plain' && e.scheme === 'http' && Array.isArray(e.methods));
  assert.ok(conns.some((e) => e.requests === 1 && (e.statusClasses as string[]).includes('2xx')), JSON.stringify(conns));
});
