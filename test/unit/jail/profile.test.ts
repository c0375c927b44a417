import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { HARDENED, renderCreateBody, verifyInspect, type JailSpec } from '../../../src/jail/index.js';
import type { CreateBody } from '../../../src/jail/docker/profile.js';
import type { InspectView } from '../../../src/jail/docker/verify.js';
import { GOLDEN_IMAGE, GOLDEN_OWNER, GOLDEN_SPEC } from './golden-spec.js';

const GOLDEN = path.resolve(import.meta.dirname, '../../fixtures/jail/create-body.golden.json');

function body(spec: JailSpec = GOLDEN_SPEC): CreateBody {
  const r = renderCreateBody(spec, GOLDEN_IMAGE, GOLDEN_OWNER);
  assert.ok(r.ok, r.ok ? '' : r.error.message);
  return r.value;
}

/** What a faithful engine reports on inspect for a body (shape as Docker 20.10 gives it). */
function faithfulInspect(b: CreateBody): InspectView {
  return {
    Config: { User: b.User, Image: b.Image, Cmd: [...b.Cmd], Env: [...b.Env].reverse(), NetworkDisabled: true, Labels: { ...b.Labels, extra: 'x' } },
    HostConfig: JSON.parse(JSON.stringify(b.HostConfig)) as Record<string, unknown>,
    Mounts: b.HostConfig.Mounts.map((m) =>
      m.Type === 'volume'
        ? { Type: 'volume', Name: m.Source, Source: `/var/lib/docker/volumes/${m.Source}/_data`, Destination: m.Target, RW: !m.ReadOnly }
        : { Type: 'bind', Source: m.Source, Destination: m.Target, RW: !m.ReadOnly },
    ),
    NetworkSettings: { Networks: { none: {} } },
  };
}

test('[INV-2] the rendered create body matches the reviewed golden file', () => {
  const golden = JSON.parse(fs.readFileSync(GOLDEN, 'utf8')) as unknown;
  assert.deepEqual(JSON.parse(JSON.stringify(body())), golden);
});

test('[INV-2] the hardened table is frozen and closed', () => {
  assert.ok(Object.isFrozen(HARDENED));
  assert.ok(Object.isFrozen(HARDENED.CapDrop));
  assert.throws(() => {
    (HARDENED as { NetworkMode: string }).NetworkMode = 'host';
  });
  assert.equal(HARDENED.NetworkMode, 'none');
});

test('[INV-6] the jail env is exactly the spec env plus PATH, never inherited', () => {
  const b = body({ ...GOLDEN_SPEC, env: { A: '1' } });
  assert.deepEqual(b.Env, ['A=1', 'PATH=/bin:/usr/bin']);
  assert.deepEqual(body({ ...GOLDEN_SPEC, env: {} }).Env, ['PATH=/bin:/usr/bin']);
});

test('unsafe specs are refused as values before any engine call', () => {
  const bad: [string, Partial<JailSpec>][] = [
    ['relative artifact', { artifacts: [{ hostPath: 'rel/x', name: 'x' }] }],
    ['dotdot artifact name', { artifacts: [{ hostPath: '/x', name: '..' }] }],
    ['slash artifact name', { artifacts: [{ hostPath: '/x', name: 'a/b' }] }],
    ['duplicate artifact names', { artifacts: [{ hostPath: '/x', name: 'a' }, { hostPath: '/y', name: 'a' }] }],
    ['relative broker dir', { brokerDir: 'brokers/x' }],
    ['empty argv', { argv: [] }],
    ['unsafe run id', { runId: '../etc' }],
    ['zero memory', { limits: { memoryMb: 0, cpu: 1, pids: 10, tmpfsMb: 1 } }],
    ['negative cpu', { limits: { memoryMb: 64, cpu: -1, pids: 10, tmpfsMb: 1 } }],
    ['bad env name', { env: { 'A=B': 'x' } }],
  ];
  for (const [why, patch] of bad) {
    const r = renderCreateBody({ ...GOLDEN_SPEC, ...patch }, GOLDEN_IMAGE);
    assert.equal(r.ok, false, why);
    if (!r.ok) assert.equal(r.error.code, 'invalid_input', why);
  }
});

test('[INV-2] a faithful engine report verifies clean', () => {
  const b = body();
  assert.deepEqual(verifyInspect(faithfulInspect(b), b), []);
});

test('[INV-2] every weakening the engine could report is caught as drift', () => {
  const b = body();
  const cases: [string, (i: InspectView) => void][] = [
    ['HostConfig.NetworkMode', (i) => (i.HostConfig!.NetworkMode = 'bridge')],
    ['HostConfig.ReadonlyRootfs', (i) => (i.HostConfig!.ReadonlyRootfs = false)],
    ['HostConfig.Privileged', (i) => (i.HostConfig!.Privileged = true)],
    ['HostConfig.CapDrop', (i) => (i.HostConfig!.CapDrop = [])],
    ['HostConfig.CapAdd', (i) => (i.HostConfig!.CapAdd = ['SYS_ADMIN'])],
    ['HostConfig.SecurityOpt', (i) => (i.HostConfig!.SecurityOpt = [])],
    ['HostConfig.SecurityOpt', (i) => (i.HostConfig!.SecurityOpt = ['no-new-privileges', 'seccomp=unconfined'])],
    ['HostConfig.PidMode', (i) => (i.HostConfig!.PidMode = 'host')],
    ['HostConfig.UsernsMode', (i) => (i.HostConfig!.UsernsMode = 'host')],
    ['HostConfig.IpcMode', (i) => (i.HostConfig!.IpcMode = 'host')],
    ['HostConfig.Memory', (i) => (i.HostConfig!.Memory = 0)],
    ['HostConfig.MemorySwap', (i) => (i.HostConfig!.MemorySwap = -1)],
    ['HostConfig.PidsLimit', (i) => (i.HostConfig!.PidsLimit = null)],
    ['HostConfig.NanoCpus', (i) => (i.HostConfig!.NanoCpus = 0)],
    ['HostConfig.Devices', (i) => (i.HostConfig!.Devices = [{ PathOnHost: '/dev/kvm' }])],
    ['HostConfig.Binds', (i) => (i.HostConfig!.Binds = ['/var/run/docker.sock:/var/run/docker.sock'])],
    ['Mounts.count', (i) => i.Mounts!.push({ Type: 'bind', Source: '/var/run/docker.sock', Destination: '/var/run/docker.sock', RW: true })],
    ['Mounts[/run/brig]', (i) => (i.Mounts![1]!.RW = true)],
    ['Mounts[/artifacts/in.jsonl]', (i) => (i.Mounts![2]!.Source = '/etc')],
    ['Config.User', (i) => (i.Config!.User = '')],
    ['Config.Env', (i) => i.Config!.Env!.push('OPENAI_API_KEY=sk-x')],
    ['Config.NetworkDisabled', (i) => (i.Config!.NetworkDisabled = false)],
    ['NetworkSettings.Networks', (i) => (i.NetworkSettings = { Networks: { none: {}, bridge: {} } })],
    ['HostConfig.Runtime', (i) => (i.HostConfig!.Runtime = 'runsc-unknown')],
    ['HostConfig.IpcMode', (i) => (i.HostConfig!.IpcMode = 'private')],
    ['HostConfig.Ulimits', (i) => (i.HostConfig!.Ulimits = [])],
    ['HostConfig.LogConfig.Type', (i) => (i.HostConfig!.LogConfig = { Type: 'json-file', Config: {} })],
    ['HostConfig.RestartPolicy.Name', (i) => (i.HostConfig!.RestartPolicy = { Name: 'always', MaximumRetryCount: 0 })],
  ];
  for (const [field, mutate] of cases) {
    const i = faithfulInspect(b);
    mutate(i);
    const fields = verifyInspect(i, b).map((d) => d.field);
    assert.ok(fields.includes(field), `${field} not caught; drift: ${fields.join(', ')}`);
  }
});

test('[INV-2] a report missing its HostConfig fails closed', () => {
  const b = body();
  const i = faithfulInspect(b);
  delete i.HostConfig;
  assert.ok(verifyInspect(i, b).length > 5);
});
