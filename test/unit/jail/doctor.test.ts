import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeDoctor, type DoctorFacts } from '../../../src/jail/index.js';

const INFO = { SecurityOptions: ['name=seccomp,profile=default'], Runtimes: { runc: {} }, MemoryLimit: true, SwapLimit: true, PidsLimit: true, CpuCfsQuota: true, CgroupVersion: '1' };
const GOOD: DoctorFacts = {
  engine: { ok: true, version: '20.10.24', apiVersion: '1.41', info: INFO },
  image: { tag: 'brig-child:abc', present: true, runtimeIncluded: true, built: false },
  probe: { checks: [{ name: 'non-root user', ok: true, saw: '65534:65534' }] },
};

const failing = (f: DoctorFacts) => judgeDoctor(f).filter((c) => !c.ok);

test('doctor passes a host that can give the jail', () => {
  assert.deepEqual(failing(GOOD), []);
});

test('doctor names what is missing and how to fix it', () => {
  const cases: [DoctorFacts, string, RegExp][] = [
    [{ ...GOOD, image: { tag: 'brig-child:abc', present: false, runtimeIncluded: true, built: false }, probe: undefined }, 'child image', /brig image build/],
    [{ ...GOOD, engine: { ...GOOD.engine, info: { ...INFO, SwapLimit: false } } as DoctorFacts['engine'] }, 'swap limits', /swapaccount=1/],
    [{ ...GOOD, engine: { ...GOOD.engine, info: { ...INFO, SecurityOptions: [] } } as DoctorFacts['engine'] }, 'seccomp available', /seccomp/],
    [{ ...GOOD, probe: { code: 'jail_unverified', error: 'the engine did not apply the hardened profile (HostConfig.CapDrop)' } }, 'hardened jail', /refuses to run here/],
    [{ ...GOOD, probe: { checks: [{ name: 'no effective capabilities', ok: false, saw: '00000000a80425fb' }] } }, 'jail: no effective capabilities', /weakened/],
  ];
  for (const [facts, name, hint] of cases) {
    const bad = failing(facts);
    assert.ok(bad.some((c) => c.name === name), `${name} not failed: ${JSON.stringify(bad)}`);
    const c = bad.find((x) => x.name === name)!;
    assert.match(c.hint ?? '', hint);
    if (name === 'hardened jail') assert.match(c.detail, /jail_unverified/);
  }
});
