/**
 * Issue 2, shown negatively from inside a real jail: what a hostile child tries, and that it
 * fails. Every network attempt aims at this machine only: the supervisor's loopback and the
 * host's own IPv4/IPv6 addresses, each with a server listening on it (with NetworkMode none the
 * kernel answers ENETUNREACH at once: no route, so no packet is built).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { hostAddresses } from '../../../src/jail/probe.js';
import { requireEngine } from '../../helpers/engine.js';
import { runToEnd, spec, sweepOwn } from './helpers.js';

after(sweepOwn);

/** Node built-ins only; prints one JSON line. argv[1] = a port the host listens on at 127.0.0.1 and at argv[2…], its own addresses. */
const INSIDE = String.raw`
const fs = require('node:fs'), net = require('node:net'), os = require('node:os'), path = require('node:path');
const attempt = (host, port) => new Promise((resolve) => {
  const s = net.connect({ host, port, timeout: 3000 });
  s.on('connect', () => { s.destroy(); resolve('connected'); });
  s.on('error', (e) => resolve(e.code || 'error'));
  s.on('timeout', () => { s.destroy(); resolve('timeout'); });
});
const sockets = [], named = [];
let visited = 0;
const walk = (dir) => {
  let ents; try { ents = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const e of ents) {
    const p = path.join(dir, e.name); visited++;
    if (e.isSocket()) sockets.push(p);
    if (/docker\.sock|containerd/i.test(e.name) || e.name.endsWith('.sock')) named.push(p); // not /.dockerenv: an empty marker file
    if (e.isDirectory() && p !== '/proc' && p !== '/sys') walk(p);
  }
};
walk('/');
const read = (...ps) => { for (const p of ps) { try { return fs.readFileSync(p, 'utf8').trim(); } catch {} } return null; };
const tmpMount = fs.readFileSync('/proc/self/mounts', 'utf8').split('\n').find((l) => l.split(' ')[1] === '/tmp') || '';
const tmpFill = (() => { try { fs.writeFileSync('/tmp/fill', Buffer.alloc(12 * 1024 * 1024)); return 'ok'; } catch (e) { return e.code; } finally { try { fs.unlinkSync('/tmp/fill'); } catch {} } })();
const tmpExec = (() => { fs.copyFileSync('/bin/busybox', '/tmp/bb'); fs.chmodSync('/tmp/bb', 0o755); const r = require('node:child_process').spawnSync('/tmp/bb', ['true']); return r.error ? r.error.code : 'ran'; })();
const shmWrite = (() => { try { fs.writeFileSync('/dev/shm/brig-probe', 'x'); return 'ok'; } catch (e) { return e.code; } })();
const port = Number(process.argv[1]);
Promise.all([Promise.all(process.argv.slice(2).map((a) => attempt(a, port))), attempt('127.0.0.1', port)]).then(([own, hostLo]) => {
  console.log(JSON.stringify({
    interfaces: Object.keys(os.networkInterfaces()).sort(),
    own: Object.fromEntries(process.argv.slice(2).map((a, i) => [a, own[i]])), hostLo,
    sockets, named, visited,
    unixSockets: read('/proc/net/unix'),
    shmMounted: fs.readFileSync('/proc/self/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === '/dev/shm'),
    shmWrite, tmpMount, tmpFill, tmpExec,
    memLimit: read('/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/memory.max'),
    memswLimit: read('/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes'),
    swapMax: read('/sys/fs/cgroup/memory.swap.max'),
  }));
});
`;

interface Inside {
  interfaces: string[];
  own: Record<string, string>;
  hostLo: string;
  sockets: string[];
  named: string[];
  visited: number;
  unixSockets: string | null;
  shmMounted: boolean;
  shmWrite: string;
  tmpMount: string;
  tmpFill: string;
  tmpExec: string;
  memLimit: string | null;
  memswLimit: string | null;
  swapMax: string | null;
}

// req: jail:network-none jail:no-engine-socket jail:memory-limit
test('[INV-2] from inside a real jail: no route out, host loopback unreachable, no engine socket, no /dev/shm, /tmp noexec and sized, memory limit in the cgroup', async (t) => {
  if (!(await requireEngine(t))) return;
  let hits = 0;
  const srv = net.createServer((s) => {
    hits++;
    s.destroy();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.after(() => srv.close());
  const port = (srv.address() as net.AddressInfo).port;
  // The same port on each of the host's own addresses, reachable from the host (the control).
  const own = hostAddresses();
  for (const a of own) {
    const s = net.createServer((c) => {
      hits++;
      c.destroy();
    });
    await new Promise<void>((r) => s.listen(port, a, r));
    t.after(() => s.close());
    const accepted = new Promise((r) => s.once('connection', r));
    net.connect({ host: a, port }).on('error', () => undefined);
    await accepted;
  }
  const controlHits = hits;
  assert.equal(controlHits, own.length, 'each host address answers from the host');
  const memoryMb = 96;
  const { exit, tails } = await runToEnd(spec('inside', ['node', '-e', INSIDE, String(port), ...own], { limits: { memoryMb, cpu: 1, pids: 64, tmpfsMb: 8, diskMb: 64 } }));
  assert.equal(exit.exitCode, 0, tails.stderrTail);
  const r = JSON.parse(tails.stdoutTail) as Inside;

  assert.deepEqual(r.interfaces, ['lo'], 'only loopback exists');
  // No interface, no route: the kernel refuses before a packet is built.
  assert.deepEqual(Object.keys(r.own).sort(), own, 'the jail tried each of the host\'s own addresses');
  for (const [a, code] of Object.entries(r.own)) assert.equal(code, 'ENETUNREACH', `the host's ${a}, listening, is unreachable from the jail`);
  // The jail's 127.0.0.1 is its own loopback: nothing listens there, and the host server sees nothing.
  assert.equal(r.hostLo, 'ECONNREFUSED');
  assert.equal(hits, controlHits, 'no host server (loopback or its own addresses) saw a connection from the jail');

  assert.ok(r.visited > 100, `the filesystem walk saw only ${r.visited} entries`);
  assert.deepEqual(r.sockets, [], 'no unix socket file anywhere in the jail filesystem');
  assert.deepEqual(r.named, [], 'nothing named like an engine socket');
  assert.ok(!/docker|containerd/.test(r.unixSockets ?? ''), 'no engine socket among the network namespace\'s unix sockets');

  assert.equal(r.shmMounted, false, '/dev/shm is not mounted');
  assert.notEqual(r.shmWrite, 'ok', '/dev/shm cannot be written');

  // /tmp: a tmpfs, nosuid, nodev, noexec, and sized (8 MiB here: 12 MiB does not fit).
  assert.match(r.tmpMount, /^tmpfs \/tmp tmpfs /);
  for (const o of ['nosuid', 'nodev', 'noexec', 'size=8192k']) assert.ok(r.tmpMount.split(' ')[3]!.split(',').includes(o), `${o} missing: ${r.tmpMount}`);
  assert.equal(r.tmpFill, 'ENOSPC');
  assert.equal(r.tmpExec, 'EACCES', 'a binary copied to /tmp cannot run');

  const bytes = String(memoryMb * 1024 * 1024);
  assert.equal(r.memLimit, bytes, 'the memory limit is visible in the cgroup');
  // Swap equals memory: cgroup v1 pins memory+swap to the same bytes, v2 allows no swap.
  if (r.memswLimit !== null) assert.equal(r.memswLimit, bytes);
  else assert.equal(r.swapMax, '0');
});

// req: jail:pids-limit
test('[INV-2] a fork loop inside a real jail stops at the pids limit', async (t) => {
  if (!(await requireEngine(t))) return;
  const pids = 24;
  // 200 background forks; each one past the limit fails with EAGAIN and the loop goes on.
  // Only shell built-ins after the loop: with the pids limit reached, `cat` could not start.
  const sh = [
    'i=0; while [ $i -lt 200 ]; do ( sleep 30 & ) 2>/dev/null; i=$((i+1)); done',
    'p=/sys/fs/cgroup/pids; [ -d $p ] || p=/sys/fs/cgroup',
    'read cur < $p/pids.current; read max < $p/pids.max; read ev < $p/pids.events',
    'echo "$i $cur $max $ev"',
  ].join('; ');
  const { exit, tails } = await runToEnd(spec('forkloop', ['sh', '-c', sh], { limits: { memoryMb: 128, cpu: 1, pids, tmpfsMb: 4, diskMb: 64 } }));
  assert.equal(exit.exitCode, 0, tails.stderrTail);
  const [loops, cur, max, evName, evCount] = tails.stdoutTail.trim().split(/\s+/);
  assert.equal(loops, '200', 'the loop ran to its end');
  assert.equal(max, String(pids), 'the pids limit is the one brig set');
  assert.ok(Number(cur) <= pids, `${cur} tasks alive under a limit of ${pids}`);
  assert.equal(evName, 'max');
  assert.ok(Number(evCount) > 0, 'the kernel refused forks at the limit');
});
