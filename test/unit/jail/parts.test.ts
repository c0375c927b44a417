import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeProbe, parseProbe, type ProbeReport } from '../../../src/jail/probe.js';
import { inputsArchive, workspaceRelative } from '../../../src/jail/docker/docker-jail.js';
import { TailBuffer } from '../../../src/jail/docker/tail.js';
import { isBrigError } from '../../../src/util/errors.js';

const GOOD: ProbeReport = {
  uid: 65534, gid: 65534, noNewPrivs: '1', capEff: '0000000000000000', capBnd: '0000000000000000', seccomp: '2',
  interfaces: ['lo'], tcpLoopbackHost: 'ECONNREFUSED', tcpPublic: 'ENETUNREACH', shmWrite: 'ENOENT', rootWrite: 'EROFS', workspaceWrite: 'ok', tmpWrite: 'ok',
  dockerSocket: false, mounts: [], envKeys: ['PATH'],
};

test('judgeProbe passes a hardened report and fails each weakness', () => {
  assert.ok(judgeProbe(GOOD).every((c) => c.ok));
  const weak: [Partial<ProbeReport>, string][] = [
    [{ uid: 0 }, 'non-root user'],
    [{ noNewPrivs: '0' }, 'no-new-privileges'],
    [{ capEff: '00000000a80425fb' }, 'no effective capabilities'],
    [{ seccomp: '0' }, 'seccomp filter on'],
    [{ interfaces: ['eth0', 'lo'] }, 'no network interface but loopback'],
    [{ tcpLoopbackHost: 'connected' }, 'host loopback unreachable'],
    [{ tcpPublic: 'connected' }, 'public address unreachable'],
    [{ shmWrite: 'ok' }, 'no writable /dev/shm'],
    [{ rootWrite: 'ok' }, 'read-only root filesystem'],
    [{ dockerSocket: true }, 'no engine socket'],
  ];
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
