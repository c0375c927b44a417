/**
 * `brig doctor`'s egress proof, from inside a real jail: a probe jail with the egress relay and
 * a gate socket of its own (a one-rule lease for a doctor-only name whose answer is an upstream
 * this process serves on 127.0.0.1) must reach that upstream through the gate, get `403
 * host_not_allowed` for any other name, and fail a name lookup (no resolver in the jail). The
 * gate here is the real EgressGate with the doctor's own resolver and classifier (the one name,
 * the one loopback address): nothing leaves this host, and the home's ledger is not written.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { grantRunSocket, type SocketOwner } from '../broker/index.js';
import { EgressGate } from '../egress/index.js';
import type { DockerJailDriver } from '../jail/index.js';
import type { DoctorCheck, EgressGrant } from '../protocol/index.js';
import { CHILD_PATHS, egressEnv } from '../runs/index.js';
import { toBrigError } from '../util/errors.js';

/** The gate's operator-only settings, when set: testPublicCidrs above all (loopback dialled as if public is for tests only). */
export function egressSettingsChecks(e: { testPublicCidrs: readonly string[]; upstreamCaFile?: string | undefined }): DoctorCheck[] {
  return [
    ...(e.testPublicCidrs.length > 0 ? [{ name: 'egress: testPublicCidrs', ok: true, detail: `${e.testPublicCidrs.join(', ')} treated as public by the gate — a test-only setting (egress.testPublicCidrs / BRIG_EGRESS_TEST_PUBLIC_CIDRS); unset it outside tests` }] : []),
    ...(e.upstreamCaFile ? [{ name: 'egress: upstreamCaFile', ok: true, detail: `inspected connections also trust the CA certificates in ${e.upstreamCaFile}` }] : []),
  ];
}

const ALLOWED = 'allowed.doctor.brig.invalid';
const OTHER = 'other.doctor.brig.invalid';

const PROBE = (port: number) => `
const http = require('node:http'); const dns = require('node:dns');
const get = (host) => new Promise((resolve) => {
  const req = http.request({ host: '127.0.0.1', port: 3128, path: 'http://' + host + ':${port}/', headers: { host: host + ':${port}' } }, (res) => {
    let b = ''; res.on('data', (c) => (b += c)); res.on('end', () => resolve({ status: res.statusCode, reason: res.headers['x-brig-egress'] || null, body: b }));
  });
  req.on('error', (e) => resolve({ status: 0, reason: e.code, body: '' }));
  req.end();
});
(async () => {
  const out = { allowed: await get('${ALLOWED}'), other: await get('${OTHER}') };
  out.dns = await new Promise((r) => dns.lookup('${ALLOWED}', (e) => r(e ? e.code : 'resolved')));
  process.stdout.write('BRIG-EGRESS-PROBE ' + JSON.stringify(out) + '\\n');
})();`;

interface ProbeOut {
  allowed: { status: number; reason: string | null; body: string };
  other: { status: number; reason: string | null; body: string };
  dns: string;
}

/** Pure: the probe's report judged. */
export function judgeEgressProbe(o: ProbeOut | { error: string }): DoctorCheck[] {
  const hint = 'The egress gate or the in-jail relay does not work here: leases with egress rules would fail closed (their children get no network at all).';
  if ('error' in o) return [{ name: 'egress: probe jail', ok: false, detail: o.error, hint }];
  const c = (name: string, ok: boolean, detail: string): DoctorCheck => (ok ? { name, ok, detail } : { name, ok, detail, hint });
  return [
    c('egress: allowed host through the gate', o.allowed.status === 200 && o.allowed.body.startsWith('brig doctor upstream'), `${o.allowed.status}${o.allowed.reason ? ` ${o.allowed.reason}` : ''}`),
    c('egress: other host refused', o.other.status === 403 && o.other.reason === 'host_not_allowed', `${o.other.status}${o.other.reason ? ` ${o.other.reason}` : ''}`),
    c('egress: no resolver in the jail', o.dns !== 'resolved', `a lookup from inside: ${o.dns}`),
  ];
}

export async function egressProbe(driver: DockerJailDriver, image: string, brokersDir: string, owner: SocketOwner | undefined): Promise<DoctorCheck[]> {
  const upstream = http.createServer((_q, s) => s.end('brig doctor upstream\n'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const port = (upstream.address() as net.AddressInfo).port;
  const runId = `doctor-egress-${crypto.randomBytes(5).toString('hex')}`;
  const dir = path.join(brokersDir, runId);
  const gate = new EgressGate({
    ledger: { append: () => {} },
    resolver: { resolve4: async (n) => (n === ALLOWED ? ['127.0.0.1'] : []), resolve6: async () => [] },
    classify: (a) => (a === '127.0.0.1' ? 'test_public' : 'reserved'),
    policy: { denyHosts: [] },
    grantSocket: (d, p) => grantRunSocket(d, p, owner),
  });
  const grant: EgressGrant = {
    rules: [{ id: 'doctor', hosts: [ALLOWED], ports: [port], scheme: 'http', tls: 'tunnel', methods: ['GET'], websocket: false }],
    budgets: { connections: 8, concurrent: 4, bytesUp: 65536, bytesDown: 65536, requestBodyMax: 0, dnsNames: 2, idleMs: 10_000, lifetimeMs: 30_000 },
  };
  try {
    await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
    await gate.openRun({ runId, leaseId: runId, dir, grant });
    const jail = await driver.create({
      runId, leaseId: runId, rootRunId: runId,
      argv: [CHILD_PATHS.node, CHILD_PATHS.netrelay, '--', CHILD_PATHS.node, '-e', PROBE(port)],
      env: { HOME: '/workspace', ...egressEnv() },
      limits: { memoryMb: 128, pids: 64, cpu: 1, tmpfsMb: 8, diskMb: 32 },
      artifacts: [],
      brokerDir: dir,
      image,
    });
    try {
      await jail.start();
      await jail.wait();
      const line = jail.tails().stdoutTail.split('\n').find((l) => l.startsWith('BRIG-EGRESS-PROBE '));
      return judgeEgressProbe(line ? (JSON.parse(line.slice('BRIG-EGRESS-PROBE '.length)) as ProbeOut) : { error: `the probe printed no report: ${jail.tails().stderrTail.slice(-300)}` });
    } finally {
      await jail.destroy();
    }
  } catch (e) {
    return judgeEgressProbe({ error: toBrigError(e).message });
  } finally {
    await gate.close();
    upstream.close();
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
}
