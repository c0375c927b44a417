/**
 * Egress from inside real jails (NetworkMode none): a lease with egress rules reaches an
 * allowed host through the relay on the jail's own loopback and the gate beside broker.sock,
 * and nothing else. Everything on loopback: the upstreams on 127.0.0.2 (treated as public with
 * BRIG_EGRESS_TEST_PUBLIC_CIDRS), a fake DNS server on 127.0.0.53, a trap on 127.0.0.3.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { requireEngine } from '../../helpers/engine.js';
import { runCli } from '../../helpers/cli.js';
import { startModelServer, toolCallTurn } from '../../helpers/model-server.js';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/compose.js';
import { DockerJailDriver, ownerForHome } from '../../../src/jail/index.js';
import { startFakeDns, type FakeDns } from '../../helpers/fake-dns.js';
import { freePort, httpUpstream, httpsUpstream, testCert, trapUpstream, type Upstream } from '../../helpers/tls-upstream.js';

let dns: FakeDns;
const ups: Upstream[] = [];
let trap: Upstream;
let httpsPort = 0;
let httpPort = 0;

before(async () => {
  const cert = testCert(['allowed.test', 'other.test']);
  httpsPort = await freePort('127.0.0.2');
  httpPort = await freePort('127.0.0.2');
  ups.push(await httpsUpstream('127.0.0.2', httpsPort, cert));
  ups.push(await httpUpstream('127.0.0.2', httpPort, `http://private.test:${httpPort}/`));
  trap = await trapUpstream('127.0.0.3', httpsPort);
  dns = await startFakeDns({ 'allowed.test': ['127.0.0.2'], 'other.test': ['127.0.0.2'], 'denied.test': ['127.0.0.3'], 'private.test': ['10.0.0.5'], 'meta.test': ['::ffff:169.254.169.254'] });
});
after(async () => {
  for (const u of [...ups, trap]) await u?.close();
  await dns?.close();
});

function policy(): string {
  const hosts = '[allowed.test, other.test, private.test, meta.test]';
  return `version: 1
groups:
  workspace: { caps: [exec] }
  web: { caps: [net.egress] }
egress:
  rules:
    web: { hosts: ${hosts}, ports: [${httpsPort}], scheme: https }
    plain: { hosts: ${hosts}, ports: [${httpPort}], scheme: http, methods: [GET, HEAD] }
profiles:
  root:
    groups: [workspace, web]
    limits: { cpu: 1, memoryMb: 512, pids: 128, diskMb: 256, timeoutMs: 120000, maxSteps: 10, tokens: 1000, costUsd: 1, resultBytes: 1048576, maxChildren: 0, maxDepth: 1 }
    posture: { network: egress, runtime: docker-hardened, user: nonroot }
`;
}

// Runs inside the jail: every attempt's outcome, as data.
const PROBE = (P: number, H: number) => `export default async function () {
  const http = await import('node:http'); const tls = await import('node:tls'); const dns = await import('node:dns/promises'); const net = await import('node:net');
  const connect = (authority) => new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port: 3128, method: 'CONNECT', path: authority });
    req.on('connect', (res, socket) => resolve({ status: res.statusCode, reason: res.headers['x-brig-egress'], socket }));
    req.on('error', (e) => resolve({ status: 0, reason: e.code }));
    req.end();
  });
  const tlsGet = (socket, sni) => new Promise((resolve) => {
    const t = tls.connect({ socket, servername: sni, rejectUnauthorized: false });
    let body = '';
    t.on('secureConnect', () => t.write('GET / HTTP/1.1\\r\\nHost: ' + sni + '\\r\\nConnection: close\\r\\n\\r\\n'));
    t.on('data', (c) => (body += c));
    t.on('end', () => resolve(body || 'ERR:ended'));
    t.on('error', (e) => resolve('ERR:' + e.code));
    t.on('close', () => resolve(body || 'ERR:closed'));
  });
  const plain = (url) => new Promise((resolve) => {
    const u = new URL(url);
    const req = http.request({ host: '127.0.0.1', port: 3128, method: 'GET', path: url, headers: { host: u.host } }, (res) => {
      let b = '';
      res.on('data', (c) => (b += c));
      res.on('end', () => resolve({ status: res.statusCode, reason: res.headers['x-brig-egress'] || null, location: res.headers.location || null, body: b }));
    });
    req.on('error', (e) => resolve({ status: 0, reason: e.code }));
    req.end();
  });
  const out = { proxy: process.env.HTTPS_PROXY };
  const a = await connect('allowed.test:${P}');
  out.allowed = a.status === 200 ? await tlsGet(a.socket, 'allowed.test') : 'status ' + a.status;
  const f = await connect('allowed.test:${P}');
  out.fronted = f.status === 200 ? await tlsGet(f.socket, 'other.test') : 'status ' + f.status;
  for (const [k, auth] of [['denied', 'denied.test:${P}'], ['literal', '127.0.0.2:${P}'], ['decimal', '2130706434:${P}'], ['hex', '0x7f.2:${P}']]) {
    const d = await connect(auth);
    out[k] = [d.status, d.reason];
    d.socket?.destroy();
  }
  for (const k of ['private', 'meta']) {
    const p = await connect(k + '.test:${P}');
    out[k] = p.status === 200 ? await tlsGet(p.socket, k + '.test') : 'status ' + p.status;
  }
  const rd = await plain('http://allowed.test:${H}/redirect');
  out.redirect = [rd.status, rd.location];
  const rf = rd.location ? await plain(rd.location) : { status: -1 };
  out.follow = [rf.status, rf.reason];
  const ok = await plain('http://other.test:${H}/x');
  out.plain = ok.body;
  // Node's own fetch(): through the relay too (brig's preload sets its dispatcher from HTTP_PROXY).
  out.fetched = await fetch('http://other.test:${H}/fetched').then((r) => r.text(), (e) => 'ERR:' + (e.cause?.code ?? e.message));
  out.fetchDenied = await fetch('http://denied.test:${H}/x').then((r) => [r.status, r.headers.get('x-brig-egress')], (e) => 'ERR:' + (e.cause?.code ?? e.message));
  try { await dns.lookup('allowed.test'); out.dns = 'resolved'; } catch (e) { out.dns = e.code; }
  out.direct = await new Promise((r) => { const s = net.connect(${P}, '127.0.0.2'); s.on('connect', () => { r('connected'); s.destroy(); }); s.on('error', (e) => r(e.code)); });
  return out;
}`;

// req: jail:network-none jail:egress-gated
test('[INV-2] egress from inside a real jail: the allowed host is reached through the gate; other hosts, IP literals, private answers and a redirect to a private name are refused; no resolver, no route', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-egress-'));
  fs.writeFileSync(path.join(home, 'policy.yaml'), policy());
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_EGRESS_RESOLVERS: dns.server, BRIG_EGRESS_TEST_PUBLIC_CIDRS: '127.0.0.2/32' }), { reconcile: false });
  try {
    await c.supervisor.start();
    const r = await c.supervisor.spawn({ task: 'egress probe', script: PROBE(httpsPort, httpPort), egress: { rules: ['web', 'plain'] }, timeout: 90_000 });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', JSON.stringify(r.value.error ?? null));
    const v = r.value.result as Record<string, unknown>;
    assert.equal(v.proxy, 'http://127.0.0.1:3128');
    assert.match(String(v.allowed), /hello from allowed\.test/);
    assert.match(String(v.fronted), /^ERR/, 'another SNI inside an allowed tunnel is cut');
    assert.deepEqual(v.denied, [403, 'host_not_allowed']);
    assert.deepEqual(v.literal, [403, 'host_not_allowed']);
    assert.deepEqual(v.decimal, [403, 'host_not_allowed']);
    assert.deepEqual(v.hex, [403, 'host_not_allowed']);
    assert.match(String(v.private), /^ERR/);
    assert.match(String(v.meta), /^ERR/);
    assert.deepEqual(v.redirect, [302, `http://private.test:${httpPort}/`]);
    assert.deepEqual(v.follow, [403, 'address_not_allowed']);
    assert.match(String(v.plain), /hello from other\.test/);
    assert.match(String(v.fetched), /hello from other\.test/, 'node\'s fetch() goes through the relay');
    assert.deepEqual(v.fetchDenied, [403, 'host_not_allowed'], 'and the gate decides it like any client');
    assert.notEqual(v.dns, 'resolved', 'a name lookup from inside fails');
    assert.notEqual(v.direct, 'connected', 'no route past the gate');
    assert.equal(dns.queries.get('denied.test') ?? 0, 0, 'a denied name caused no DNS query');
    assert.equal(trap.accepted, 0);
    await c.ledger.flush();
    const events = fs.readdirSync(path.join(home, 'ledger')).flatMap((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8').split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>);
    const mine = events.filter((e) => e.runId === r.value.id && String(e.type).startsWith('egress.'));
    assert.ok(mine.some((e) => e.type === 'egress.conn' && e.host === 'allowed.test' && e.ruleId === 'web'));
    const reasons = mine.filter((e) => e.type === 'egress.deny').map((e) => e.reason);
    for (const want of ['host_not_allowed', 'sni_mismatch', 'address_not_allowed']) assert.ok(reasons.includes(want), `${want} in ${reasons.join(',')}`);
    assert.ok(!mine.some((e) => JSON.stringify(e).includes('/redirect')), 'no path in the ledger');
    assert.ok(mine.some((e) => e.type === 'egress.closed'), 'the socket closed with the run');
    // Metrics count connections and bytes by rule, refusals by reason.
    assert.ok((c.metrics.value('brig_egress_connections_total', { rule: 'web' }) ?? 0) >= 1);
    assert.ok((c.metrics.value('brig_egress_bytes_total', { rule: 'web', direction: 'down' }) ?? 0) > 0);
    assert.ok((c.metrics.value('brig_egress_refusals_total', { reason: 'host_not_allowed' }) ?? 0) >= 4);
  } finally {
    await c.close().catch(() => {});
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    await fs.promises.rm(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
});

test('a command child gets the relay too; without an egress ask the same lease has no egress socket and the proxy fails closed', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-egress-'));
  fs.writeFileSync(path.join(home, 'policy.yaml'), policy());
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_EGRESS_RESOLVERS: dns.server, BRIG_EGRESS_TEST_PUBLIC_CIDRS: '127.0.0.2/32' }), { reconcile: false });
  try {
    await c.supervisor.start();
    const url = `http://allowed.test:${httpPort}/cmd`;
    const argv = ['/bin/sh', '-c', `wget -q -O /workspace/out/got.txt ${url} && cat /workspace/out/got.txt`];
    const yes = await c.supervisor.spawn({ task: 'wget', kind: 'command', argv, egress: { rules: ['plain'] }, timeout: 60_000 });
    assert.ok(yes.ok, yes.ok ? '' : yes.error.message);
    assert.equal(yes.value.endReason, 'completed', JSON.stringify(yes.value.error ?? null));
    const no = await c.supervisor.spawn({ task: 'wget', kind: 'command', argv: ['/bin/sh', '-c', `http_proxy=http://127.0.0.1:3128 wget -q -O - ${url} || test ! -e /run/brig/egress.sock`], timeout: 60_000 });
    assert.ok(no.ok, no.ok ? '' : no.error.message);
    assert.equal(no.value.endReason, 'completed', 'wget failed and there is no egress socket: egress is never inherited');
    const negative = await c.supervisor.spawn({ task: 'wget', kind: 'command', argv: ['/bin/sh', '-c', `http_proxy=http://127.0.0.1:3128 wget -q -O - ${url}`], timeout: 60_000 });
    assert.ok(negative.ok);
    assert.equal(negative.value.endReason, 'failed', 'the control: the same wget without egress fails');
  } finally {
    await c.close().catch(() => {});
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    await fs.promises.rm(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
});

test('brig spawn --egress RULE: a policy rule id or a narrowed host:port reaches its host from a jail; a host outside every rule gets no egress', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-egress-'));
  fs.writeFileSync(path.join(home, 'policy.yaml'), policy());
  const env = { BRIG_EGRESS_RESOLVERS: dns.server, BRIG_EGRESS_TEST_PUBLIC_CIDRS: '127.0.0.2/32' };
  const get = (host: string) => ['--', '/bin/sh', '-c', `wget -q -O - http://${host}:${httpPort}/cli`];
  try {
    const byId = await runCli(['spawn', '--json', '--egress', 'plain', ...get('allowed.test')], { home, env });
    assert.equal(byId.code, 0, byId.err);
    // brig explain shows the lease's egress rules and what the run did with them, from the ledger.
    const ex = await runCli(['explain', JSON.parse(byId.out).runId as string], { home, env });
    assert.equal(ex.code, 0, ex.err);
    assert.match(ex.out, /egress rule plain: allowed\.test, other\.test, private\.test, meta\.test port \d+ http GET\|HEAD/);
    assert.match(ex.out, /egress: 1 connection\(s\) \(plain 1; \d+ B up, \d+ B down\), 0 refused/);
    assert.match(ex.out, /egress: 1 to loopback addresses egress\.testPublicCidrs treats as public \(a test-only setting\)/);
    const narrowed = await runCli(['spawn', '--json', '--egress', `other.test:${httpPort},scheme=http,methods=GET`, ...get('other.test')], { home, env });
    assert.equal(narrowed.code, 0, narrowed.err);
    const run = JSON.parse(narrowed.out).run as { leaseId: string };
    const show = await runCli(['lease', 'show', run.leaseId, '--json'], { home, env });
    const lease = JSON.parse(show.out).lease as { egress?: { rules: { id: string; hosts: string[]; methods?: string[] }[] } };
    assert.deepEqual(lease.egress?.rules.map((r) => [r.id, r.hosts, r.methods]), [['plain', ['other.test'], ['GET']]], 'the narrowed copy takes the policy rule id');
    // The narrowed rule names other.test only: allowed.test is refused by the gate.
    const outside = await runCli(['spawn', '--json', '--egress', `other.test:${httpPort},scheme=http`, ...get('allowed.test')], { home, env });
    assert.notEqual(outside.code, 0, 'a host outside the narrowed rule is refused');
    const wider = await runCli(['spawn', '--json', '--egress', `*.test:${httpPort},scheme=http`, ...get('allowed.test')], { home, env });
    assert.notEqual(wider.code, 0, 'a rule wider than the policy is refused: no egress');
  } finally {
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    await fs.promises.rm(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
});

test('an agent child with egress: its shell tool reaches the allowed host through the relay and a denied one gets 403', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-egress-'));
  const withAgents = policy()
    .replace('  workspace: { caps: [exec] }', '  workspace: { caps: [exec], tools: [shell, read_file, write_file] }\n  models: { caps: [llm], tools: [llm_complete] }')
    .replace('groups: [workspace, web]', 'groups: [workspace, web, models]')
    .replace('tokens: 1000,', 'tokens: 200000,');
  fs.writeFileSync(path.join(home, 'policy.yaml'), withAgents);
  const cmd = `wget -q -O - http://allowed.test:${httpPort}/agent; echo; wget -q -O - http://denied.test:${httpPort}/ 2>&1 || echo DENIED`;
  const m = await startModelServer({ script: [() => toolCallTurn('shell', { command: cmd }), () => toolCallTurn('finish', { answer: 'fetched' })] });
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_EGRESS_RESOLVERS: dns.server, BRIG_EGRESS_TEST_PUBLIC_CIDRS: '127.0.0.2/32', BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_API: 'openai-chat', BRIG_MODEL_CONTEXT_WINDOW: '32000' }), { reconcile: false });
  try {
    await c.supervisor.start();
    const r = await c.supervisor.spawn({ task: 'fetch the page', kind: 'agent', agent: 'general', egress: { rules: ['plain'] }, timeout: 90_000 });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', `${r.value.error?.message} ${r.value.stderrTail}`);
    const last = m.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] };
    const tool = last.messages.filter((x) => x.role === 'tool').map((x) => String(x.content)).join('\n');
    assert.match(tool, /hello from allowed\.test/);
    assert.match(tool, /DENIED|403/);
    assert.equal(dns.queries.get('denied.test') ?? 0, 0);
  } finally {
    await c.close().catch(() => {});
    await m.close();
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    await fs.promises.rm(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
});
