/**
 * A run with egress that a SIGKILLed daemon leaves running keeps its egress: the restarted
 * daemon reattaches it and opens its gate socket again on the lease as issued (before this,
 * the socket stayed dead and every request after the restart failed). Real `brig serve`
 * processes on a real engine (dist/ must be built); the upstream on 127.0.0.2 treated as public
 * with BRIG_EGRESS_TEST_PUBLIC_CIDRS, a fake DNS server on 127.0.0.53.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { ApiClient } from '../../../src/client/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startFakeDns, type FakeDns } from '../../helpers/fake-dns.js';
import { httpUpstream, type Upstream } from '../../helpers/tls-upstream.js';
import { until } from '../runs/fixture.js';
import { daemonHome, recordOnDisk } from '../daemon/serve-proc.js';

let dns: FakeDns;
let up: Upstream;
let port = 0;

before(async () => {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.2', () => r()));
  port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  up = await httpUpstream('127.0.0.2', port);
  dns = await startFakeDns({ 'allowed.test': ['127.0.0.2'] });
});
after(async () => {
  await up?.close();
  await dns?.close();
});

// Fetches before and after the daemon dies; the second fetch is tried three times (the restarted
// daemon's broker may answer a moment before its egress socket listens).
const SCRIPT = (p: number) => `export default async function (brig) {
  const http = await import('node:http');
  const get = () => new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port: 3128, path: 'http://allowed.test:${p}/x', headers: { host: 'allowed.test:${p}' } }, (res) => {
      let b = ''; res.on('data', (c) => (b += c)); res.on('end', () => resolve(res.statusCode + ' ' + b.trim()));
    });
    req.on('error', (e) => resolve('ERR ' + e.code));
    req.end();
  });
  const before = await get();
  await brig.progress('fetched once');
  await new Promise((r) => setTimeout(r, 5000));
  await brig.progress('after the restart');
  let afterRestart = '';
  for (let i = 0; i < 3; i++) { afterRestart = await get(); if (afterRestart.startsWith('200')) break; await new Promise((r) => setTimeout(r, 500)); }
  return { before, afterRestart };
}`;

// req: jail:egress-gated
test('[INV-2] a reattached run keeps its egress: the restarted daemon opens its gate socket again, on the lease as issued', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  fs.writeFileSync(`${h.home}/policy.yaml`, `version: 1
groups:
  workspace: { caps: [exec] }
  web: { caps: [net.egress] }
egress:
  rules:
    plain: { hosts: [allowed.test], ports: [${port}], scheme: http, methods: [GET] }
profiles:
  root:
    groups: [workspace, web]
    limits: { cpu: 1, memoryMb: 512, pids: 128, diskMb: 256, timeoutMs: 120000, maxSteps: 10, tokens: 1000, costUsd: 1, resultBytes: 1048576, maxChildren: 0, maxDepth: 1 }
    posture: { network: egress, runtime: docker-hardened, user: nonroot }
`);
  const env = { BRIG_EGRESS_RESOLVERS: dns.server, BRIG_EGRESS_TEST_PUBLIC_CIDRS: '127.0.0.2/32' };
  const first = await h.serve([], env);
  const api = new ApiClient(first.socket);
  let runId = '';
  try {
    const r = await api.spawn({ task: 'fetch across a restart', script: SCRIPT(port), egress: { rules: ['plain'] }, async: true });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    runId = r.value.id;
    await until(async () => (await api.get(runId))?.stepsExecuted === 1, 'the first fetch made');
  } finally {
    await api.close();
  }
  await first.signal('SIGKILL');
  assert.equal(recordOnDisk(h.home, runId)?.status, 'running', 'the kill landed mid-run');
  const second = await h.serve([], env);
  assert.deepEqual(second.report.reattached, [runId]);
  const api2 = new ApiClient(second.socket);
  try {
    const w = await api2.wait(runId, { timeoutMs: 60_000 });
    assert.ok(w.ok, w.ok ? '' : w.error.message);
    assert.equal(w.value.endReason, 'completed', `${JSON.stringify(w.value)}\n${second.stderr()}`);
    assert.deepEqual(w.value.result, { before: '200 hello from allowed.test:' + port, afterRestart: '200 hello from allowed.test:' + port });
  } finally {
    await api2.close();
  }
});
