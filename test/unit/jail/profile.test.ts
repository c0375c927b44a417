import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { HARDENED, renderCreateBody, verifyInspect, type JailSpec } from '../../../src/jail/index.js';
import { CFS_PERIOD_US, LIMIT_FLOORS, nanoCpusFor } from '../../../src/jail/docker/limits.js';
import type { CreateBody } from '../../../src/jail/docker/profile.js';
import { SECCOMP_JSON } from '../../../src/jail/docker/seccomp.js';
import type { InspectView } from '../../../src/jail/docker/verify.js';
import { GOLDEN_IMAGE, GOLDEN_OWNER, GOLDEN_SPEC } from './golden-spec.js';

const GOLDEN = path.resolve(import.meta.dirname, '../../fixtures/jail/create-body.golden.json');
const SECCOMP_FILE = path.resolve(import.meta.dirname, '../../../images/seccomp.json');
const INTENT = GOLDEN_SPEC.limits;

function body(spec: JailSpec = GOLDEN_SPEC): CreateBody {
  const r = renderCreateBody(spec, GOLDEN_IMAGE, GOLDEN_OWNER);
  assert.ok(r.ok, r.ok ? '' : r.error.message);
  return r.value;
}

/** What a faithful engine reports on inspect for a body (shape as Docker 20.10 gives it). */
function faithfulInspect(b: CreateBody): InspectView {
  return {
    Config: { User: b.User, Image: b.Image, Cmd: [...b.Cmd], Entrypoint: [], Healthcheck: { Test: ['NONE'] }, Env: [...b.Env].reverse(), NetworkDisabled: true, Labels: { ...b.Labels, extra: 'x' } },
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
  const b = JSON.parse(JSON.stringify(body())) as CreateBody;
  // The seccomp profile is reviewed in its own file (images/seccomp.json, pretty-printed): the
  // golden names it, and the body must carry exactly that profile.
  const opt = b.HostConfig.SecurityOpt.find((o) => o.startsWith('seccomp='))!;
  assert.deepEqual(JSON.parse(opt.slice('seccomp='.length)), JSON.parse(fs.readFileSync(SECCOMP_FILE, 'utf8')));
  (b.HostConfig as unknown as { SecurityOpt: string[] }).SecurityOpt = b.HostConfig.SecurityOpt.map((o) => (o === opt ? 'seccomp=<images/seccomp.json>' : o));
  assert.deepEqual(b, golden);
});

test('[INV-2] the hardened table is frozen and closed', () => {
  assert.ok(Object.isFrozen(HARDENED));
  assert.ok(Object.isFrozen(HARDENED.CapDrop));
  assert.throws(() => {
    (HARDENED as { NetworkMode: string }).NetworkMode = 'host';
  });
  assert.equal(HARDENED.NetworkMode, 'none');
});

// req: secrets:env-from-nothing
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
    ['zero memory', { limits: { memoryMb: 0, cpu: 1, pids: 16, tmpfsMb: 1, diskMb: 64 } }],
    ['negative cpu', { limits: { memoryMb: 64, cpu: -1, pids: 16, tmpfsMb: 1, diskMb: 64 } }],
    ['NaN cpu', { limits: { memoryMb: 64, cpu: Number.NaN, pids: 16, tmpfsMb: 1, diskMb: 64 } }],
    ['fractional pids', { limits: { memoryMb: 64, cpu: 1, pids: 16.5, tmpfsMb: 1, diskMb: 64 } }],
    ['bad env name', { env: { 'A=B': 'x' } }],
  ];
  for (const [why, patch] of bad) {
    const r = renderCreateBody({ ...GOLDEN_SPEC, ...patch }, GOLDEN_IMAGE);
    assert.equal(r.ok, false, why);
    if (!r.ok) assert.equal(r.error.code, 'invalid_input', why);
  }
});

// req: jail:verified
test('[INV-2] a faithful engine report verifies clean', () => {
  const b = body();
  assert.deepEqual(verifyInspect(faithfulInspect(b), b, INTENT), []);
});

// req: jail:verified
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
    // The engine's default profile (no seccomp= option: what brig had before its own).
    ['HostConfig.SecurityOpt', (i) => (i.HostConfig!.SecurityOpt = ['no-new-privileges'])],
    ['HostConfig.SecurityOpt', (i) => (i.HostConfig!.SecurityOpt = [`seccomp=${SECCOMP_JSON}`])],
    ['HostConfig.SecurityOpt', (i) => (i.HostConfig!.SecurityOpt = [`seccomp=${SECCOMP_JSON.replace('"io_uring_setup",', '')}`.replace('"accept",', '"accept","io_uring_setup",'), 'no-new-privileges'])],
    ['HostConfig.SecurityOpt', (i) => (i.HostConfig!.SecurityOpt = [`seccomp=${SECCOMP_JSON}`, 'no-new-privileges', 'apparmor=unconfined'])],
    ['HostConfig.MaskedPaths', (i) => (i.HostConfig!.MaskedPaths = [])],
    ['HostConfig.ReadonlyPaths', (i) => (i.HostConfig!.ReadonlyPaths = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'])],
    ['limits.cpuQuota', (i) => (i.HostConfig!.CpuQuota = 500_000)],
    ['limits.tmpfs', (i) => (i.HostConfig!.Tmpfs = { '/tmp': 'rw,nosuid,nodev,noexec,size=0,mode=1777' })],
    ['limits.tmpfs', (i) => (i.HostConfig!.Tmpfs = { '/tmp': 'rw,nosuid,nodev,noexec,mode=1777' })],
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
    // An image's own ENTRYPOINT wrapping the argv, its HEALTHCHECK exec'd into the jail.
    ['Config.Entrypoint', (i) => (i.Config!.Entrypoint = ['/bin/sh', '-c'])],
    ['Config.Healthcheck', (i) => (i.Config!.Healthcheck = { Test: ['CMD', '/bin/true'] })],
    ['Config.Healthcheck', (i) => delete i.Config!.Healthcheck],
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
    const fields = verifyInspect(i, b, INTENT).map((d) => d.field);
    assert.ok(fields.includes(field), `${field} not caught; drift: ${fields.join(', ')}`);
  }
});

// req: jail:verified
test('[INV-2] a report missing its HostConfig fails closed', () => {
  const b = body();
  const i = faithfulInspect(b);
  delete i.HostConfig;
  assert.ok(verifyInspect(i, b, INTENT).length > 5);
});

// req: limits:within-parent
test('[INV-9] a limit below its floor is refused with invalid_input naming the floor, never raised', () => {
  const cases: [keyof typeof LIMIT_FLOORS, number][] = [
    ['cpu', 0.000001],
    ['cpu', 0.0099],
    ['memoryMb', 5],
    ['pids', 15],
    ['pids', 0],
    ['tmpfsMb', 0],
    ['diskMb', 15],
    ['diskMb', 0],
  ];
  for (const [k, v] of cases) {
    const r = renderCreateBody({ ...GOLDEN_SPEC, limits: { ...INTENT, [k]: v } }, GOLDEN_IMAGE);
    assert.equal(r.ok, false, `${k}=${v} rendered`);
    if (r.ok) continue;
    assert.equal(r.error.code, 'invalid_input');
    assert.match(r.error.message, new RegExp(`${k} \\(${v}\\) is below the floor of ${LIMIT_FLOORS[k]}`));
    assert.deepEqual(r.error.data, { limit: k, floor: LIMIT_FLOORS[k], requested: v });
    assert.ok(r.error.hint?.includes(String(LIMIT_FLOORS[k])), 'the hint says what to ask for');
  }
  // At the floor: rendered, and the quota is the kernel's smallest, not 0.
  const at = body({ ...GOLDEN_SPEC, limits: { memoryMb: LIMIT_FLOORS.memoryMb, cpu: LIMIT_FLOORS.cpu, pids: LIMIT_FLOORS.pids, tmpfsMb: LIMIT_FLOORS.tmpfsMb, diskMb: LIMIT_FLOORS.diskMb } });
  assert.equal(at.HostConfig.NanoCpus, 10_000_000);
  assert.equal((at.HostConfig.NanoCpus * CFS_PERIOD_US) / 1e9, 1000, 'cfs_quota_us 1000 of 100000');
});

// req: limits:within-parent
test('[INV-9] [INV-1] NanoCpus is a whole quota microsecond, at least the floor, never above the lease', () => {
  assert.equal(nanoCpusFor(1.5), 1_500_000_000);
  assert.equal(nanoCpusFor(0.29), 290_000_000, 'binary fractions do not lose a microsecond');
  assert.equal(nanoCpusFor(0.0123456), 12_340_000, 'rounded down to the microsecond');
  fc.assert(
    fc.property(fc.double({ min: LIMIT_FLOORS.cpu, max: 64, noNaN: true }), (cpu) => {
      const b = body({ ...GOLDEN_SPEC, limits: { ...INTENT, cpu } });
      const quota = Math.floor((b.HostConfig.NanoCpus * CFS_PERIOD_US) / 1e9);
      return quota >= 1000 && quota / CFS_PERIOD_US <= cpu + 1e-9 && cpu - quota / CFS_PERIOD_US < 1e-5 + 1e-9;
    }),
  );
});

test('[INV-9] verify judges against the lease, not the rendered body: a body and an engine that agree on "no limit" are drift', () => {
  const b = body();
  // What the old rendering of `--cpus 0.000001` did: NanoCpus 1000, a CFS quota of 0 (none).
  const cases: [string, (h: Record<string, unknown>) => void][] = [
    ['limits.cpu', (h) => (h.NanoCpus = 1000)],
    ['limits.cpu', (h) => (h.NanoCpus = 0)],
    ['limits.cpu', (h) => (h.NanoCpus = 2_000_000_000)],
    ['limits.memory', (h) => (h.Memory = 0)],
    ['limits.memorySwap', (h) => (h.MemorySwap = -1)],
    ['limits.pids', (h) => (h.PidsLimit = 0)],
    ['limits.pids', (h) => (h.PidsLimit = 4096)],
  ];
  for (const [field, mutate] of cases) {
    const wrong = structuredClone(b);
    mutate(wrong.HostConfig as unknown as Record<string, unknown>);
    const fields = verifyInspect(faithfulInspect(wrong), wrong, INTENT).map((d) => d.field);
    assert.ok(fields.includes(field), `${field} not caught when body and engine agree; drift: ${fields.join(', ')}`);
  }
});
