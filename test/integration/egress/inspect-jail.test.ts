/**
 * `tls: inspect` from inside a real jail (NetworkMode none, the toolbox image): curl, Python's
 * urllib and git (cloning over https, the dumb protocol: GETs only) reach https upstreams on
 * 127.0.0.2 through the relay and the gate, trusting the run's CA through the usual CA
 * variables; a path outside the rule's prefixes and a method it does not allow are refused per
 * request. The upstream's own test CA is the operator's
 * egress.upstreamCaFile (the gate verifies it); the fake DNS answers on loopback.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
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
import { freePort, httpsUpstream, testCert, type Upstream } from '../../helpers/tls-upstream.js';

let dns: FakeDns;
let up: Upstream;
let port = 0;
let gitPort = 0;
let gitSite: https.Server;
let repoDir = '';
let caFile = '';


/** A bare repository served as static files (git's dumb https protocol): one commit with one file. */
function bareRepo(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-egress-git-'));
  const work = path.join(root, 'work');
  const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', '-c', 'init.defaultBranch=main', ...args], { cwd, stdio: 'pipe' });
  fs.mkdirSync(work);
  git(work, 'init', '-q');
  fs.writeFileSync(path.join(work, 'README'), 'cloned through the gate\n');
  git(work, 'add', 'README');
  git(work, 'commit', '-q', '-m', 'one');
  git(root, 'clone', '-q', '--bare', 'work', 'repo.git');
  git(path.join(root, 'repo.git'), 'update-server-info');
  return root;
}

before(async () => {
  const cert = testCert(['allowed.test']);
  port = await freePort('127.0.0.2');
  up = await httpsUpstream('127.0.0.2', port, cert);
  repoDir = bareRepo();
  gitPort = await freePort('127.0.0.2');
  gitSite = https.createServer({ ...cert }, (req, res) => {
    const rel = decodeURIComponent(new URL(req.url ?? '/', 'https://x').pathname);
    const file = path.join(repoDir, path.normalize(rel));
    if (!file.startsWith(path.join(repoDir, 'repo.git')) || !fs.existsSync(file) || !fs.statSync(file).isFile()) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(fs.readFileSync(file));
  });
  await new Promise<void>((r) => gitSite.listen(gitPort, '127.0.0.2', () => r()));
  dns = await startFakeDns({ 'allowed.test': ['127.0.0.2'] });
  caFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'brig-upca-')), 'upstream-ca.pem');
  fs.writeFileSync(caFile, cert.cert);
});
after(async () => {
  await up?.close();
  gitSite?.closeAllConnections();
  await new Promise<void>((r) => (gitSite ? gitSite.close(() => r()) : r()));
  if (repoDir) fs.rmSync(repoDir, { recursive: true, force: true });
  await dns?.close();
  if (caFile) fs.rmSync(path.dirname(caFile), { recursive: true, force: true });
});

const policy = (p: number, g: number) => `version: 1
groups:
  workspace: { caps: [exec] }
  web: { caps: [net.egress] }
egress:
  rules:
    api: { hosts: [allowed.test], ports: [${p}], scheme: https, tls: inspect, methods: [GET, HEAD], paths: [/v1/] }
    git: { hosts: [allowed.test], ports: [${g}], scheme: https, tls: inspect, methods: [GET, HEAD], paths: [/repo.git/] }
profiles:
  root:
    groups: [workspace, web]
    limits: { cpu: 1, memoryMb: 512, pids: 128, diskMb: 256, timeoutMs: 120000, maxSteps: 10, tokens: 1000, costUsd: 1, resultBytes: 1048576, maxChildren: 0, maxDepth: 1 }
    posture: { network: egress, runtime: docker-hardened, user: nonroot }
`;

// Each line fails the command (and so the run) when its claim does not hold.
const probe = (p: number, g: number) => [
  'set -eu',
  'test "$SSL_CERT_FILE" = /run/brig/egress-ca.pem && test "$CURL_CA_BUNDLE" = "$SSL_CERT_FILE" && test "$REQUESTS_CA_BUNDLE" = "$SSL_CERT_FILE" && test "$NODE_EXTRA_CA_CERTS" = "$SSL_CERT_FILE" && test "$GIT_SSL_CAINFO" = "$SSL_CERT_FILE"',
  '! grep -q "PRIVATE KEY" "$SSL_CERT_FILE"',
  `curl -sS --fail https://allowed.test:${p}/v1/curl | grep -q "hello from allowed.test"`,
  `test "$(curl -s -o /dev/null -w '%{http_code}' https://allowed.test:${p}/v2/other)" = 403`,
  `test "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE https://allowed.test:${p}/v1/curl)" = 403`,
  `python3 -c "import urllib.request as u; print(u.urlopen('https://allowed.test:${p}/v1/py').read().decode())" | grep -q "hello from allowed.test"`,
  `git clone -q https://allowed.test:${g}/repo.git /workspace/clone`,
  'grep -q "cloned through the gate" /workspace/clone/README',
  'echo inspected-ok',
].join('\n');

// req: jail:egress-inspect
test('[INV-2] tls: inspect from inside a real jail — curl, Python and a git clone trust the run CA through the CA variables, the gate checks each request and verifies the upstream', async (t) => {
  if (!(await requireEngine(t))) return;
  if (!(await toolboxPresent(new Docker()))) {
    if (process.env.CI === 'true') assert.fail('the toolbox image is not built (brig image toolbox)');
    return void t.skip('the toolbox image (curl, python3) is not built: brig image toolbox');
  }
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-egress-inspect-'));
  fs.writeFileSync(path.join(home, 'policy.yaml'), policy(port, gitPort));
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_EGRESS_RESOLVERS: dns.server, BRIG_EGRESS_TEST_PUBLIC_CIDRS: '127.0.0.2/32', BRIG_EGRESS_UPSTREAM_CA_FILE: caFile }), { reconcile: false });
  try {
    await c.supervisor.start();
    const r = await c.supervisor.spawn({ task: 'inspect probe', kind: 'command', image: 'toolbox', argv: ['/bin/sh', '-c', probe(port, gitPort)], egress: { rules: ['api', 'git'] }, timeout: 90_000 });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', JSON.stringify(r.value.error ?? null));
    await c.close();
    const ledger = fs.readdirSync(path.join(home, 'ledger')).map((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8')).join('\n');
    assert.match(ledger, /"mode":"inspect"/);
    assert.ok(!ledger.includes('/v1/curl') && !ledger.includes('/v2/other'), 'no path in the ledger');
  } finally {
    await c.close().catch(() => {});
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    await fs.promises.rm(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
});
