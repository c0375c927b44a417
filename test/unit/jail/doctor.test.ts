import { test } from 'node:test';
import assert from 'node:assert/strict';
import { helperHint, judgeDoctor, type DoctorFacts } from '../../../src/jail/index.js';

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

test('doctor shows the seccomp profile, the disk quota and the helper caps in force, and fails each weakness', () => {
  const HELPER = { isolated: true, privilegeLeft: null, uid: 65534, capEff: '0000000000000000', addressSpaceBytes: 4.2 * 1024 ** 3, cpuSeconds: 900 };
  const TOOLS = { isolated: true, privilegeLeft: null, uid: 65534, capEff: '0000000000000000', interfaces: ['lo'], addressSpaceBytes: 2 * 1024 ** 3, fallback: null };
  const full: DoctorFacts = { ...GOOD, quota: { mode: 'loop', unavailable: null }, helper: HELPER, tools: TOOLS };
  const all = judgeDoctor(full);
  assert.deepEqual(all.filter((c) => !c.ok), []);
  const by = (name: string) => all.find((c) => c.name === name)!;
  assert.match(by('seccomp profile').detail, /io_uring_setup/);
  assert.match(by('workspace disk quota').detail, /ext4 image of the lease's diskMb/);
  assert.match(by('DuckDB helper isolated').detail, /uid 65534/);
  assert.match(by('DuckDB helper address-space cap').detail, /RLIMIT_AS 4\.2 GiB/);
  assert.match(by('DuckDB helper CPU cap').detail, /RLIMIT_CPU 900 s/);
  assert.match(by('grep/jq isolated').detail, /uid 65534, CapEff 0+, only lo, read-only \//);
  assert.match(by('grep/jq address-space cap').detail, /RLIMIT_AS 2\.0 GiB/);
  // The explicit opt-out is shown, not failed.
  assert.match(judgeDoctor({ ...full, quota: { mode: 'none', unavailable: null } }).find((c) => c.name === 'workspace disk quota')!.detail, /BRIG_WORKSPACE_QUOTA=none/);
  const cases: [DoctorFacts, string, RegExp][] = [
    [{ ...full, quota: { mode: 'loop', unavailable: 'brig is not running as root (losetup needs it)' } }, 'workspace disk quota', /BRIG_WORKSPACE_QUOTA=none/],
    [{ ...full, helper: { ...HELPER, isolated: false, privilegeLeft: 'not isolated' } }, 'DuckDB helper isolated', /unshare, setpriv/],
    [{ ...full, helper: { ...HELPER, addressSpaceBytes: null } }, 'DuckDB helper address-space cap', /prlimit/],
    [{ ...full, helper: { ...HELPER, cpuSeconds: null } }, 'DuckDB helper CPU cap', /prlimit/],
    [{ ...full, helper: { error: 'no helper started: spawn ENOENT' } }, 'DuckDB helper', /make deps/],
    [{ ...full, tools: { ...TOOLS, isolated: false, privilegeLeft: 'not isolated', fallback: 'isolating grep and jq needs root' } }, 'grep/jq isolated', /nsenter/],
    [{ ...full, tools: { ...TOOLS, addressSpaceBytes: null } }, 'grep/jq address-space cap', /prlimit/],
    [{ ...full, tools: { error: 'grep could not be run: spawn ENOENT' } }, 'grep/jq', /make deps/],
  ];
  for (const [facts, name, hint] of cases) {
    const bad = failing(facts);
    assert.deepEqual(bad.map((c) => c.name), [name]);
    assert.match(bad[0]!.hint ?? '', hint);
  }
});

test('doctor shows the free space in brig\'s home against its reserve, also with no engine, and fails a home below it', () => {
  const MiB = 1024 ** 2;
  const home = (freeBytes: number) => ({ dir: '/home/op/.brig', reserveBytes: 64 * MiB, freeBytes, totalBytes: 1024 * MiB });
  const ok = judgeDoctor({ ...GOOD, home: home(500 * MiB) }).find((c) => c.name === 'home free space')!;
  assert.equal(ok.ok, true);
  assert.equal(ok.detail, '500.0 MiB free of 1024.0 MiB in /home/op/.brig (reserve 64.0 MiB)');
  const low = judgeDoctor({ ...GOOD, home: home(3 * MiB) }).find((c) => c.name === 'home free space')!;
  assert.equal(low.ok, false);
  assert.match(low.hint ?? '', /storage_full.*--min-free-mb/);
  const noEngine = judgeDoctor({ engine: { ok: false, error: 'connect ENOENT' }, image: undefined, probe: undefined, home: home(3 * MiB) });
  assert.deepEqual(noEngine.map((c) => [c.name, c.ok]), [['engine answers', false], ['home free space', false]]);
  const unreadable = judgeDoctor({ ...GOOD, home: { dir: '/gone', reserveBytes: 0, error: 'statfs failed' } }).find((c) => c.name === 'home free space')!;
  assert.equal(unreadable.ok, false);
});

test("a helper that did not start: the doctor's hint names the cause its error shows", () => {
  assert.match(helperHint("no helper started: EACCES: permission denied, mkdtemp '/tmp/priv/brig-helper-XXXXXX'"), /TMPDIR/);
  assert.match(helperHint('no helper started: spawn unshare ENOENT'), /util-linux/);
  assert.match(helperHint("no helper started: Cannot find package '@duckdb/node-api'"), /DuckDB module/);
  assert.match(helperHint('no helper started: Cannot allocate memory'), /memory/);
  assert.match(helperHint('no helper started: the helper exited 3'), /make deps.*its error above/);
  const judged = judgeDoctor({ ...GOOD, helper: { error: 'no helper started: spawn setpriv ENOENT' } }).find((c) => c.name === 'DuckDB helper');
  assert.ok(judged && !judged.ok);
  assert.match(judged.hint ?? '', /util-linux/);
});
