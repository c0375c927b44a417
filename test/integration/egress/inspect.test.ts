/**
 * `tls: inspect` on real sockets, real TLS and the fake DNS, all on loopback: the gate
 * terminates the client's TLS with a leaf from the run's own CA (ALPN pinned to http/1.1),
 * decides every request (Host, method, path prefix) and re-originates TLS to the upstream on
 * 127.0.0.2, verifying its certificate against the operator's upstream roots.
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
import { freePort, httpsUpstream, testCert, type Upstream } from '../../helpers/tls-upstream.js';

let dns: FakeDns;
let up: Upstream;
let port = 0;
let upstreamCert: { key: string; cert: string };
const ledger: LedgerEvent[] = [];
let gate: EgressGate;
let handle: EgressRunHandle;
let dir: string;


before(async () => {
  // The upstream's certificate names allowed.test only: other.test reaches the same server and must fail verification.
  upstreamCert = testCert(['allowed.test']);
  port = await freePort('127.0.0.2');
  up = await httpsUpstream('127.0.0.2', port, upstreamCert);
  dns = await startFakeDns({ 'allowed.test': ['127.0.0.2'], 'other.test': ['127.0.0.2'] });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-eg-inspect-'));
  const grant: EgressGrant = {
    rules: [{ id: 'api', hosts: ['allowed.test', 'other.test'], ports: [port], scheme: 'https', tls: 'inspect', methods: ['GET', 'HEAD'], paths: ['/v1/'], websocket: false }],
    budgets: { ...DEFAULT_EGRESS_BUDGETS },
  };
  gate = new EgressGate({
    ledger: { append: (e) => void ledger.push(e) },
    resolver: makeResolver([dns.server]),
    classify: systemClassifier({ testPublicCidrs: ['127.0.0.2/32'] }),
    policy: { denyHosts: [] },
    helloTimeoutMs: 3000,
    upstreamCa: upstreamCert.cert,
  });
  handle = await gate.openRun({ runId: 'r-inspect', leaseId: 'l-inspect', dir, grant });
});

after(async () => {
  await gate?.close();
  await up?.close();
  await dns?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** CONNECT, then TLS trusting only the run's CA bundle (offering h2 first), then one HTTP/1.1 request. */
async function inspected(host: string, o: { method?: string; path: string; hostHeader?: string }): Promise<{ status: number; reason: string | undefined; body: string; alpn: string | false | null; issuer: string }> {
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    const req = http.request({ socketPath: handle.socketPath, method: 'CONNECT', path: `${host}:${port}` });
    req.on('connect', (res, s) => (res.statusCode === 200 ? resolve(s) : reject(new Error(`CONNECT ${res.statusCode}`))));
    req.on('error', reject);
    req.end();
  });
  const ca = fs.readFileSync(path.join(dir, 'egress-ca.pem'), 'utf8');
  const t = await new Promise<tls.TLSSocket>((resolve, reject) => {
    const s = tls.connect({ socket, servername: host, ca, ALPNProtocols: ['h2', 'http/1.1'] }, () => resolve(s));
    s.once('error', reject);
  });
  const alpn = t.alpnProtocol;
  const issuer = String(t.getPeerCertificate().issuer.CN);
  return await new Promise((resolve, reject) => {
    const req = http.request({ createConnection: () => t, method: o.method ?? 'GET', path: o.path, headers: { host: o.hostHeader ?? `${host}:${port}`, connection: 'close' } });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reason: res.headers['x-brig-egress'] as string | undefined, body, alpn, issuer }));
    });
    req.on('error', reject);
    req.end();
  });
}

// req: jail:egress-inspect
test('[INV-2] inspect: TLS terminated with a leaf of the run CA, ALPN pinned to http/1.1, the request re-originated to the verified upstream; content-free egress.conn', async () => {
  const r = await inspected('allowed.test', { path: '/v1/items?q=secret-query' });
  assert.equal(r.status, 200);
  assert.match(r.body, /hello from allowed\.test/);
  assert.equal(r.alpn, 'http/1.1', 'the gate offers http/1.1 only, even to a client that prefers h2');
  assert.match(r.issuer, /^brig egress CA r-inspect/);
  await new Promise((res) => setTimeout(res, 100));
  const conn = ledger.find((e) => e.type === 'egress.conn' && e.mode === 'inspect');
  assert.ok(conn, 'an egress.conn record in mode inspect');
  assert.equal(conn.ruleId, 'api');
  assert.equal(conn.requests, 1);
  assert.deepEqual(conn.methods, ['GET']);
  assert.deepEqual(conn.statusClasses, ['2xx']);
  assert.ok((conn.bytesDown as number) > 0);
  assert.ok(!JSON.stringify(ledger).includes('secret-query') && !JSON.stringify(ledger).includes('/v1/items'), 'no path or query in the ledger');
});

// req: jail:egress-inspect
test('[INV-2] inspect: each request is decided — a path outside the prefixes, a method the rule does not allow, a Host other than the tunnel’s', async () => {
  const path1 = await inspected('allowed.test', { path: '/v2/items' });
  assert.deepEqual([path1.status, path1.reason], [403, 'path_not_allowed']);
  const dots = await inspected('allowed.test', { path: '/v1/../admin' });
  assert.deepEqual([dots.status, dots.reason], [403, 'path_not_allowed']);
  const post = await inspected('allowed.test', { method: 'POST', path: '/v1/items' });
  assert.deepEqual([post.status, post.reason], [403, 'method_not_allowed']);
  const host = await inspected('allowed.test', { path: '/v1/items', hostHeader: `other.test:${port}` });
  assert.deepEqual([host.status, host.reason], [421, 'host_mismatch']);
  for (const r of [path1, dots, post, host]) assert.doesNotMatch(r.body, /hello from/, 'a refused request never reached the upstream');
});

// req: jail:egress-inspect
test('[INV-2] inspect: the gate verifies the upstream — a certificate that does not name the host is 502 upstream_tls_failed', async () => {
  const r = await inspected('other.test', { path: '/v1/items' });
  assert.deepEqual([r.status, r.reason], [502, 'upstream_tls_failed']);
  assert.doesNotMatch(r.body, /hello from/);
});

// req: jail:egress-inspect
test('[INV-2] inspect: the CA key never touches disk — the run dir holds the socket and a bundle of certificates only, removed at close', async () => {
  const names = fs.readdirSync(dir).sort();
  assert.deepEqual(names, ['egress-ca.pem', 'egress.sock']);
  const bundle = fs.readFileSync(path.join(dir, 'egress-ca.pem'), 'utf8');
  assert.match(bundle, /BEGIN CERTIFICATE/);
  assert.doesNotMatch(bundle, /PRIVATE KEY/);
  assert.ok(bundle.includes(tls.rootCertificates[0]!), 'the bundle keeps the system roots (SSL_CERT_FILE replaces them for the child)');
  await handle.close();
  assert.deepEqual(fs.readdirSync(dir), []);
});
