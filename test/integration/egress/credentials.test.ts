/**
 * Credential bindings on real sockets, real TLS and the fake DNS, all on loopback: the gate sets
 * the operator's secret on inspected requests to the binding's host and paths only, after
 * removing the client's credential headers; masks the secret's echo in the response; refuses a
 * request carrying the secret or the run's placeholder (headers, target, body) to any other host;
 * refuses a bound request whose secret is not configured; and never writes either to the ledger.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, test } from 'node:test';
import { EgressGate, egressCredentials, makeResolver, placeholderFor, systemClassifier, type EgressRunHandle } from '../../../src/egress/index.js';
import { Secret } from '../../../src/config/index.js';
import type { LedgerEvent } from '../../../src/ledger/index.js';
import { DEFAULT_EGRESS_BUDGETS } from '../../../src/lease/index.js';
import type { EgressGrant } from '../../../src/protocol/index.js';
import { startFakeDns, type FakeDns } from '../../helpers/fake-dns.js';
import { freePort, echoUpstream, httpUpstream, testCert, type EchoUpstream, type Upstream } from '../../helpers/tls-upstream.js';

const SECRET = 'sk-live-7f3a9c1e5b2d4806aa11';
let dns: FakeDns;
let up: EchoUpstream;
let plainUp: Upstream;
let port = 0;
let plainPort = 0;
const ledger: LedgerEvent[] = [];
let gate: EgressGate;
let handle: EgressRunHandle;
let dir: string;
let placeholder = '';
const credentials = () =>
  egressCredentials(
    {
      api: { secretEnv: 'API_TOKEN', header: 'authorization', format: 'Bearer {}', hosts: ['allowed.test'], paths: ['/v1/'], placeholderEnv: 'API_KEY' },
      unset: { secretEnv: 'NOT_SET', header: 'x-api-key', format: '{}', hosts: ['unset.test'] },
    },
    { API_TOKEN: new Secret(SECRET) },
  );


before(async () => {
  const cert = testCert(['allowed.test', 'other.test', 'unset.test']);
  port = await freePort('127.0.0.2');
  up = await echoUpstream('127.0.0.2', port, cert);
  plainPort = await freePort('127.0.0.2');
  plainUp = await httpUpstream('127.0.0.2', plainPort);
  dns = await startFakeDns({ 'allowed.test': ['127.0.0.2'], 'other.test': ['127.0.0.2'], 'unset.test': ['127.0.0.2'], 'plain.test': ['127.0.0.2'] });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-eg-cred-'));
  const grant: EgressGrant = {
    rules: [
      { id: 'api', hosts: ['allowed.test'], ports: [port], scheme: 'https', tls: 'inspect', methods: ['GET', 'POST'], paths: ['/v1/', '/v2/'], websocket: false, credential: 'api' },
      { id: 'other', hosts: ['other.test'], ports: [port], scheme: 'https', tls: 'inspect', methods: ['GET', 'POST'], websocket: false },
      { id: 'unset', hosts: ['unset.test'], ports: [port], scheme: 'https', tls: 'inspect', methods: ['GET'], websocket: false, credential: 'unset' },
      { id: 'plain', hosts: ['plain.test'], ports: [plainPort], scheme: 'http', tls: 'tunnel', methods: ['GET'], websocket: false },
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
    credentials: credentials(),
  });
  handle = await gate.openRun({ runId: 'r-cred', leaseId: 'l-cred', dir, grant });
  placeholder = gate.placeholders('r-cred', grant).API_KEY ?? '';
});

after(async () => {
  await gate?.close();
  await up?.close();
  await plainUp?.close();
  await dns?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

interface Got {
  status: number;
  reason: string | undefined;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** CONNECT, TLS trusting the run's CA, one request; `body` is sent in the given pieces (a needle split across them). */
async function inspected(host: string, o: { method?: string; path: string; headers?: Record<string, string>; body?: string[] }): Promise<Got> {
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    const req = http.request({ socketPath: handle.socketPath, method: 'CONNECT', path: `${host}:${port}` });
    req.on('connect', (res, s) => (res.statusCode === 200 ? resolve(s) : reject(new Error(`CONNECT ${res.statusCode}`))));
    req.on('error', reject);
    req.end();
  });
  const ca = fs.readFileSync(path.join(dir, 'egress-ca.pem'), 'utf8');
  const t = await new Promise<tls.TLSSocket>((resolve, reject) => {
    const s = tls.connect({ socket, servername: host, ca }, () => resolve(s));
    s.once('error', reject);
  });
  return await new Promise((resolve) => {
    const req = http.request({ createConnection: () => t, method: o.method ?? 'GET', path: o.path, headers: { host: `${host}:${port}`, connection: 'close', ...(o.headers ?? {}) } });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reason: res.headers['x-brig-egress'] as string | undefined, headers: res.headers, body }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, reason: 'aborted', headers: res.headers, body }));
    });
    req.on('error', () => resolve({ status: 0, reason: 'connection closed', headers: {}, body: '' }));
    void (async () => {
      for (const piece of o.body ?? []) {
        req.write(piece);
        await new Promise((r) => setTimeout(r, 50));
      }
      req.end();
    })();
  });
}

const echoed = (g: Got) => JSON.parse(g.body) as { headers: Record<string, string>; url: string; body: string };
const seenSince = (n: number) => up.seen.slice(n);

// req: jail:egress-credentials
test('[INV-2] a binding: the secret is set on its own host and path, the client’s credential headers removed, its echo masked before the response reaches the child', async () => {
  const before = up.seen.length;
  const r = await inspected('allowed.test', { path: '/v1/me', headers: { authorization: `Bearer ${placeholder}`, cookie: 'session=child', 'x-api-key': 'child-key' } });
  assert.equal(r.status, 200, JSON.stringify(r));
  const [seen] = seenSince(before);
  assert.ok(seen, 'the upstream got the request');
  assert.equal(seen.headers.authorization, `Bearer ${SECRET}`, 'the upstream got the operator’s secret in place of the child’s placeholder');
  assert.equal(seen.headers.cookie, undefined, 'the client’s cookie removed');
  assert.equal(seen.headers['x-api-key'], undefined, 'the client’s x-api-key removed');
  assert.equal(seen.headers['accept-encoding'], 'identity', 'asked unencoded, so the echo can be scanned');
  // The upstream echoed the secret in a header and in the body: the child sees neither.
  assert.ok(!r.body.includes(SECRET) && !JSON.stringify(r.headers).includes(SECRET), 'the secret never reaches the child');
  assert.equal(echoed(r).headers.authorization, `Bearer ${'*'.repeat(SECRET.length)}`, 'masked to the same length');
  assert.equal(r.headers['x-echo-auth'], `Bearer ${'*'.repeat(SECRET.length)}`);
});

// req: jail:egress-credentials
test('[INV-2] a binding covers its paths only: a request on the same rule outside them goes without the secret, and without the client’s credential headers', async () => {
  const before = up.seen.length;
  const r = await inspected('allowed.test', { path: '/v2/elsewhere', headers: { authorization: 'Bearer child-own' } });
  assert.equal(r.status, 200, JSON.stringify(r));
  const [seen] = seenSince(before);
  assert.equal(seen!.headers.authorization, undefined, 'neither the secret nor the client’s header');
});

// req: jail:egress-credentials
test('[INV-2] the placeholder or the secret to another host is refused before it leaves: in a header, the query (encoded too) or a body split across writes', async () => {
  const before = up.seen.length;
  const header = await inspected('other.test', { path: '/x', headers: { authorization: `Bearer ${placeholder}` } });
  assert.deepEqual([header.status, header.reason], [403, 'credential_leak']);
  const query = await inspected('other.test', { path: `/x?k=${encodeURIComponent(placeholder)}` });
  assert.deepEqual([query.status, query.reason], [403, 'credential_leak']);
  const secretInHeader = await inspected('other.test', { path: '/x', headers: { 'x-custom': SECRET } });
  assert.deepEqual([secretInHeader.status, secretInHeader.reason], [403, 'credential_leak']);
  assert.equal(seenSince(before).length, 0, 'none of the three reached the upstream');
  // A body: the placeholder split over two writes; the gate holds back enough never to send any of it.
  const half = Math.floor(placeholder.length / 2);
  const body = await inspected('other.test', { method: 'POST', path: '/upload', headers: { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' }, body: ['x'.repeat(3000) + placeholder.slice(0, half), placeholder.slice(half) + 'tail'] });
  assert.notEqual(body.status, 200, 'the body carrying the placeholder was cut');
  for (const s of seenSince(before)) assert.ok(!s.body.includes(placeholder.slice(0, 8)), 'no part of the placeholder reached the upstream');
  // The same body without a needle goes through.
  const clean = await inspected('other.test', { method: 'POST', path: '/upload', headers: { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' }, body: ['x'.repeat(3000), 'tail'] });
  assert.equal(clean.status, 200);
  assert.equal(echoed(clean).body, `${'x'.repeat(3000)}tail`, 'a clean body arrives whole (the held-back tail is sent at the end)');
});

// req: jail:egress-credentials
test('[INV-2] plain HTTP carrying the placeholder to an allowed host is refused; without it, forwarded', async () => {
  const send = (headers: Record<string, string>) =>
    new Promise<{ status: number; reason: string | undefined }>((resolve, reject) => {
      const req = http.request({ socketPath: handle.socketPath, method: 'GET', path: `http://plain.test:${plainPort}/p`, headers: { host: `plain.test:${plainPort}`, ...headers } });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, reason: res.headers['x-brig-egress'] as string | undefined }));
      });
      req.on('error', reject);
      req.end();
    });
  const accepted = plainUp.accepted;
  assert.deepEqual(await send({ 'x-token': placeholder }), { status: 403, reason: 'credential_leak' });
  assert.equal(plainUp.accepted, accepted, 'nothing dialled for the refused request');
  assert.equal((await send({})).status, 200);
});

// req: jail:egress-credentials
test('[INV-2] a bound request whose secret the supervisor does not hold is refused credential_unavailable; an encoded response to an injected request is refused response_unscannable', async () => {
  const before = up.seen.length;
  const unset = await inspected('unset.test', { path: '/x' });
  assert.deepEqual([unset.status, unset.reason], [403, 'credential_unavailable']);
  assert.equal(seenSince(before).length, 0);
  const gz = await inspected('allowed.test', { path: '/v1/gzip' });
  assert.deepEqual([gz.status, gz.reason], [502, 'response_unscannable']);
  assert.ok(!gz.body.includes(SECRET));
});

// req: jail:egress-credentials
test('[INV-2] the ledger never holds the secret or the placeholder; a leak names its binding, an inspected connection counts its injections', async () => {
  await new Promise((r) => setTimeout(r, 200));
  const text = JSON.stringify(ledger);
  assert.ok(!text.includes(SECRET), 'no secret in the ledger');
  assert.ok(!text.includes(placeholder), 'no placeholder in the ledger');
  const leaks = ledger.filter((e) => e.type === 'egress.deny' && e.reason === 'credential_leak');
  assert.ok(leaks.length >= 4, JSON.stringify(leaks));
  assert.ok(leaks.every((e) => e.credential === 'api'), 'each leak names the binding whose needle it carried');
  const conn = ledger.find((e) => e.type === 'egress.conn' && e.ruleId === 'api' && (e.credentialInjected as number) >= 1);
  assert.ok(conn, 'an egress.conn with its injections counted');
  assert.equal(conn.credential, 'api');
});

test('a run’s placeholder: stable for the run (a restarted gate derives it again), different per run, unrelated to the secret', async () => {
  const creds = credentials();
  const again = new EgressGate({ ledger: { append: () => {} }, resolver: makeResolver([dns.server]), classify: () => 'global', policy: { denyHosts: [] }, credentials: creds });
  const grant: EgressGrant = { rules: [{ id: 'api', hosts: ['allowed.test'], ports: [port], scheme: 'https', tls: 'inspect', websocket: false, credential: 'api' }], budgets: { ...DEFAULT_EGRESS_BUDGETS } };
  assert.deepEqual(again.placeholders('r-cred', grant), { API_KEY: placeholder });
  assert.notEqual(again.placeholders('r-other', grant).API_KEY, placeholder);
  assert.equal(placeholderFor(creds.api!, 'r-cred'), placeholder);
  assert.ok(!placeholder.includes(SECRET.slice(0, 8)));
  assert.deepEqual(again.placeholders('r-cred', { rules: [{ ...grant.rules[0]!, credential: undefined }], budgets: grant.budgets } as EgressGrant), {}, 'no binding named, no placeholder');
});
