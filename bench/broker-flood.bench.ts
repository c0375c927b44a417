/**
 * A broker flood against the supervisor's one event loop: one run's socket gets N bad lines
 * (default 200,000 × `not json`) as fast as a child can write them, while the bench times
 * another run's `hello` round trips and GET /v1/health, back to back, before (quiet) and
 * during the flood.
 *
 * The server is a separate process built like the daemon's event loop: a real BrokerServer
 * (default limits, real LeaseStore and FileLedger under a temp BRIG_HOME) and the real API
 * server (listenApi) on a unix socket. The flooder is a third process. No engine needed.
 *
 *   node --import tsx bench/broker-flood.bench.ts [lines]
 *
 * The flooder reconnects whenever it is dropped (a hostile child would), until it has written
 * every line or FLOOD_MS passed. Prints p50/p99/max of each, the ratio of flood to quiet (the
 * floor measured in the same run), what the flooder got through and how many ledger lines
 * it left. Never asserted.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { listenApi } from '../src/api/index.js';
import { BrokerServer } from '../src/broker/index.js';
import { brigPaths } from '../src/config/index.js';
import { LeaseStore, loadPolicyFile, shippedPoliciesDir } from '../src/lease/index.js';
import { FileLedger } from '../src/ledger/index.js';
import type { Brig } from '../src/protocol/index.js';
import { BrokerTestClient } from '../test/helpers/fakes/broker-test-client.js';

const LINES = Number(process.argv[2] ?? 200_000);
const QUIET_MS = 3000;
/** Discarded first: start-up (module loading, JIT) is not the floor. */
const WARMUP_MS = 500;
/** The flooder gives up after this; the flood phase lasts until it did, plus SETTLE_MS. */
const FLOOD_MS = 5000;
const SETTLE_MS = 1000;
/** Pause between samples of each loop: 50 calls/s, well under the bystander's 100/s refill. */
const PACE_MS = 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Served {
  flood: string;
  by: string;
  byToken: string;
  api: string;
}

/** The server role: one process, one event loop, like `brig serve`. */
async function serve(home: string): Promise<void> {
  const paths = brigPaths(home);
  const pol = loadPolicyFile(path.join(shippedPoliciesDir(), 'default.yaml'));
  if (!pol.ok) throw pol.error;
  const ledger = new FileLedger({ dir: paths.ledger });
  const leases = new LeaseStore({ dir: paths.leases, policy: pol.value, ledger });
  const broker = new BrokerServer({ leases, ledger, onAbuse: () => {} });
  const open = async (runId: string) => {
    const l = leases.issueRoot({ profile: 'root', runId, rootRunId: runId, timeoutMs: 600_000 });
    if (!l.ok) throw l.error;
    const h = await broker.openRun({ runId, leaseId: l.value.record.id, dir: path.join(paths.brokers, runId), packet: {} });
    return { socket: h.socketPath, token: l.value.token };
  };
  const flood = await open('r-flood');
  const by = await open('r-bystander');
  // The health route never touches the supervisor.
  const api = await listenApi({ events: () => { throw new Error('no events here'); } } as unknown as Brig, paths.socket);
  const served: Served = { flood: flood.socket, by: by.socket, byToken: by.token, api: paths.socket };
  process.stdout.write(JSON.stringify(served) + '\n');
  process.once('SIGTERM', () => {
    void (async () => {
      await api.close();
      await broker.close();
      await ledger.close();
      process.exit(0);
    })();
  });
}

/**
 * The flooder: a hostile child. Writes LINES bad lines (honouring backpressure), reconnecting
 * whenever the broker drops it, until all are written or FLOOD_MS passed.
 */
const FLOODER = `
const net = require('node:net');
const [sock, n, ms] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
const chunk = 'not json\\n'.repeat(1000);
const t0 = Date.now();
let written = 0, replies = 0, connections = 0;
const done = () => { console.log(JSON.stringify({ written, replies, connections, ms: Date.now() - t0 })); process.exit(0); };
(function connect() {
  if (written >= n || Date.now() - t0 > ms) return done();
  connections++;
  const s = net.connect(sock);
  let closed = false;
  s.on('data', (d) => { for (let i = d.indexOf(10); i !== -1; i = d.indexOf(10, i + 1)) replies++; });
  s.on('error', () => {});
  s.on('close', () => { closed = true; setImmediate(connect); });
  s.once('connect', function more() {
    while (written < n && !closed) {
      written += 1000;
      if (!s.write(chunk)) return s.once('drain', more);
    }
    if (!closed) s.end();
  });
})();
`;

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1)))]!;
};

function health(socketPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: '/v1/health', agent: false }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`health ${res.statusCode}`))));
    });
    req.on('error', reject);
  });
}

/** Times `fn` every PACE_MS until `stop`; each sample is tagged with the phase it started in. */
async function loop(fn: () => Promise<unknown>, phase: () => string, stop: () => boolean, out: Map<string, number[]>, failed: string[]): Promise<void> {
  while (!stop()) {
    const p = phase();
    const t0 = performance.now();
    await fn().catch((e: unknown) => failed.push(`${p}: ${e instanceof Error ? e.message : String(e)}`));
    const ms = performance.now() - t0;
    (out.get(p) ?? out.set(p, []).get(p)!).push(ms);
    await sleep(PACE_MS);
  }
}

function ledgerLines(home: string): { total: number; flood: number; byType: Record<string, number> } {
  const dir = brigPaths(home).ledger;
  const byType: Record<string, number> = {};
  let total = 0;
  let flood = 0;
  for (const f of fs.readdirSync(dir)) {
    for (const l of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
      if (!l) continue;
      const e = JSON.parse(l) as { type: string; runId?: string };
      total++;
      if (e.runId === 'r-flood') {
        flood++;
        byType[e.type] = (byType[e.type] ?? 0) + 1;
      }
    }
  }
  return { total, flood, byType };
}

import { BenchReport } from './report.js';

async function bench(): Promise<void> {
  const report = new BenchReport('broker-flood'); // here: the --serve process of this file reports nothing
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-flood-'));
  const self = fileURLToPath(import.meta.url);
  const server = spawn(process.execPath, ['--import', 'tsx', self, '--serve', home], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const first = await new Promise<string>((resolve, reject) => {
      readline.createInterface({ input: server.stdout! }).once('line', resolve);
      server.once('exit', (c) => reject(new Error(`server exited ${c}`)));
    });
    const s = JSON.parse(first) as Served;
    const by = await BrokerTestClient.connect(s.by, s.byToken);
    let phase = 'warmup';
    let stop = false;
    const hello = new Map<string, number[]>();
    const healthMs = new Map<string, number[]>();
    const failed: string[] = [];
    const loops = Promise.all([
      loop(async () => {
        const r = await by.call('hello');
        if (!r.ok) throw new Error(`hello refused: ${r.error.code}`);
      }, () => phase, () => stop, hello, failed),
      loop(() => health(s.api), () => phase, () => stop, healthMs, failed),
    ]);
    await sleep(WARMUP_MS);
    phase = 'quiet';
    await sleep(QUIET_MS);
    phase = 'flood';
    const flooder = spawn(process.execPath, ['-e', FLOODER, s.flood, String(LINES), String(FLOOD_MS)], { stdio: ['ignore', 'pipe', 'inherit'] });
    const floodOut = await new Promise<string>((resolve) => {
      let text = '';
      flooder.stdout!.on('data', (d: Buffer) => (text += d.toString()));
      flooder.once('exit', () => resolve(text.trim()));
    });
    // What the server still has queued from the flood is part of it.
    await sleep(SETTLE_MS);
    phase = 'after';
    stop = true;
    await loops;
    by.close();
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    const f = JSON.parse(floodOut) as { written: number; replies: number; connections: number; ms: number };
    const row = (name: string, m: Map<string, number[]>) => {
      const q = report.samples(`${name}, quiet`, m.get('quiet') ?? []);
      const fl = report.samples(`${name}, flood`, m.get('flood') ?? [], { floor: `${name}, quiet` });
      report.value(`${name} p99, quiet`, q.p99);
      report.value(`${name} p99, flood`, fl.p99, { floor: `${name} p99, quiet` });
      const r = (x: number | null) => (x === null ? '—' : x.toFixed(2)).padStart(9);
      const x99 = q.p99 && fl.p99 !== null ? (fl.p99 / q.p99).toFixed(1) : '—';
      console.log(`${name.padEnd(8)} quiet p50 ${r(q.median)} p99 ${r(q.p99)} ms | flood p50 ${r(fl.median)} p99 ${r(fl.p99)} max ${r(fl.max)} ms (n=${fl.n}) | p99 ×${x99}`);
    };
    console.log(`flood: ${LINES} bad lines offered; ${f.written} handed to write() over ${f.connections} connection(s) in ${f.ms} ms; ${f.replies} replies; flood phase = that + ${SETTLE_MS} ms`);
    row('hello', hello);
    row('health', healthMs);
    if (failed.length > 0) console.log(`failed calls: ${failed.length} (${[...new Set(failed)].slice(0, 5).join('; ')})`);
    const l = ledgerLines(home);
    console.log(`ledger: ${l.total} lines in all, ${l.flood} for the flooded run ${JSON.stringify(l.byType)}`);
  } finally {
    if (server.exitCode === null) server.kill('SIGKILL');
    await fs.promises.rm(brigPaths(home).brokers, { recursive: true, force: true });
    await fs.promises.rm(home, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--serve') await serve(process.argv[3]!);
else await bench();
