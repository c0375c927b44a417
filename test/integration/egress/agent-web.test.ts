/**
 * The agents' `web` tools from inside real jails: web_fetch and web_search are HTTP clients in
 * the jail that reach only what the gate allows through the relay (a redirect to a denied host
 * is refused at its hop, with zero DNS queries for it); a big page is spilled like any tool
 * result; the prompt says the network is the gate's; a lead's `spawn` passes `egress` rule
 * ids, granted only inside a rule the lead holds. Loopback only: the upstream on 127.0.0.2
 * (treated as public with BRIG_EGRESS_TEST_PUBLIC_CIDRS), a fake DNS server on 127.0.0.53, a
 * trap on 127.0.0.3; the scripted model server on 127.0.0.1 stands in for a model.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, toolCallTurn, type RecordedRequest, type Turn } from '../../helpers/model-server.js';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/compose.js';
import { DockerJailDriver, ownerForHome } from '../../../src/jail/index.js';
import { startFakeDns, type FakeDns } from '../../helpers/fake-dns.js';
import { testCert, trapUpstream, type Upstream } from '../../helpers/tls-upstream.js';

let dns: FakeDns;
let trap: Upstream;
let site: http.Server;
let port = 0;
const seen: string[] = [];

before(async () => {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.2', () => r()));
  port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  site = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', `http://${req.headers.host}`);
    seen.push(`${req.method} ${req.headers.host} ${u.pathname}${u.search}`);
    if (u.pathname === '/hop') return void res.writeHead(302, { location: '/page' }).end();
    if (u.pathname === '/out') return void res.writeHead(302, { location: `http://denied.test:${port}/secret` }).end();
    if (u.pathname === '/page') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<html><head><title>Allowed page</title><script>var x = "SCRIPT-TEXT";</script></head><body><h1>Welcome from ${req.headers.host}</h1><p>Fetched through the gate. <a href="/next">next page</a></p></body></html>`);
    if (u.pathname === '/search') {
      const n = Number(u.searchParams.get('n') ?? 3);
      const results = Array.from({ length: n }, (_, i) => ({ title: `Result ${i + 1} for ${u.searchParams.get('q')}`, url: `http://allowed.test:${port}/r${i + 1}`, content: `snippet <b>${i + 1}</b>` }));
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results }));
    }
    if (u.pathname === '/big') return void res.writeHead(200, { 'content-type': 'text/plain' }).end(Array.from({ length: 8000 }, (_, i) => `line ${i} of the big page`).join('\n'));
    res.writeHead(404).end('no such page');
  });
  await new Promise<void>((r) => site.listen(port, '127.0.0.2', () => r()));
  trap = await trapUpstream('127.0.0.3', port);
  dns = await startFakeDns({ 'allowed.test': ['127.0.0.2'], 'other.test': ['127.0.0.2'], 'denied.test': ['127.0.0.3'] });
});
after(async () => {
  site?.closeAllConnections();
  await new Promise<void>((r) => (site ? site.close(() => r()) : r()));
  await trap?.close();
  await dns?.close();
});

function policy(): string {
  return `version: 1
groups:
  workspace: { caps: [exec], tools: [shell, read_file, write_file, list_files, grep_files] }
  models: { caps: [llm], tools: [llm_complete] }
  delegation: { caps: [spawn], tools: [spawn, wait_children] }
  web: { caps: [net.egress], tools: [web_fetch, web_search] }
egress:
  rules:
    plain: { hosts: [allowed.test, other.test], ports: [${port}], scheme: http, methods: [GET, HEAD] }
    other: { hosts: [other.test], ports: [${port}], scheme: http }
profiles:
  root:
    groups: [workspace, web, models, delegation]
    limits: { cpu: 1, memoryMb: 512, pids: 128, diskMb: 256, timeoutMs: 180000, maxSteps: 20, tokens: 400000, costUsd: 1, resultBytes: 1048576, maxChildren: 3, maxDepth: 2 }
    posture: { network: egress, runtime: docker-hardened, user: nonroot }
`;
}

const systemOf = (r: RecordedRequest): string => String((r.body as { messages: { role: string; content: unknown }[] }).messages.find((m) => m.role === 'system')?.content ?? '');
const toolResults = (r: RecordedRequest): string[] => (r.body as { messages: { role: string; content: unknown }[] }).messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
const toolNames = (r: RecordedRequest): string[] => ((r.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((t) => t.function.name);
const taskOf = (r: RecordedRequest): string => /# Task\n\n(\S+)/.exec(systemOf(r))?.[1] ?? '?';

// req: jail:egress-gated
test('[INV-2] an agent\'s web_fetch and web_search reach only what its lease allows, through the gate from inside the jail; a lead passes egress by rule id, only inside its own rules', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-egress-web-'));
  fs.writeFileSync(path.join(home, 'policy.yaml'), policy());
  const base = `http://allowed.test:${port}`;
  const steps: Record<string, Turn[]> = {
    LEAD: [
      toolCallTurn('web_fetch', { url: `${base}/hop` }),
      toolCallTurn('web_fetch', { url: `${base}/out` }),
      toolCallTurn('web_search', { query: 'brig egress', count: 2 }),
      toolCallTurn('web_fetch', { url: `${base}/big` }),
      toolCallTurn('spawn', { task: 'CHILD-OK fetch the other page', egress: ['plain'] }),
      toolCallTurn('spawn', { task: 'CHILD-WIDE ask for more than the lead has', egress: ['other'] }),
      toolCallTurn('finish', { answer: 'lead done' }),
    ],
    'CHILD-OK': [toolCallTurn('web_fetch', { url: `http://other.test:${port}/page` }), toolCallTurn('finish', { answer: 'child fetched' })],
    'CHILD-WIDE': [toolCallTurn('finish', { answer: 'no web here' })],
  };
  const m = await startModelServer({ script: (req) => steps[taskOf(req)]?.[toolResults(req).length] ?? toolCallTurn('finish', { answer: `unscripted ${taskOf(req)}` }) });
  const c = await compose(loadConfig({
    BRIG_HOME: home, BRIG_EGRESS_RESOLVERS: dns.server, BRIG_EGRESS_TEST_PUBLIC_CIDRS: '127.0.0.2/32', BRIG_EGRESS_SEARCH_URL: `${base}/search?q={query}&n={count}`,
    BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_API: 'openai-chat', BRIG_MODEL_CONTEXT_WINDOW: '64000',
  }), { reconcile: false });
  try {
    await c.supervisor.start();
    const r = await c.supervisor.spawn({ task: 'LEAD use the web', kind: 'agent', agent: 'general', egress: { rules: ['plain'] }, timeout: 170_000 });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', `${r.value.error?.message} ${r.value.stderrTail}`);
    const lead = m.requests.filter((q) => taskOf(q) === 'LEAD');
    const last = lead.at(-1)!;
    const [hop, out, search, big, childOk, childWide] = toolResults(last);
    // The prompt and the tools say the network is the gate's.
    assert.match(systemOf(last), /whose only network is brig's egress gate/);
    assert.doesNotMatch(systemOf(last), /with no network/);
    assert.ok(['web_fetch', 'web_search'].every((n) => toolNames(last).includes(n)), toolNames(last).join(','));
    // A redirect followed by hand, HTML as text (no script).
    assert.match(String(hop), /URL: http:\/\/allowed\.test:\d+\/page\nRedirected from: http:\/\/allowed\.test:\d+\/hop\nStatus: 200/);
    assert.match(String(hop), /Allowed page\n\n# Welcome from allowed\.test:\d+\n\nFetched through the gate\. next page \(http:\/\/allowed\.test:\d+\/next\)/);
    assert.ok(!String(hop).includes('SCRIPT-TEXT'));
    // A redirect to a host no rule names is refused at its hop, before any DNS.
    assert.match(String(out), /http:\/\/denied\.test:\d+\/secret: brig's egress gate refused it: host_not_allowed/);
    assert.equal(dns.queries.get('denied.test') ?? 0, 0, 'the denied name was never resolved');
    assert.equal(trap.accepted, 0);
    // web_search: the configured endpoint, the query URL-encoded.
    assert.match(String(search), /^1\. Result 1 for brig egress\n {3}http:\/\/allowed\.test:\d+\/r1\n {3}snippet 1\n2\. Result 2/);
    assert.ok(seen.some((s) => s.includes('/search?q=brig%20egress&n=2')), seen.join('\n'));
    // Bounded and spilled like every tool result.
    assert.match(String(big), /\[output is \d+ chars, over the \d+-char limit; the whole output is in \/workspace\/\.brig\/spill\/\d+\.txt/);
    assert.match(String(big), /line 7999 of the big page/);
    // The lead's spawn passes egress by rule id: the child holds `plain` and reaches other.test.
    assert.match(String(childOk), /child fetched/);
    const okReq = m.requests.filter((q) => taskOf(q) === 'CHILD-OK').at(-1)!;
    assert.match(toolResults(okReq)[0] ?? '', /# Welcome from other\.test:\d+/);
    // A rule the lead does not hold is refused: that child has no egress, no web tools, and its prompt says no network.
    const wide = m.requests.filter((q) => taskOf(q) === 'CHILD-WIDE').at(-1)!;
    assert.ok(!toolNames(wide).includes('web_fetch'), toolNames(wide).join(','));
    assert.match(systemOf(wide), /inside a jail with no network/);
    assert.match(String(childWide), /no web here/);
    const wideLease = c.leases.list().filter((l) => l.refused.some((x) => x.code === 'egress_rule_denied'));
    assert.equal(wideLease.length, 1, 'one spawn asked for a rule outside its lead\'s');
    assert.equal(wideLease[0]!.egress, undefined, 'no egress for it');
    assert.deepEqual(c.leases.list().filter((l) => l.egress).map((l) => l.egress!.rules.map((x) => x.id).join()), ['plain', 'plain'], 'the lead and the child it gave `plain`');
    // The ledger: the lead's refused hop, content-free.
    await c.ledger.flush();
    const events = fs.readdirSync(path.join(home, 'ledger')).flatMap((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8').split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>);
    const mine = events.filter((e) => e.runId === r.value.id && String(e.type).startsWith('egress.'));
    assert.ok(mine.some((e) => e.type === 'egress.deny' && e.reason === 'host_not_allowed' && e.hostTail === 'denied.test'));
    assert.ok(mine.some((e) => e.type === 'egress.conn' && e.host === 'allowed.test' && e.ruleId === 'plain'));
    assert.ok(!mine.some((e) => JSON.stringify(e).includes('brig%20egress') || JSON.stringify(e).includes('/secret')), 'no path or query in the ledger');
  } finally {
    await c.close().catch(() => {});
    await m.close();
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    await fs.promises.rm(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
});

// req: jail:egress-credentials
test('[INV-2] an agent\'s web_search reaches a keyed search endpoint through a credential binding: the gate sets the key, the jail holds none, the key\'s echo reaches the model masked', async (t) => {
  if (!(await requireEngine(t))) return;
  const KEY = 'search-key-5d1e7a90c3b24f68';
  const cert = testCert(['search.test']);
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.2', () => r()));
  const sport = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const auths: (string | undefined)[] = [];
  const search = https.createServer({ ...cert }, (req, res) => {
    const u = new URL(req.url ?? '/', 'https://search.test');
    auths.push(req.headers['x-api-key'] as string | undefined);
    if (req.headers['x-api-key'] !== KEY) return void res.writeHead(401).end('{"error":"no key"}');
    // The endpoint echoes the key in a result (a careless API): the model must never see it.
    const results = [{ title: `Keyed result for ${u.searchParams.get('q')}`, url: 'https://search.test/r1', content: `served with key ${req.headers['x-api-key']}` }];
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results }));
  });
  await new Promise<void>((r) => search.listen(sport, '127.0.0.2', () => r()));
  const searchDns = await startFakeDns({ 'search.test': ['127.0.0.2'] });
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-egress-search-'));
  const caFile = path.join(home, 'upstream-ca.pem');
  fs.writeFileSync(caFile, cert.cert);
  fs.writeFileSync(path.join(home, 'policy.yaml'), `version: 1
groups:
  workspace: { caps: [exec], tools: [shell, read_file, write_file, list_files, grep_files] }
  models: { caps: [llm], tools: [llm_complete] }
  web: { caps: [net.egress], tools: [web_fetch, web_search] }
egress:
  credentials:
    search: { secretEnv: BRIG_TEST_SEARCH_KEY, header: x-api-key, hosts: [search.test], paths: [/api/] }
  rules:
    search: { hosts: [search.test], ports: [${sport}], scheme: https, tls: inspect, methods: [GET], paths: [/api/], credential: search }
profiles:
  root:
    groups: [workspace, web, models]
    limits: { cpu: 1, memoryMb: 512, pids: 128, diskMb: 256, timeoutMs: 180000, maxSteps: 20, tokens: 400000, costUsd: 1, resultBytes: 1048576, maxChildren: 0, maxDepth: 1 }
    posture: { network: egress, runtime: docker-hardened, user: nonroot }
`);
  const steps: Turn[] = [
    toolCallTurn('web_search', { query: 'keyed search', count: 1 }),
    toolCallTurn('shell', { command: 'env | grep -c search-key- || true' }),
    toolCallTurn('finish', { answer: 'searched' }),
  ];
  const m = await startModelServer({ script: (req) => steps[toolResults(req).length] ?? toolCallTurn('finish', { answer: 'unscripted' }) });
  const c = await compose(loadConfig({
    BRIG_HOME: home, BRIG_EGRESS_RESOLVERS: searchDns.server, BRIG_EGRESS_TEST_PUBLIC_CIDRS: '127.0.0.2/32', BRIG_EGRESS_UPSTREAM_CA_FILE: caFile,
    BRIG_EGRESS_SEARCH_URL: `https://search.test:${sport}/api/search?q={query}&n={count}`, BRIG_TEST_SEARCH_KEY: KEY,
    BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_API: 'openai-chat', BRIG_MODEL_CONTEXT_WINDOW: '64000',
  }), { reconcile: false });
  try {
    await c.supervisor.start();
    const r = await c.supervisor.spawn({ task: 'search with the operator key', kind: 'agent', agent: 'general', egress: { rules: ['search'] }, timeout: 170_000 });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', `${r.value.error?.message} ${r.value.stderrTail}`);
    assert.deepEqual(auths, [KEY], `the endpoint got the operator key, set by the gate: ${JSON.stringify(toolResults(m.requests.at(-1)!))}`);
    const [result, envCount] = toolResults(m.requests.at(-1)!);
    assert.match(String(result), new RegExp(`^1\\. Keyed result for keyed search\\n {3}https://search\\.test/r1\\n {3}served with key \\*{${KEY.length}}$`));
    assert.ok(!m.requests.some((q) => JSON.stringify(q.body).includes(KEY)), 'the key never reached the model (its echo masked)');
    assert.match(String(envCount), /\n0\s*$/, 'the jail\'s environment holds no key (grep -c counts 0)');
  } finally {
    await c.close().catch(() => {});
    await m.close();
    search.closeAllConnections();
    await new Promise<void>((res) => search.close(() => res()));
    await searchDns.close();
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    await fs.promises.rm(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
});
