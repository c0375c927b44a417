/**
 * A credential binding from inside a real jail (NetworkMode none, the toolbox image), wired as
 * an operator would: policy.yaml names the binding and its secret's variable, the supervisor's
 * environment holds the secret (config/ reads only that name), the child gets a placeholder.
 * From inside: the secret is nowhere in the child's environment or files, curl's placeholder
 * becomes the secret at the bound host (whose echo comes back masked), and the placeholder
 * sent to another allowed host is refused `credential_leak`.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import Docker from 'dockerode';
import { requireEngine } from '../../helpers/engine.js';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/compose.js';
import { DockerJailDriver, ownerForHome } from '../../../src/jail/index.js';
import { toolboxPresent } from '../../../src/jail/docker/toolbox.js';
import { startFakeDns, type FakeDns } from '../../helpers/fake-dns.js';
import { echoUpstream, testCert, type EchoUpstream } from '../../helpers/tls-upstream.js';

const SECRET = 'ghp_0perat0rS3cretValue42xyz';
let dns: FakeDns;
let up: EchoUpstream;
let port = 0;
let caFile = '';

before(async () => {
  const cert = testCert(['allowed.test', 'other.test']);
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.2', () => r()));
  port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  up = await echoUpstream('127.0.0.2', port, cert);
  dns = await startFakeDns({ 'allowed.test': ['127.0.0.2'], 'other.test': ['127.0.0.2'] });
  caFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'brig-upca-')), 'upstream-ca.pem');
  fs.writeFileSync(caFile, cert.cert);
});
after(async () => {
  await up?.close();
  await dns?.close();
  if (caFile) fs.rmSync(path.dirname(caFile), { recursive: true, force: true });
});

const policy = (p: number) => `version: 1
groups:
  workspace: { caps: [exec] }
  web: { caps: [net.egress] }
egress:
  credentials:
    gh: { secretEnv: BRIG_TEST_GH_TOKEN, header: authorization, format: "token {}", hosts: [allowed.test], paths: [/v1/], placeholderEnv: GH_TOKEN }
  rules:
    api: { hosts: [allowed.test], ports: [${p}], scheme: https, tls: inspect, methods: [GET], paths: [/v1/], credential: gh }
    other: { hosts: [other.test], ports: [${p}], scheme: https, tls: inspect, methods: [GET] }
profiles:
  root:
    groups: [workspace, web]
    limits: { cpu: 1, memoryMb: 512, pids: 128, diskMb: 256, timeoutMs: 120000, maxSteps: 10, tokens: 1000, costUsd: 1, resultBytes: 1048576, maxChildren: 0, maxDepth: 1 }
    posture: { network: egress, runtime: docker-hardened, user: nonroot }
`;

// Each line fails the command (and so the run) when its claim does not hold.
const probe = (p: number) => [
  'set -eu',
  'case "$GH_TOKEN" in brig-placeholder-*) ;; *) echo "GH_TOKEN is not a placeholder"; exit 3 ;; esac',
  `! env | grep -q "${SECRET.slice(4, 16)}"`,
  `! grep -rqs "${SECRET.slice(4, 16)}" /run/brig /workspace /proc/self/environ`,
  `curl -sS --fail -D /tmp/h -H "Authorization: token $GH_TOKEN" https://allowed.test:${p}/v1/user > /tmp/b`,
  `grep -q '"authorization":"token \\*\\*\\*\\*' /tmp/b`,
  `! grep -q "${SECRET.slice(4, 16)}" /tmp/b /tmp/h`,
  `test "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: token $GH_TOKEN" https://other.test:${p}/x)" = 403`,
  `curl -s -D - -o /dev/null -H "Authorization: token $GH_TOKEN" https://other.test:${p}/x | grep -qi "x-brig-egress: credential_leak"`,
  'cp /tmp/b /workspace/out/echo.json',
  'echo credentials-ok',
].join('\n');

// req: jail:egress-credentials
test('[INV-2] a credential binding from inside a real jail: the child holds a placeholder, never the secret; the bound host gets the secret, its echo comes back masked, another host gets nothing', async (t) => {
  if (!(await requireEngine(t))) return;
  if (!(await toolboxPresent(new Docker()))) {
    if (process.env.CI === 'true') assert.fail('the toolbox image is not built (brig image toolbox)');
    return void t.skip('the toolbox image (curl) is not built: brig image toolbox');
  }
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-egress-cred-'));
  fs.writeFileSync(path.join(home, 'policy.yaml'), policy(port));
  const env = { BRIG_HOME: home, BRIG_EGRESS_RESOLVERS: dns.server, BRIG_EGRESS_TEST_PUBLIC_CIDRS: '127.0.0.2/32', BRIG_EGRESS_UPSTREAM_CA_FILE: caFile, BRIG_TEST_GH_TOKEN: SECRET };
  const c = await compose(loadConfig(env), { reconcile: false });
  try {
    await c.supervisor.start();
    const seen = up.seen.length;
    const r = await c.supervisor.spawn({ task: 'credential probe', kind: 'command', image: 'toolbox', argv: ['/bin/sh', '-c', probe(port)], egress: { rules: ['api', 'other'] }, timeout: 90_000 });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', JSON.stringify(r.value.error ?? null));
    const got = up.seen.slice(seen);
    assert.equal(got.length, 1, 'the bound host got one request; other.test got none');
    assert.equal(got[0]!.headers.authorization, `token ${SECRET}`, 'the upstream got the operator’s secret');
    await c.close();
    // The ledger, the run's records and files, its results and its lease: the secret in none.
    const kept = ['ledger', 'runs', 'results', 'leases'].filter((d) => fs.existsSync(path.join(home, d)));
    const everything = kept
      .flatMap((d) => fs.readdirSync(path.join(home, d), { recursive: true, withFileTypes: true }))
      .filter((d) => d.isFile())
      .map((d) => fs.readFileSync(path.join(d.parentPath, d.name), 'latin1'))
      .join('\n');
    assert.ok(kept.includes('ledger') && kept.includes('runs'), `the home keeps ${kept.join(', ')}`);
    assert.ok(!everything.includes(SECRET), 'the secret is in no ledger line, run file, result or lease');
    assert.match(everything, /masked|\*\*\*\*/, 'the collected echo (out/echo.json) is among the files scanned');
    assert.match(everything, /"reason":"credential_leak"/);
  } finally {
    await c.close().catch(() => {});
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    await fs.promises.rm(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
});
