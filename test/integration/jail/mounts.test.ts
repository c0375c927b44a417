/**
 * [INV-2] The writable mounts, from inside a real jail.
 *
 * /workspace is the run's own ext4 disk (workspace-disk.ts), handed to the local volume
 * driver as a device with `o=nosuid,nodev`, which the engine passes to mount(2) as flags
 * (unlike a plain volume's, which it drops). Proven from inside, with what holds besides: the
 * mount is nosuid,nodev; a set-uid-root binary planted in /workspace (by the engine, as root:
 * the child itself cannot make one) runs without gaining root (nosuid, and no-new-privileges
 * under it); a device node for the engine's data disk planted there cannot be opened (nodev:
 * EACCES, and the device cgroup under it); the child cannot make a device node (no CAP_MKNOD).
 * /dev/mqueue is read-only (ReadonlyPaths), so no message queue can be created through it.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import tar from 'tar-stream';
import { requireEngine } from '../../helpers/engine.js';
import { driver, spec, sweepOwn } from './helpers.js';
import { syscallProbe } from './syscall-probe.js';

after(sweepOwn);

const INSIDE = String.raw`
const fs = require('node:fs'), cp = require('node:child_process');
const mi = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
const last = (p) => mi.filter((l) => l.split(' ')[4] === p).pop() || '';
const st = fs.statSync('/workspace/suid-probe'), disk = fs.statSync('/workspace/disk');
const ids = JSON.parse(cp.execFileSync('/workspace/suid-probe', ['ids', '/workspace/disk']).toString());
const mq = (() => { try { fs.writeFileSync('/dev/mqueue/brig-q', ''); return 'ok'; } catch (e) { return e.code; } })();
const mknod = cp.spawnSync('mknod', ['/workspace/null2', 'c', '1', '3']).status;
console.log(JSON.stringify({ workspace: last('/workspace'), mqueue: last('/dev/mqueue'), suidMode: st.mode, suidUid: st.uid, diskBlock: disk.isBlockDevice(), ids, mq, mknod }));
`;

/** major:minor of the filesystem holding the engine's data (its volumes live there). */
async function engineDisk(): Promise<{ major: number; minor: number }> {
  const info = (await driver.docker.info()) as { DockerRootDir?: string };
  const dev = fs.statSync(info.DockerRootDir ?? '/var/lib/docker').dev;
  const major = Number((BigInt(dev) >> 8n) & 0xfffn) | Number((BigInt(dev) >> 32n) & ~0xfffn);
  const minor = Number(BigInt(dev) & 0xffn) | Number((BigInt(dev) >> 12n) & ~0xffn);
  return major > 0 ? { major, minor } : { major: 1, minor: 1 }; // a virtual fs: /dev/mem instead
}

async function plant(probe: Buffer, disk: { major: number; minor: number }): Promise<Buffer> {
  const pack = tar.pack();
  pack.entry({ name: 'suid-probe', mode: 0o4755, uid: 0, gid: 0 }, probe);
  pack.entry({ name: 'disk', type: 'block-device', mode: 0o666, uid: 0, gid: 0, devmajor: disk.major, devminor: disk.minor });
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack as unknown as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

// req: jail:no-host-paths jail:no-new-privs
test('[INV-2] from inside a real jail: /workspace is nosuid,nodev: a set-uid-root binary in it gains nothing, a planted disk device cannot be opened, no device can be made, /dev/mqueue is read-only', async (t) => {
  if (!(await requireEngine(t))) return;
  const probe = await syscallProbe(t);
  if (!probe) return;
  const disk = await engineDisk();
  const jail = await driver.create(spec('mounts', ['node', '-e', INSIDE]));
  let out: string;
  try {
    // Past brig's inputs (which keep only 0o777 and owner 65534): the engine, as root, writes them.
    await driver.docker.getContainer(jail.id).putArchive(await plant(probe, disk), { path: '/workspace' });
    await jail.start();
    const exit = await jail.wait();
    assert.equal(exit.exitCode, 0, jail.tails().stderrTail);
    out = jail.tails().stdoutTail;
  } finally {
    await jail.destroy();
  }
  const r = JSON.parse(out) as {
    workspace: string;
    mqueue: string;
    suidMode: number;
    suidUid: number;
    diskBlock: boolean;
    ids: { uid: number; euid: number; open: string };
    mq: string;
    mknod: number;
  };
  assert.equal(r.suidUid, 0, 'the planted probe is owned by root');
  assert.equal(r.suidMode & 0o4000, 0o4000, 'and set-uid');
  assert.deepEqual([r.ids.uid, r.ids.euid], [65534, 65534], 'running it gains no privilege');
  assert.ok(r.diskBlock, `a block device node for ${disk.major}:${disk.minor} is in /workspace`);
  assert.equal(r.ids.open, 'EACCES', 'and it cannot be opened (nodev)');
  assert.notEqual(r.mknod, 0, 'the child cannot make a device node');
  assert.equal(r.mq, 'EROFS', 'no message queue can be created through /dev/mqueue');
  assert.ok(r.mqueue.split(' ')[5]!.split(',').includes('ro'), `/dev/mqueue mounted read-only: ${r.mqueue}`);
  const opts = r.workspace.split(' ')[5]!.split(',');
  for (const o of ['nosuid', 'nodev']) assert.ok(opts.includes(o), `/workspace is ${o}: ${r.workspace}`);
});
