import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { isBrigError } from '../../../src/util/errors.js';
import { hostAddresses, judgeProbe, parseProbe, PROBE_SCRIPT, probeArgv } from '../../../src/jail/probe.js';
import { DockerJailDriver, LABELS, renderCreateBody, identityOf } from '../../../src/jail/index.js';
import { verifyInspect, type InspectView } from '../../../src/jail/docker/verify.js';
import { driver, ROOT, runToEnd, spec, sweepOwn } from './helpers.js';

after(sweepOwn);

/**
 * A server on the supervisor's loopback and, on the same port, on each of the host's own
 * addresses (probeArgv aims there too): reachable from here, never from a jail.
 */
async function loopbackServer(): Promise<{ port: number; close: () => void; hits: () => number }> {
  let hits = 0;
  const servers: net.Server[] = [];
  const listen = (host: string, port: number) =>
    new Promise<number>((resolve, reject) => {
      const srv = net.createServer((s) => {
        hits++;
        s.destroy();
      });
      srv.once('error', reject);
      srv.listen(port, host, () => {
        servers.push(srv);
        resolve((srv.address() as net.AddressInfo).port);
      });
    });
  const port = await listen('127.0.0.1', 0);
  for (const a of hostAddresses()) await listen(a, port);
  return { port, close: () => servers.forEach((s) => s.close()), hits: () => hits };
}

// req: jail:non-root jail:no-caps jail:no-new-privs jail:seccomp jail:network-none jail:read-only-root jail:no-engine-socket jail:pids-limit jail:memory-limit jail:cpu-limit
test('[INV-2] from inside a real jail: non-root, no caps, no-new-privs, seccomp, no network, read-only root', async (t) => {
  if (!(await requireEngine(t))) return;
  const srv = await loopbackServer();
  try {
    const limits = { memoryMb: 96, pids: 48, cpu: 0.5 };
    const { exit, tails } = await runToEnd(spec('probe', probeArgv(srv.port), { limits: { ...limits, tmpfsMb: 8, diskMb: 64 } }));
    assert.equal(exit.exitCode, 0, tails.stderrTail);
    const report = parseProbe(tails.stdoutTail);
    assert.ok(report, `probe output unreadable: ${tails.stdoutTail} ${tails.stderrTail}`);
    const checks = judgeProbe(report, { ...limits, diskMb: 64 });
    assert.ok(checks.some((c) => c.name === 'workspace capped at its disk'), 'the disk was judged');
    assert.ok(checks.some((c) => c.name === 'cpu quota in the cgroup'), 'limits were judged');
    const failed = checks.filter((c) => !c.ok);
    assert.deepEqual(failed, []);
    assert.deepEqual(Object.keys(report.tcpHostAddresses).sort(), hostAddresses(), 'the probe tried each of the host\'s own addresses');
    for (const [a, code] of Object.entries(report.tcpHostAddresses)) assert.equal(code, 'ENETUNREACH', `${a}: no route from the jail`);
    assert.deepEqual(report.routes, [], 'the jail has no route but loopback\'s');
    assert.equal(srv.hits(), 0, 'the host servers (loopback and its own addresses) saw no connection from the jail');
    const mountPoints = report.mounts.map((m) => m.split(' ')[0]);
    assert.ok(!mountPoints.some((m) => m?.includes('docker.sock')));
    assert.ok(mountPoints.includes('/workspace'));
  } finally {
    srv.close();
  }
});

// req: secrets:env-from-nothing
test('[INV-6] the child environment is built from nothing: only the spec env (plus the engine HOSTNAME and passwd HOME)', async (t) => {
  if (!(await requireEngine(t))) return;
  process.env.BRIG_TEST_LEAK_CANARY = 'sk-canary';
  t.after(() => delete process.env.BRIG_TEST_LEAK_CANARY);
  const { tails } = await runToEnd(spec('env', ['node', '-e', PROBE_SCRIPT], { env: { ONLY_THIS: '1' } }));
  // HOSTNAME comes from the engine, HOME from the image's /etc/passwd (the jail user's home).
  assert.deepEqual(parseProbe(tails.stdoutTail)?.envKeys, ['HOME', 'HOSTNAME', 'ONLY_THIS', 'PATH']);
});

// req: jail:verified
test('[INV-2] verification reads real engine output: a weakened container is caught', async (t) => {
  if (!(await requireEngine(t))) return;
  const image = await driver.ensureImage();
  const s = spec('drift', ['true']);
  const r = renderCreateBody(s, image);
  assert.ok(r.ok);
  const weak = structuredClone(r.value) as unknown as { HostConfig: Record<string, unknown> };
  weak.HostConfig.CapDrop = [];
  weak.HostConfig.ReadonlyRootfs = false;
  weak.HostConfig.Mounts = [];
  const c = await driver.docker.createContainer({ name: `brig-run-${s.runId}`, ...(weak as object) });
  try {
    const drift = verifyInspect((await c.inspect()) as unknown as InspectView, r.value, s.limits).map((d) => d.field);
    for (const f of ['HostConfig.CapDrop', 'HostConfig.ReadonlyRootfs', 'HostConfig.Mounts']) assert.ok(drift.includes(f), `${f} missed: ${drift}`);
  } finally {
    await c.remove({ force: true });
  }
});

// req: jail:memory-limit
test('[INV-2] the memory limit is enforced by the kernel (OOM kill seen)', async (t) => {
  if (!(await requireEngine(t))) return;
  const hog = 'const a=[]; for(;;) a.push(Buffer.alloc(4e6, 1));';
  const { exit } = await runToEnd(spec('oom', ['node', '-e', hog], { limits: { memoryMb: 48, cpu: 1, pids: 64, tmpfsMb: 4, diskMb: 64 } }));
  assert.notEqual(exit.exitCode, 0);
  assert.equal(exit.oomKilled, true);
});

// req: jail:pids-limit
test('[INV-2] the pids limit is enforced by the kernel (forks beyond it fail)', async (t) => {
  if (!(await requireEngine(t))) return;
  const forks = `const { spawn } = require('child_process'); let ok = 0, bad = 0;
for (let i = 0; i < 80; i++) { try { const p = spawn('sleep', ['6']); p.on('error', () => bad++); p.on('spawn', () => ok++); } catch { bad++; } }
setTimeout(() => { console.log(JSON.stringify({ ok, bad })); process.exit(0); }, 3000);`;
  const { tails } = await runToEnd(spec('pids', ['node', '-e', forks], { limits: { memoryMb: 128, cpu: 1, pids: 32, tmpfsMb: 4, diskMb: 64 } }));
  const r = JSON.parse(tails.stdoutTail) as { ok: number; bad: number };
  assert.ok(r.ok < 32, `started ${r.ok} processes under a pids limit of 32`);
  assert.ok(r.bad > 0);
});

// req: jail:no-host-paths
test('[INV-2] artifacts are mounted read-only and inputs land in the workspace owned by the jail user', async (t) => {
  if (!(await requireEngine(t))) return;
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-art-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const art = path.join(dir, 'data.txt');
  fs.writeFileSync(art, 'artifact-bytes');
  const script = `const fs=require('fs');
let w; try { fs.writeFileSync('/artifacts/data.txt','x'); w='ok'; } catch (e) { w=e.code; }
const st=fs.statSync('/workspace/in/task.txt');
console.log(JSON.stringify({ art: fs.readFileSync('/artifacts/data.txt','utf8'), w, input: fs.readFileSync('/workspace/in/task.txt','utf8'), uid: st.uid }));`;
  const { exit, tails } = await runToEnd(
    spec('art', ['node', '-e', script], { artifacts: [{ hostPath: art, name: 'data.txt', identity: (await identityOf(fs.realpathSync(art)))! }], inputs: [{ path: 'in/task.txt', data: 'the task' }] }),
  );
  assert.equal(exit.exitCode, 0, tails.stderrTail);
  assert.deepEqual(JSON.parse(tails.stdoutTail), { art: 'artifact-bytes', w: 'EROFS', input: 'the task', uid: 65534 });
  assert.equal(fs.readFileSync(art, 'utf8'), 'artifact-bytes');
});

// req: end:released
test('[INV-8] kill ends a running jail, and destroy leaves no container or volume (twice is fine)', async (t) => {
  if (!(await requireEngine(t))) return;
  const s = spec('kill', ['sleep', '60']);
  const jail = await driver.create(s);
  try {
    await jail.start();
    const again = await driver.attach(s.runId);
    assert.ok(again, 'attach finds the running jail');
    assert.equal(again.id, jail.id);
    await jail.kill();
    const exit = await jail.wait();
    assert.equal(exit.exitCode, 137);
  } finally {
    await jail.destroy();
    await jail.destroy();
  }
  const left = (await driver.listLabelled()).filter((r) => r.runId === s.runId);
  assert.deepEqual(left, []);
  assert.equal(await driver.attach(s.runId), null);
});

test('sweep removes only labelled objects of runs that are not live', async (t) => {
  if (!(await requireEngine(t))) return;
  const keep = await driver.create(spec('keep', ['true']));
  const drop = await driver.create(spec('drop', ['true']));
  try {
    const res = await driver.sweep((id) => id !== drop.runId);
    assert.deepEqual(res, { containers: 1, volumes: 1, disks: 1 }, 'its container, its volume and its workspace disk');
    const mine = (await driver.listLabelled()).filter((r) => r.rootRunId === ROOT).map((r) => r.runId);
    assert.ok(mine.includes(keep.runId));
    assert.ok(!mine.includes(drop.runId));
  } finally {
    await keep.destroy();
    await drop.destroy();
  }
});

test('sweep never crosses owners: another supervisor\'s jails are left alone', async (t) => {
  if (!(await requireEngine(t))) return;
  const mine = await driver.create(spec('owned', ['true']));
  try {
    const other = new DockerJailDriver({ owner: `${ROOT}-other` });
    await other.sweep(() => false);
    assert.equal(await other.attach(mine.runId), null);
    assert.ok((await driver.listLabelled()).some((r) => r.runId === mine.runId && r.kind === 'container'));
    assert.ok(!(await other.listLabelled()).some((r) => r.runId === mine.runId));
  } finally {
    await mine.destroy();
  }
});

// req: jail:fresh
test('[INV-2] a workspace is always fresh: a leftover volume of the same run is refused, not reused', async (t) => {
  if (!(await requireEngine(t))) return;
  const s = spec('stale', ['true']);
  await driver.docker.createVolume({ Name: `brig-ws-${s.runId}`, Labels: { [LABELS.managed]: '1', [LABELS.owner]: driver.owner, [LABELS.runId]: s.runId, [LABELS.rootRunId]: ROOT } });
  try {
    await assert.rejects(driver.create(s), (e) => isBrigError(e, 'jail_failed'));
    const left = (await driver.listLabelled()).filter((r) => r.runId === s.runId).map((r) => r.kind);
    assert.deepEqual(left, ['volume'], 'the refused create made no container and left the foreign volume alone');
  } finally {
    await driver.docker.getVolume(`brig-ws-${s.runId}`).remove();
  }
});

/** The engine's own event log for a window, as parsed JSON lines. */
async function engineEvents(since: number, until: number, filters: Record<string, string[]>): Promise<{ Type: string; Action: string; Actor: { ID: string; Attributes: Record<string, string> } }[]> {
  const stream = (await driver.docker.getEvents({ since, until, filters: JSON.stringify(filters) } as object)) as NodeJS.ReadableStream;
  let text = '';
  for await (const c of stream as AsyncIterable<Buffer>) text += c.toString();
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as never);
}

// req: jail:verified
test('[INV-2] no weakened container is ever started: an image that adds a VOLUME is refused before the engine makes anything', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await driver.ensureImage();
  // A real engine would really weaken the jail: the image's VOLUME becomes an extra writable
  // mount brig never asked for, outside the run's capped disk. The image contract refuses it
  // before any create (image-contract.ts); verify stays the net behind it (profile.test.ts).
  const weakTag = `brig-test-weak:${ROOT.toLowerCase()}`;
  const dockerfile = `FROM ${base}\nENV INJECTED=1\nVOLUME /data\nLABEL brig.test=${ROOT}\n`;
  await new Promise<void>((resolve, reject) => {
    const p = execFile('docker', ['build', '-q', '-t', weakTag, '-'], (e) => (e ? reject(e) : resolve()));
    p.stdin!.end(dockerfile);
  });
  t.after(() => driver.docker.getImage(weakTag).remove({ force: true }).catch(() => undefined));
  const s = spec('weak', ['sh', '-c', 'echo ran > /workspace/ran'], { image: weakTag });
  // The window starts after the build's own containers and their volumes (whole seconds).
  await new Promise((r) => setTimeout(r, 1100));
  const since = Math.floor(Date.now() / 1000);
  await assert.rejects(driver.create(s), (e) => isBrigError(e, 'image_refused') && (e.data as { volumes?: string[] }).volumes?.[0] === '/data');
  const until = Math.floor(Date.now() / 1000) + 1;
  await new Promise((r) => setTimeout(r, 1100)); // let `until` pass so the event stream ends
  const events = await engineEvents(since, until, { type: ['container'], label: [`${LABELS.runId}=${s.runId}`] });
  assert.deepEqual(events.map((e) => e.Action), [], 'the engine never saw a container of the refused run');
  assert.deepEqual((await driver.listLabelled()).filter((r) => r.runId === s.runId), [], 'no container, workspace volume or disk left');
  const vols = await engineEvents(since, until, { type: ['volume'], event: ['create'] });
  assert.deepEqual(vols.filter((e) => /^[0-9a-f]{64}$/.test(e.Actor.ID)), [], 'no anonymous volume was made');
});
