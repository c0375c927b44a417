/**
 * The egress gate's cost: a 50 MB HTTPS download from a loopback upstream (127.0.0.2) through
 * the gate (CONNECT over its unix socket, SNI check, resolve through a fake DNS on loopback,
 * classify, dial, pipe) against the same download straight from the client; and the set-up
 * time of one connection (CONNECT to the first response byte of a small GET) both ways.
 * The gate runs in a process of its own (as in the supervisor); no jail: the in-jail relay adds
 * one loopback TCP hop on top (not measured here).
 *
 *   node --import tsx bench/egress.bench.ts [MB=50] [N=5] [SETUPS=50]
 *
 * Prints medians and ratios. Never asserted anywhere.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { fork } from 'node:child_process';
import { startFakeDns } from '../test/helpers/fake-dns.js';
import { testCert } from '../test/helpers/tls-upstream.js';

const MB = Number(process.argv[2] ?? 50);
const N = Number(process.argv[3] ?? 5);
const SETUPS = Number(process.argv[4] ?? 50);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const cert = testCert(['allowed.test']);
const blob = Buffer.alloc(MB * 1024 * 1024, 7);
const server = https.createServer({ ...cert }, (req, res) => {
  if (req.url === '/big') {
    res.writeHead(200, { 'content-length': blob.length });
    res.end(blob);
  } else res.end('ok');
});
await new Promise<void>((r) => server.listen(0, '127.0.0.2', () => r()));
const port = (server.address() as net.AddressInfo).port;
const dns = await startFakeDns({ 'allowed.test': ['127.0.0.2'] });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-egress-bench-'));
// The gate in a process of its own, as the supervisor's is: client and upstream share this one in both legs.
const proc = fork(new URL('./egress-gate-proc.ts', import.meta.url).pathname, [dir, String(port), dns.server], { execArgv: ['--import', 'tsx'] });
const socketPath = await new Promise<string>((r) => proc.once('message', (m) => r(String(m))));
const h = { socketPath };

function viaGate(): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: h.socketPath, method: 'CONNECT', path: `allowed.test:${port}` });
    req.on('connect', (res, s) => (res.statusCode === 200 ? resolve(s) : reject(new Error(String(res.statusCode)))));
    req.on('error', reject);
    req.end();
  });
}
function direct(): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.2', () => resolve(s));
    s.on('error', reject);
  });
}
/** GET path over a fresh TLS connection on `raw`; ms to the first byte and to the end, bytes. */
function get(raw: net.Socket, p: string): Promise<{ first: number; total: number; bytes: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const t = tls.connect({ socket: raw, servername: 'allowed.test', ca: cert.cert, checkServerIdentity: () => undefined });
    let first = 0;
    let bytes = 0;
    t.on('secureConnect', () => t.write(`GET ${p} HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n`));
    t.on('data', (c: Buffer) => {
      if (!first) first = performance.now() - t0;
      bytes += c.length;
    });
    t.on('end', () => resolve({ first, total: performance.now() - t0, bytes }));
    t.on('error', reject);
  });
}
async function time(open: () => Promise<net.Socket>, p: string) {
  const t0 = performance.now();
  const r = await get(await open(), p);
  return { ...r, first: r.first + 0, all: performance.now() - t0 };
}

const down = { gate: [] as number[], direct: [] as number[] };
for (let i = 0; i < N; i++) {
  for (const [k, open] of [['direct', direct], ['gate', viaGate]] as const) {
    const r = await time(open, '/big');
    down[k].push((r.bytes / 1024 / 1024) / (r.all / 1000));
  }
}
const setup = { gate: [] as number[], direct: [] as number[] };
for (let i = 0; i < SETUPS; i++) {
  for (const [k, open] of [['direct', direct], ['gate', viaGate]] as const) {
    const t0 = performance.now();
    const s = await open();
    await get(s, '/small');
    setup[k].push(performance.now() - t0);
  }
}
const md = median(down.direct);
const mg = median(down.gate);
console.log(`download ${MB} MB x${N}: direct ${md.toFixed(0)} MB/s, through the gate ${mg.toFixed(0)} MB/s (ratio ${(mg / md).toFixed(2)})`);
const sd = median(setup.direct);
const sg = median(setup.gate);
console.log(`connection + TLS + small GET x${SETUPS}: direct ${sd.toFixed(2)} ms, through the gate ${sg.toFixed(2)} ms (+${(sg - sd).toFixed(2)} ms)`);
proc.disconnect();
await dns.close();
server.closeAllConnections();
server.close();
fs.rmSync(dir, { recursive: true, force: true });
