/**
 * Egress on the Kubernetes driver (issue 33 item 5): the pod reaches nothing by itself, and a
 * lease with egress rules reaches an allowed host through the same path as on Docker — the
 * in-pod relay on the pod's own loopback (netrelay.js), the pod's egress.sock (pod-relay.js in
 * the relay container), the exec stream, the run's host egress.sock and the gate, which decides
 * everything. A `tls: inspect` rule needs the run's CA in the pod before the program starts
 * (the relay container writes it into /run/brig): Node's fetch() trusts it through
 * NODE_EXTRA_CA_CERTS, read at its start. Cold and pooled pods alike.
 *
 * Everything the gate reaches is on the host's loopback: the upstreams on 127.0.0.2 (treated as
 * public with BRIG_EGRESS_TEST_PUBLIC_CIDRS), a fake DNS server on 127.0.0.53.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { loadConfig } from '../../src/config/index.js';
import { compose } from '../../src/daemon/compose.js';
import { startFakeDns, type FakeDns } from '../helpers/fake-dns.js';
import { driverEnv, requireCluster } from '../helpers/k8s.js';
import { freePort, httpUpstream, httpsUpstream, testCert, type Upstream } from '../helpers/tls-upstream.js';

let dns: FakeDns;
const ups: Upstream[] = [];
let httpsPort = 0;
let httpPort = 0;
let caDir = '';

before(async () => {
  const cert = testCert(['allowed.test']);
  httpsPort = await freePort('127.0.0.2');
  httpPort = await freePort('127.0.0.2');
  ups.push(await httpsUpstream('127.0.0.2', httpsPort, cert));
  ups.push(await httpUpstream('127.0.0.2', httpPort));
  dns = await startFakeDns({ 'allowed.test': ['127.0.0.2'], 'other.test': ['127.0.0.2'], 'denied.test': ['127.0.0.2'] });
  caDir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-k8s-upca-'));
  fs.writeFileSync(path.join(caDir, 'upstream-ca.pem'), cert.cert);
});
after(async () => {
  for (const u of ups) await u.close();
  await dns?.close();
  if (caDir) fs.rmSync(caDir, { recursive: true, force: true });
});

const policy = (p: number, h: number) => `version: 1
groups:
  workspace: { caps: [exec] }
  web: { caps: [net.egress] }
egress:
  rules:
    api: { hosts: [allowed.test], ports: [${p}], scheme: https, tls: inspect, methods: [GET], paths: [/v1/] }
    plain: { hosts: [other.test], ports: [${h}], scheme: http, methods: [GET] }
profiles:
  root:
    groups: [workspace, web]
    limits: { cpu: 1, memoryMb: 512, pids: 128, diskMb: 256, timeoutMs: 120000, maxSteps: 10, tokens: 1000, costUsd: 1, resultBytes: 1048576, maxChildren: 0, maxDepth: 1 }
    posture: { network: egress, runtime: docker-hardened, user: nonroot }
`;

// Runs in the pod: every attempt's outcome, as data.
const PROBE = (P: number, H: number) => `export default async function () {
  const net = await import('node:net');
  const get = (url) => fetch(url).then(async (r) => [r.status, r.headers.get('x-brig-egress'), (await r.text()).trim()], (e) => 'ERR:' + (e.cause?.code ?? e.message));
  const out = { proxy: process.env.HTTPS_PROXY, ca: process.env.NODE_EXTRA_CA_CERTS };
  out.inspected = await get('https://allowed.test:${P}/v1/hello');
  out.offPath = await get('https://allowed.test:${P}/admin');
  out.plain = await get('http://other.test:${H}/x');
  out.denied = await get('http://denied.test:${H}/x');
  out.direct = await new Promise((r) => { const s = net.connect(${P}, '127.0.0.2'); s.setTimeout(2000, () => { r('TIMEOUT'); s.destroy(); }); s.on('connect', () => { r('connected'); s.destroy(); }); s.on('error', (e) => r(e.code)); });
  return out;
}`;

async function egressRun(t: TestContext, warm: boolean): Promise<void> {
  const c = requireCluster(t);
  if (!c) return;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-k8s-egress-'));
  fs.writeFileSync(path.join(home, 'policy.yaml'), policy(httpsPort, httpPort));
  const cfg = loadConfig({ BRIG_HOME: home, ...driverEnv(c), BRIG_EGRESS_RESOLVERS: dns.server, BRIG_EGRESS_TEST_PUBLIC_CIDRS: '127.0.0.2/32', BRIG_EGRESS_UPSTREAM_CA_FILE: path.join(caDir, 'upstream-ca.pem') });
  const sup = await compose(cfg, { tickMs: 200, reconcile: false, ...(warm ? { warm: 1 } : {}) });
  t.after(async () => {
    await sup.brig.close();
    fs.rmSync(home, { recursive: true, force: true });
  });
  await sup.supervisor.start();
  if (warm) {
    await sup.warm!.start();
    await sup.warm!.filled(120_000);
  }
  const r = await sup.supervisor.spawn({ task: 'egress on kubernetes', script: PROBE(httpsPort, httpPort), egress: { rules: ['api', 'plain'] }, timeout: 90_000 });
  assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
  assert.equal(r.value.endReason, 'completed', `${r.value.error?.message} ${r.value.stdoutTail} ${r.value.stderrTail}`);
  assert.equal(Boolean(r.value.jail?.pooled), warm, `served ${warm ? 'warm' : 'cold'}: ${JSON.stringify(r.value.jail)}`);
  const v = r.value.result as Record<string, unknown>;
  assert.equal(v.proxy, 'http://127.0.0.1:3128');
  assert.equal(v.ca, '/run/brig/egress-ca.pem');
  // The inspected fetch verified the gate's certificate against the run's CA (put into the pod) and the gate the upstream's.
  assert.deepEqual(v.inspected, [200, null, `hello from allowed.test:${httpsPort}`]);
  assert.deepEqual((v.offPath as unknown[]).slice(0, 2), [403, 'path_not_allowed']);
  assert.deepEqual(v.plain, [200, null, `hello from other.test:${httpPort}`]);
  assert.deepEqual((v.denied as unknown[]).slice(0, 2), [403, 'host_not_allowed']);
  assert.notEqual(v.direct, 'connected', 'no route past the gate');
  await sup.ledger.flush();
  const ledger = fs.readdirSync(path.join(home, 'ledger')).map((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8')).join('');
  assert.match(ledger, new RegExp(`"type":"egress\\.conn"[^\\n]*"runId":"${r.value.id}"|"runId":"${r.value.id}"[^\\n]*"type":"egress\\.conn"`), 'the gate ledgered the connection');
}

// req: kube:egress-gated
test('[INV-2] egress from a cold pod: an allowed host through the gate (a tls: inspect rule trusted through the run CA put into the pod), other hosts and paths refused, no route of its own', async (t) => {
  await egressRun(t, false);
});

// req: kube:egress-gated
test('[INV-2] egress from a warm-pool pod: the same, through the pre-started relay and the CA put in at claim', async (t) => {
  await egressRun(t, true);
});
