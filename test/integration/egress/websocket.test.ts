/**
 * Websockets through the gate on real sockets, all on loopback: `ws://` as an absolute-form
 * upgrade and `wss://` on an inspected connection reach an upstream only under a rule that
 * allows websocket; the handshake is decided like any request (and gets a credential binding's
 * secret, whose echo comes back masked); the frames are piped unread, both ways, within the
 * budgets; everything else is refused `upgrade_refused` before anything is dialled.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, test } from 'node:test';
import { EgressGate, egressCredentials, makeResolver, systemClassifier, type EgressRunHandle } from '../../../src/egress/index.js';
import { Secret } from '../../../src/config/index.js';
import type { LedgerEvent } from '../../../src/ledger/index.js';
import { DEFAULT_EGRESS_BUDGETS } from '../../../src/lease/index.js';
import type { EgressGrant } from '../../../src/protocol/index.js';
import { startFakeDns, type FakeDns } from '../../helpers/fake-dns.js';
import { freePort, testCert } from '../../helpers/tls-upstream.js';

const SECRET = 'ws-secret-0a1b2c3d4e5f6789';
let dns: FakeDns;
let wss: https.Server;
let ws: http.Server;
let tlsPort = 0;
let plainPort = 0;
const upgrades: { host: string; auth: string | undefined }[] = [];
const ledger: LedgerEvent[] = [];
let gate: EgressGate;
let handle: EgressRunHandle;
let dir: string;


/** Answers 101, says which authorization it got, then echoes every byte. */
function echoUpgrade(req: http.IncomingMessage, sock: net.Socket, head: Buffer): void {
  upgrades.push({ host: String(req.headers.host), auth: req.headers.authorization });
  sock.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
  sock.write(`auth=${req.headers.authorization ?? 'none'}\n`);
  if (head.length > 0) sock.write(head);
  sock.on('data', (d: Buffer) => sock.write(d));
  sock.on('end', () => sock.end());
  sock.on('error', () => {});
}

before(async () => {
  const cert = testCert(['allowed.test', 'other.test']);
  tlsPort = await freePort('127.0.0.2');
  plainPort = await freePort('127.0.0.2');
  wss = https.createServer({ ...cert }, (_q, r) => r.end('no'));
  wss.on('upgrade', echoUpgrade);
  ws = http.createServer((_q, r) => r.end('no'));
  ws.on('upgrade', echoUpgrade);
  await new Promise<void>((r) => wss.listen(tlsPort, '127.0.0.2', () => r()));
  await new Promise<void>((r) => ws.listen(plainPort, '127.0.0.2', () => r()));
  dns = await startFakeDns({ 'allowed.test': ['127.0.0.2'], 'other.test': ['127.0.0.2'], 'plain.test': ['127.0.0.2'], 'noplain.test': ['127.0.0.2'] });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-eg-ws-'));
  const grant: EgressGrant = {
    rules: [
      { id: 'wss', hosts: ['allowed.test'], ports: [tlsPort], scheme: 'https', tls: 'inspect', methods: ['GET'], paths: ['/socket'], websocket: true, credential: 'api' },
      { id: 'nows', hosts: ['other.test'], ports: [tlsPort], scheme: 'https', tls: 'inspect', methods: ['GET'], websocket: false },
      { id: 'ws', hosts: ['plain.test'], ports: [plainPort], scheme: 'http', tls: 'tunnel', methods: ['GET'], websocket: true },
      { id: 'nows-plain', hosts: ['noplain.test'], ports: [plainPort], scheme: 'http', tls: 'tunnel', methods: ['GET'], websocket: false },
    ],
    budgets: { ...DEFAULT_EGRESS_BUDGETS },
  };
  gate = new EgressGate({
    ledger: { append: (e) => void ledger.push(e) },
    resolver: makeResolver([dns.server]),
    classify: systemClassifier({ testPublicCidrs: ['127.0.0.2/32'] }),
    policy: { denyHosts: [] },
    helloTimeoutMs: 3000,
    upstreamCa: cert.cert,
    credentials: egressCredentials({ api: { secretEnv: 'WS_TOKEN', header: 'authorization', format: 'Bearer {}', hosts: ['allowed.test'] } }, { WS_TOKEN: new Secret(SECRET) }),
  });
  handle = await gate.openRun({ runId: 'r-ws', leaseId: 'l-ws', dir, grant });
});

after(async () => {
  await gate?.close();
  for (const s of [wss, ws]) {
    s?.closeAllConnections();
    await new Promise<void>((r) => (s ? s.close(() => r()) : r()));
  }
  await dns?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Reads from a socket until `want` matches what came (or it closes, or 3 s pass). */
function readUntil(s: net.Socket, want: RegExp): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const done = () => {
      s.off('data', on);
      clearTimeout(timer);
      resolve(got);
    };
    const on = (c: Buffer) => {
      got += c.toString('latin1');
      if (want.test(got)) done();
    };
    const timer = setTimeout(done, 3000);
    s.on('data', on);
    s.once('close', done);
  });
}

const handshake = (target: string, host: string, extra = '') => `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`;

async function overTls(host: string, target: string, extra = ''): Promise<{ s: tls.TLSSocket; first: string }> {
  const raw = await new Promise<net.Socket>((resolve, reject) => {
    const req = http.request({ socketPath: handle.socketPath, method: 'CONNECT', path: `${host}:${tlsPort}` });
    req.on('connect', (res, s) => (res.statusCode === 200 ? resolve(s) : reject(new Error(`CONNECT ${res.statusCode}`))));
    req.on('error', reject);
    req.end();
  });
  const ca = fs.readFileSync(path.join(dir, 'egress-ca.pem'), 'utf8');
  const s = await new Promise<tls.TLSSocket>((resolve, reject) => {
    const t = tls.connect({ socket: raw, servername: host, ca }, () => resolve(t));
    t.once('error', reject);
  });
  s.write(handshake(target, `${host}:${tlsPort}`, extra));
  return { s, first: await readUntil(s, /\r\n\r\n[\s\S]*\n|^HTTP\/1\.1 [45]\d\d[\s\S]*\r\n\r\n/) };
}

async function overPlain(host: string, target: string): Promise<{ s: net.Socket; first: string }> {
  const s = net.connect(handle.socketPath);
  await new Promise((r) => s.once('connect', r));
  s.write(handshake(target, `${host}:${plainPort}`));
  return { s, first: await readUntil(s, /\r\n\r\n[\s\S]*\n|^HTTP\/1\.1 [45]\d\d[\s\S]*\r\n\r\n/) };
}

// req: jail:egress-inspect
test('[INV-2] wss:// on an inspected connection under a websocket rule: 101, the secret set on the handshake and its echo masked, frames piped both ways', async () => {
  const { s, first } = await overTls('allowed.test', '/socket', 'Authorization: Bearer child-own\r\n');
  assert.match(first, /^HTTP\/1\.1 101 /);
  assert.match(first, new RegExp(`auth=Bearer \\*{${SECRET.length}}\\n`), 'the upstream’s echo of the secret comes back masked');
  assert.ok(!first.includes(SECRET));
  assert.deepEqual(upgrades.at(-1), { host: `allowed.test:${tlsPort}`, auth: `Bearer ${SECRET}` }, 'the upstream got the secret, not the child’s header');
  s.write('ping-1');
  assert.equal(await readUntil(s, /ping-1/), 'ping-1', 'a frame’s bytes come back at once (nothing held)');
  s.destroy();
  await new Promise((r) => setTimeout(r, 300));
  const conn = ledger.find((e) => e.type === 'egress.conn' && e.ruleId === 'wss' && e.credentialInjected === 1);
  assert.ok(conn, 'the inspected connection closed with its websocket, the injection counted');
  assert.deepEqual(conn.statusClasses, ['websocket']);
});

// req: jail:egress-inspect
test('[INV-2] websocket refused where the rule does not allow it or the path is outside it: 403 upgrade_refused / path_not_allowed, nothing upgraded upstream', async () => {
  const n = upgrades.length;
  const other = await overTls('other.test', '/socket');
  assert.match(other.first, /^HTTP\/1\.1 403 [\s\S]*X-Brig-Egress: upgrade_refused/);
  other.s.destroy();
  const outside = await overTls('allowed.test', '/elsewhere');
  assert.match(outside.first, /^HTTP\/1\.1 403 [\s\S]*X-Brig-Egress: path_not_allowed/);
  outside.s.destroy();
  const plainNo = await overPlain('noplain.test', `http://noplain.test:${plainPort}/socket`);
  assert.match(plainNo.first, /^HTTP\/1\.1 403 [\s\S]*X-Brig-Egress: upgrade_refused/);
  plainNo.s.destroy();
  assert.equal(upgrades.length, n, 'no upgrade reached an upstream');
});

// req: jail:egress-gated
test('[INV-2] ws:// as an absolute-form upgrade under a websocket rule: 101 from the vetted address, frames piped, one egress.conn of mode websocket at close', async () => {
  const { s, first } = await overPlain('plain.test', `http://plain.test:${plainPort}/socket`);
  assert.match(first, /^HTTP\/1\.1 101 /);
  assert.match(first, /auth=none\n/);
  assert.equal(upgrades.at(-1)!.host, `plain.test:${plainPort}`);
  s.write('ping-2');
  assert.equal(await readUntil(s, /ping-2/), 'ping-2');
  s.destroy();
  await new Promise((r) => setTimeout(r, 300));
  const conn = ledger.find((e) => e.type === 'egress.conn' && e.mode === 'websocket');
  assert.ok(conn, JSON.stringify(ledger.filter((e) => e.type === 'egress.conn')));
  assert.deepEqual([conn.ruleId, conn.host], ['ws', 'plain.test']);
  assert.ok((conn.bytesUp as number) > 6 && (conn.bytesDown as number) > 6);
  assert.ok(!JSON.stringify(ledger).includes('/socket') && !JSON.stringify(ledger).includes(SECRET), 'no path and no secret in the ledger');
});
