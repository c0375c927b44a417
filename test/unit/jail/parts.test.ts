import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeProbe, parseProbe, type ProbeReport } from '../../../src/jail/probe.js';
import { inputsArchive, workspaceRelative } from '../../../src/jail/docker/docker-jail.js';
import { TailBuffer } from '../../../src/jail/docker/tail.js';
import { isBrigError } from '../../../src/util/errors.js';

const GOOD: ProbeReport = {
  uid: 65534, gid: 65534, noNewPrivs: '1', capEff: '0000000000000000', capBnd: '0000000000000000', seccomp: '2',
  interfaces: ['lo'], tcpLoopbackHost: 'ECONNREFUSED', tcpHostAddresses: { '192.0.2.2': 'ENETUNREACH', 'fd00::2': 'ENETUNREACH' }, routes: [], shmWrite: 'ENOENT', rootWrite: 'EROFS', workspaceWrite: 'ok', tmpWrite: 'ok',
  dockerSocket: false, mounts: [], envKeys: ['PATH'],
  limits: { memory: String(128 * 1024 * 1024), memsw: String(128 * 1024 * 1024), swapMax: null, pids: '64', cpu: '100000 100000' },
  workspace: { bytes: 31 * 1024 * 1024, fstype: 'ext4', options: 'rw,nosuid,nodev,relatime' },
};
const LIMITS = { memoryMb: 128, pids: 64, cpu: 1, diskMb: 32 };

test('judgeProbe passes a hardened report and fails each weakness', () => {
  assert.ok(judgeProbe(GOOD).every((c) => c.ok));
  const weak: [Partial<ProbeReport>, string][] = [
    [{ uid: 0 }, 'non-root user'],
    [{ noNewPrivs: '0' }, 'no-new-privileges'],
    [{ capEff: '00000000a80425fb' }, 'no effective capabilities'],
    [{ seccomp: '0' }, 'seccomp filter on'],
    [{ interfaces: ['eth0', 'lo'] }, 'no network interface but loopback'],
    [{ tcpLoopbackHost: 'connected' }, 'host loopback unreachable'],
    [{ tcpHostAddresses: { '192.0.2.2': 'connected' } }, "host's own addresses unroutable"],
    [{ tcpHostAddresses: { '192.0.2.2': 'ENETUNREACH', 'fd00::2': 'ECONNREFUSED' } }, "host's own addresses unroutable"],
    [{ tcpHostAddresses: { '192.0.2.2': 'timeout' } }, "host's own addresses unroutable"],
    [{ routes: ['route eth0 00000000 0102000A 0003 0 0 0 00000000 0 0 0'] }, 'no route but loopback'],
    [{ shmWrite: 'ok' }, 'no writable /dev/shm'],
    [{ rootWrite: 'ok' }, 'read-only root filesystem'],
    [{ dockerSocket: true }, 'no engine socket'],
  ];
  const limitWeak: [Partial<ProbeReport['limits']>, string][] = [
    [{ memory: '9223372036854771712' }, 'memory limit in the cgroup'],
    [{ memsw: '9223372036854771712' }, 'no swap beyond memory'],
    [{ memsw: null, swapMax: 'max' }, 'no swap beyond memory'],
    [{ pids: 'max' }, 'pids limit in the cgroup'],
    [{ cpu: '-1 100000' }, 'cpu quota in the cgroup'],
  ];
  assert.ok(judgeProbe(GOOD, LIMITS).every((c) => c.ok));
  assert.ok(judgeProbe({ ...GOOD, limits: { ...GOOD.limits, memsw: null, swapMax: '0', cpu: 'max 100000' } }, { ...LIMITS, cpu: 1 }).some((c) => !c.ok), 'v2 cpu.max "max" is no quota');
  for (const [patch, name] of limitWeak) {
    const failed = judgeProbe({ ...GOOD, limits: { ...GOOD.limits, ...patch } }, LIMITS).filter((c) => !c.ok).map((c) => c.name);
    assert.deepEqual(failed, [name]);
  }
  const diskWeak: [Partial<ProbeReport['workspace']>, string][] = [
    [{ bytes: 78 * 1024 ** 3, fstype: 'ext4' }, 'workspace capped at its disk'],
    [{ fstype: 'overlay' }, 'workspace capped at its disk'],
    [{ options: 'rw,relatime' }, 'workspace nosuid,nodev'],
    [{ options: 'rw,nosuid,relatime' }, 'workspace nosuid,nodev'],
  ];
  for (const [patch, name] of diskWeak) {
    const failed = judgeProbe({ ...GOOD, workspace: { ...GOOD.workspace, ...patch } }, LIMITS).filter((c) => !c.ok).map((c) => c.name);
    assert.deepEqual(failed, [name]);
  }
  assert.ok(!judgeProbe(GOOD, { memoryMb: 128, pids: 64, cpu: 1 }).some((c) => ['workspace capped at its disk', 'workspace nosuid,nodev'].includes(c.name)), 'no disk checks under the opt-out');
  const alone = judgeProbe({ ...GOOD, tcpHostAddresses: {} }).find((c) => c.name === "host's own addresses unroutable");
  assert.deepEqual([alone?.ok, alone?.saw], [true, 'none to try (the host has only loopback)'], 'a host with only loopback has nothing of its own to try');
  for (const [patch, name] of weak) {
    const failed = judgeProbe({ ...GOOD, ...patch }).filter((c) => !c.ok).map((c) => c.name);
    assert.deepEqual(failed, [name]);
  }
});

test('parseProbe reads the last JSON line and rejects garbage', () => {
  assert.deepEqual(parseProbe(`noise\n${JSON.stringify(GOOD)}\n`), GOOD);
  assert.equal(parseProbe('not json'), undefined);
  assert.equal(parseProbe('{"uid":"root"}'), undefined);
});

test('workspaceRelative refuses escapes', () => {
  assert.equal(workspaceRelative('a/./b'), 'a/b');
  for (const bad of ['/etc', '../x', 'a/../../x', '', '.', 'a\\b']) assert.equal(workspaceRelative(bad), undefined, bad);
});

test('inputs are archived owned by the jail user, and escapes are refused', async () => {
  const buf = await inputsArchive([{ path: 'in/a.txt', data: 'hi' }]);
  assert.ok(buf.length >= 1024);
  assert.ok(buf.includes(Buffer.from('in/a.txt')));
  await assert.rejects(inputsArchive([{ path: '../x', data: '' }]), (e) => isBrigError(e, 'invalid_input'));
});

test('TailBuffer keeps the last bytes and counts all', () => {
  const t = new TailBuffer(10);
  for (let i = 0; i < 100; i++) t.push(Buffer.from(`${i % 10}`));
  t.push(Buffer.from('abcdefghijklmnop'));
  assert.equal(t.text(), 'ghijklmnop');
  assert.equal(t.total, 116);
});
