import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChildProcess, execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DockerJailDriver, type JailSpec } from '../../../src/jail/index.js';
import { WorkspaceDisks } from '../../../src/jail/docker/workspace-disk.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, supervisorAt } from '../runs/fixture.js';
import { driver, ROOT, runToEnd, spec, sweepOwn } from './helpers.js';

const MIB = 1024 * 1024;

/** Runs in the jail: what /workspace is, then writes 1 MiB chunks until the disk refuses. */
const FILL = `
const fs = require('node:fs');
const line = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\\n').find((l) => l.split(' ')[4] === '/workspace') ?? '';
const [pre, post] = line.split(' - ');
const st = fs.statfsSync('/workspace');
const limit = Number(process.argv[1]) * 1024 * 1024;
const fd = fs.openSync('/workspace/fill', 'w');
const chunk = Buffer.alloc(1024 * 1024, 7);
let written = 0, code = null;
while (written < limit) {
  try { written += fs.writeSync(fd, chunk); } catch (e) { code = e.code; break; }
}
try { fs.fsyncSync(fd); } catch (e) { code = code ?? e.code; }
fs.closeSync(fd);
fs.rmSync('/workspace/fill');
fs.mkdirSync('/workspace/out', { recursive: true });
fs.writeFileSync('/workspace/out/ok.txt', 'still works');
console.log(JSON.stringify({ opts: (pre ?? '').split(' ')[5] ?? '', fstype: (post ?? '').split(' ')[0] ?? '', total: st.blocks * st.bsize, written, code, entries: fs.readdirSync('/workspace') }));
`;

function hostFree(dir: string): number {
  const st = fs.statfsSync(dir);
  return st.bavail * st.bsize;
}

/**
 * Whether this host can give workspace quotas. In CI it must (the project's scripts make it so:
 * a missing one fails the test); elsewhere the test is skipped saying why.
 */
function quotaHere(t: { skip: (why: string) => void }): boolean {
  const why = WorkspaceDisks.unavailable();
  if (why === null) return true;
  if (process.env.CI === 'true' || process.env.CI === '1') assert.fail(`the workspace quota is unavailable in CI: ${why}`);
  t.skip(`no quota here: ${why}`);
  return false;
}

function loopsBacking(file: string): string[] {
  const out = execFileSync('/usr/sbin/losetup', ['--list', '--noheadings', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(file)).map((l) => l.trim().split(/\s+/)[0]!);
}

// req: limits:kernel-enforced
test('[INV-9] /workspace is capped at diskMb, proven from inside: a write past it gets ENOSPC, statfs shows the cap, nosuid,nodev; the host gives at most the cap; nothing is left', async (t) => {
  if (!(await requireEngine(t))) return;
  t.after(sweepOwn);
  const diskMb = 32;
  // Ask for three times the cap.
  const s: JailSpec = spec('disk', ['node', '-e', FILL, String(diskMb * 3)], { limits: { memoryMb: 128, cpu: 1, pids: 64, tmpfsMb: 4, diskMb } });
  const image = driver.disks.imagePath(s.runId);
  const freeBefore = hostFree('/var/lib');
  let allocated = -1;
  let loops: string[] = [];
  const { exit, tails } = await runToEnd(s, async (jail) => {
    allocated = fs.statSync(image).blocks * 512;
    loops = loopsBacking(image);
    const rep = await jail.collect(path.join(await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-dq-')), 'out'), { perFileBytes: MIB, perRunBytes: MIB, maxEntries: 10 });
    assert.deepEqual(rep.files.map((f) => f.path), ['ok.txt'], 'the output written after the refusal is collected');
  });
  assert.equal(exit.exitCode, 0, tails.stderrTail);
  const r = JSON.parse(tails.stdoutTail.trim().split('\n').pop()!) as { opts: string; fstype: string; total: number; written: number; code: string | null; entries: string[] };
  assert.equal(r.code, 'ENOSPC', `the write past the cap is refused inside the jail (${JSON.stringify(r)})`);
  assert.ok(r.written <= diskMb * MIB, `at most the cap was written (${r.written} bytes)`);
  assert.ok(r.written >= (diskMb - 4) * MIB, `nearly the whole cap is usable (${r.written} bytes)`);
  assert.ok(r.total <= diskMb * MIB && r.total > (diskMb - 4) * MIB, `statfs in the jail shows the cap, not the host (${r.total})`);
  assert.equal(r.fstype, 'ext4');
  for (const o of ['nosuid', 'nodev']) assert.ok(r.opts.split(',').includes(o), `/workspace is ${o} (${r.opts})`);
  assert.ok(!r.entries.includes('lost+found'), 'no root-owned lost+found in the workspace');
  // The host: the image holds at most the cap, and the host's free space fell by no more.
  assert.ok(allocated > 0 && allocated <= diskMb * MIB + MIB, `the image took ${allocated} bytes of host disk`);
  assert.equal(loops.length, 1, 'one loop device backed the run');
  // Three times the cap (96 MiB) was asked for: without the quota the host would give all of it.
  assert.ok(freeBefore - hostFree('/var/lib') < (diskMb + 24) * MIB, 'the host disk gave the run at most its cap (plus a little other activity)');
  // Released with the jail: no image, no loop device.
  assert.equal(fs.existsSync(image), false, 'the image is deleted with the jail');
  assert.deepEqual(loopsBacking(image), [], 'its loop device is detached');
});

test('control: under the explicit opt-out (BRIG_WORKSPACE_QUOTA=none) the same write goes through to the host disk', async (t) => {
  if (!(await requireEngine(t))) return;
  const open = new DockerJailDriver({ owner: ROOT, workspaceQuota: 'none' });
  t.after(() => open.sweep((id) => !id.startsWith(ROOT)).then(() => undefined));
  const s = spec('nodisk', ['node', '-e', FILL, '96'], { limits: { memoryMb: 128, cpu: 1, pids: 64, tmpfsMb: 4, diskMb: 32 } });
  const jail = await open.create(s);
  try {
    await jail.start();
    assert.equal((await jail.wait()).exitCode, 0);
    const r = JSON.parse(jail.tails().stdoutTail.trim().split('\n').pop()!) as { written: number; code: string | null };
    assert.deepEqual([r.code, r.written], [null, 96 * MIB], 'with no quota, 96 MiB went through a 32 MiB "limit"');
    assert.equal(fs.existsSync(open.disks.imagePath(s.runId)), false, 'no disk image under the opt-out');
  } finally {
    await jail.destroy();
  }
});

test('disks outlive nothing: sweep releases a non-live run\'s image and a loop device left on a deleted image (a crash between detach and delete)', async (t) => {
  if (!quotaHere(t)) return;
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-disks-'));
  const disks = new WorkspaceDisks(path.join(dir, 'owner')); // made by the first create, as /var/lib/brig/disks/<owner> is
  t.after(async () => {
    await disks.sweep(() => false).catch(() => {});
    await fs.promises.rm(dir, { recursive: true, force: true });
  });
  const live = await disks.create('r-live', 16, { uid: 65534, gid: 65534 });
  const dead = await disks.create('r-dead', 16, { uid: 65534, gid: 65534 });
  const crashed = await disks.create('r-crashed', 16, { uid: 65534, gid: 65534 });
  // Outside the jail's reach: the image 0600 in a 0700 directory, both root's.
  assert.equal((fs.statSync(live.image).mode & 0o777).toString(8), '600');
  assert.equal((fs.statSync(disks.dir).mode & 0o777).toString(8), '700');
  await fs.promises.rm(crashed.image); // the loop device still holds the deleted image
  assert.deepEqual((await disks.runIds()).sort(), ['r-dead', 'r-live']);
  const n = await disks.sweep((id) => id === 'r-live');
  assert.equal(n, 2, 'the dead run\'s disk and the orphaned loop device');
  assert.deepEqual(await disks.runIds(), ['r-live']);
  assert.deepEqual(loopsBacking(dead.image), []);
  assert.deepEqual(loopsBacking(crashed.image), [], 'the loop device on the deleted image is detached');
  assert.deepEqual(loopsBacking(live.image), [live.device], 'the live run keeps its disk');
  assert.equal(await disks.release('r-live'), true);
  assert.equal(await disks.release('r-live'), false, 'release is safe to call twice');
  assert.deepEqual(loopsBacking(live.image), []);
});

test('a workspace disk\'s commands (mkfs, debugfs, losetup) are started by the command helper, never by the caller\'s thread — and the disk is still made, sized and released (issue 29 item 7)', async (t) => {
  if (!quotaHere(t)) return;
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-disks-'));
  const disks = new WorkspaceDisks(path.join(dir, 'owner'));
  // Every process this (the caller's) thread starts goes through ChildProcess.prototype.spawn.
  const started: string[] = [];
  const proto = ChildProcess.prototype as unknown as { spawn: (this: ChildProcess, o: { file: string }) => unknown };
  const real = proto.spawn;
  proto.spawn = function (o) {
    started.push(o.file);
    return real.call(this, o);
  };
  t.after(async () => {
    proto.spawn = real;
    await disks.sweep(() => false).catch(() => {});
    await fs.promises.rm(dir, { recursive: true, force: true });
  });
  // The control: a command this thread starts is seen.
  await new Promise((r) => execFile('/bin/true', r));
  assert.deepEqual(started, ['/bin/true'], 'the watch sees what this thread starts');
  started.length = 0;
  const disk = await disks.create('r-helper', 16, { uid: 65534, gid: 65534 });
  assert.match(disk.device, /^\/dev\/loop\d+$/);
  assert.deepEqual(loopsBacking(disk.image), [disk.device], 'the loop device backs the image');
  assert.equal(fs.statSync(disk.image).size, 16 * MIB, 'the image is exactly the cap');
  const fsType = execFileSync('/usr/sbin/blkid', ['-o', 'value', '-s', 'TYPE', disk.image], { encoding: 'utf8' }).trim();
  assert.equal(fsType, 'ext4');
  assert.equal(await disks.release('r-helper'), true);
  assert.deepEqual(loopsBacking(disk.image), []);
  const tools = started.filter((f) => /mkfs|debugfs|losetup/.test(f));
  assert.deepEqual(tools, [], `the caller's thread started ${tools.join(', ')}`);
  assert.ok(started.every((f) => f === process.execPath), `only the helper itself, if anything: ${started.join(', ')}`);
});

// req: lease:limits-min
test('[INV-1] the lease\'s diskMb sizes the jail, and a child asking for more is bounded by its parent', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  const DF = ['node', '-e', "const s = require('node:fs').statfsSync('/workspace'); console.log(s.blocks * s.bsize)"];
  try {
    const small = await c.supervisor.spawn({ task: 'df', kind: 'command', argv: DF, limits: { diskMb: 24 } });
    assert.ok(small.ok, small.ok ? '' : small.error.message);
    assert.equal(small.value.endReason, 'completed', JSON.stringify(small.value.error));
    const total = Number(small.value.stdoutTail?.trim());
    assert.ok(total <= 24 * MIB && total > 20 * MIB, `the jail's /workspace is the lease's 24 MiB (${total})`);
    const lease = c.leases.get(small.value.leaseId!);
    assert.equal(lease?.limits.diskMb, 24);
    // The worker profile's ceiling is 1024 MiB: asking for more is clamped to it, never above.
    const big = await c.supervisor.spawn({ task: 'df', kind: 'command', profile: 'worker', argv: DF, limits: { diskMb: 1 << 20 } });
    assert.ok(big.ok);
    const bigTotal = Number(big.value.stdoutTail?.trim());
    assert.ok(bigTotal <= 1024 * MIB, `bounded by the profile (${bigTotal})`);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

/** Runs in the jail: each input's owner, mode and bytes, out/'s, and what /workspace lists. */
const SEE = `
const fs = require('node:fs');
const see = (p) => { const s = fs.statSync(p); return { uid: s.uid, gid: s.gid, mode: (s.mode & 0o7777).toString(8), dir: s.isDirectory() }; };
fs.writeFileSync('/workspace/out/made.txt', 'by the child');
console.log(JSON.stringify({
  root: fs.readdirSync('/workspace').sort(),
  a: { ...see('/workspace/a.txt'), text: fs.readFileSync('/workspace/a.txt', 'utf8') },
  deep: see('/workspace/deep/er'),
  tool: see('/workspace/deep/er/tool.sh'),
  secret: see('/workspace/.brig/token'),
  out: see('/workspace/out'),
}));
`;

test('a disk-backed jail holds its inputs and out/ from the disk\'s making: the jail user\'s, with their modes, and no archive is put through the engine before the start', async (t) => {
  if (!(await requireEngine(t))) return;
  if (!quotaHere(t)) return;
  t.after(sweepOwn);
  // Every request the driver makes of the engine, as method and path.
  const calls: string[] = [];
  const modem = driver.docker.modem as unknown as { dial: (o: { method: string; path: string }, cb: unknown) => unknown };
  const dial = modem.dial;
  modem.dial = function (o, cb) {
    calls.push(`${o.method} ${o.path.split('?')[0]}`);
    return dial.call(this, o, cb);
  };
  t.after(() => {
    modem.dial = dial;
  });
  const s = spec('inputs', ['node', '-e', SEE], {
    inputs: [
      { path: 'a.txt', data: 'hello' },
      { path: 'deep/er/tool.sh', data: '#!/bin/sh\n', mode: 0o755 },
      { path: '.brig/token', data: 'secret', mode: 0o400 },
    ],
  });
  let startedAt = -1;
  const jail = await driver.create(s);
  try {
    startedAt = calls.length;
    await jail.start();
    const exit = await jail.wait();
    const out = jail.tails().stdoutTail.trim();
    assert.equal(exit.exitCode, 0, jail.tails().stderrTail);
    const seen = JSON.parse(out) as Record<string, { uid: number; gid: number; mode: string; dir: boolean; text?: string }> & { root: string[] };
    assert.deepEqual(seen.root, ['.brig', 'a.txt', 'deep', 'out'], 'the inputs and out/, no lost+found');
    for (const k of ['a', 'deep', 'tool', 'secret', 'out'] as const) assert.deepEqual([seen[k]!.uid, seen[k]!.gid], [65534, 65534], `${k} is the jail user's`);
    assert.deepEqual([seen.a!.mode, seen.a!.text], ['644', 'hello']);
    assert.deepEqual([seen.deep!.mode, seen.deep!.dir], ['755', true], 'a parent directory made for an input');
    assert.equal(seen.tool!.mode, '755');
    assert.equal(seen.secret!.mode, '400');
    assert.deepEqual([seen.out!.mode, seen.out!.dir], ['755', true]);
    const dest = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-in-'));
    t.after(() => fs.promises.rm(dest, { recursive: true, force: true }));
    const collected = await jail.collect(path.join(dest, 'out'), { perFileBytes: MIB, perRunBytes: MIB, maxEntries: 10 });
    assert.deepEqual(collected.files.map((f) => f.path), ['made.txt'], 'what the child wrote in out/ is collected');
  } finally {
    await jail.destroy();
  }
  const before = calls.slice(0, startedAt);
  assert.ok(before.some((c) => /^POST \/containers\/create$/.test(c)), `the watch saw the create: ${before.join(', ')}`);
  assert.deepEqual(before.filter((c) => /\/archive$/.test(c)), [], 'no archive put before the start');
});

test('inputs larger than the workspace disk are refused as invalid_input, naming both sizes, and nothing is left', async (t) => {
  if (!(await requireEngine(t))) return;
  if (!quotaHere(t)) return;
  t.after(sweepOwn);
  const s = spec('toobig', ['true'], { inputs: [{ path: 'big.bin', data: Buffer.alloc(20 * MIB, 1) }], limits: { memoryMb: 128, cpu: 1, pids: 64, tmpfsMb: 16, diskMb: 16 } });
  await assert.rejects(driver.create(s), (e: Error & { code?: string }) => {
    assert.equal(e.code, 'invalid_input', e.message);
    assert.match(e.message, /20971520 bytes.*16 MiB/);
    return true;
  });
  assert.equal(fs.existsSync(driver.disks.imagePath(s.runId)), false, 'no image left');
  assert.equal(fs.existsSync(driver.disks.stagePath(s.runId)), false, 'no stage left');
  const left = await driver.docker.listContainers({ all: true, filters: { name: [s.runId] } });
  assert.deepEqual(left, [], 'no container made');
});
