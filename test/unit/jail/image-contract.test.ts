import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderCreateBody, verifyInspect } from '../../../src/jail/index.js';
import { DEFAULT_IMAGE_PATH, imageTerms, type ImageConfigView } from '../../../src/jail/docker/image-contract.js';
import type { InspectView } from '../../../src/jail/docker/verify.js';
import { isBrigError } from '../../../src/util/errors.js';
import { GOLDEN_OWNER, GOLDEN_SPEC } from './golden-spec.js';

const BRIG_ENV = GOLDEN_SPEC.env;
const terms = (view: ImageConfigView) => imageTerms('img:1', view, { brigEnv: BRIG_ENV, hostArch: 'amd64' });

// req: jail:verified
test('[INV-2] an image\'s own settings are overridden by the profile, each one named', () => {
  const r = terms({
    Os: 'linux',
    Architecture: 'amd64',
    Config: { User: 'root', Entrypoint: ['/docker-entrypoint.sh'], Cmd: ['bash'], WorkingDir: '/app', Healthcheck: { Test: ['CMD', 'curl', 'x'] }, Env: ['PATH=/usr/local/bin:/usr/bin', 'HOME=/root', 'LANG=C.UTF-8'], Volumes: { '/workspace': {} } },
  });
  assert.ok(r.ok, r.ok ? '' : r.error.message);
  assert.deepEqual(r.value.overridden.sort(), ['cmd', 'entrypoint', 'env:HOME', 'healthcheck', 'user', 'workdir']);
  assert.deepEqual(r.value.env, { LANG: 'C.UTF-8' }, 'brig\'s HOME wins; PATH is the image\'s own');
  assert.equal(r.value.path, '/usr/local/bin:/usr/bin');
  const bare = terms({ Os: 'linux', Architecture: 'amd64', Config: null });
  assert.ok(bare.ok);
  assert.deepEqual(bare.value, { env: {}, path: DEFAULT_IMAGE_PATH, overridden: [] }, 'a FROM scratch image with no config');
});

// req: jail:verified
test('[INV-2] an image that would weaken the jail or steer brig\'s runtime is refused image_refused', () => {
  const refused: [string, ImageConfigView][] = [
    ['volume', { Config: { Volumes: { '/data': {} } } }],
    ['volume', { Config: { Volumes: { '/workspace/out': {} } } }],
    ['env', { Config: { Env: ['LD_PRELOAD=/lib/evil.so'] } }],
    ['env', { Config: { Env: ['NODE_OPTIONS=--require /evil.js'] } }],
    ['env', { Config: { Env: ['BRIG_TOKEN=x'] } }],
    ['platform', { Os: 'windows', Config: {} }],
    ['platform', { Os: 'linux', Architecture: 'arm64', Config: {} }],
  ];
  for (const [what, view] of refused) {
    const r = terms(view);
    assert.ok(!r.ok, `${JSON.stringify(view)} was not refused`);
    assert.ok(isBrigError(r.error, 'image_refused'));
    assert.equal((r.error.data as { what: string }).what, what);
  }
});

// req: secrets:env-from-nothing
test('[INV-6] a foreign image\'s kept ENV is written into the body, and verify reads back exactly it', () => {
  const t = terms({ Config: { Env: ['PATH=/opt/bin', 'LANG=C.UTF-8', 'HOME=/root'] } });
  assert.ok(t.ok);
  const r = renderCreateBody(GOLDEN_SPEC, 'img:1', GOLDEN_OWNER, { terms: t.value, runtimeDir: '/var/lib/brig/runtime/abc' });
  assert.ok(r.ok, r.ok ? '' : r.error.message);
  const b = r.value;
  assert.deepEqual(b.Env, ['BRIG_RUN_ID=r-golden', 'HOME=/workspace', 'LANG=C.UTF-8', 'PATH=/opt/bin']);
  assert.deepEqual(b.Entrypoint, []);
  assert.deepEqual(b.Healthcheck, { Test: ['NONE'] });
  const rt = b.HostConfig.Mounts.find((m) => m.Target === '/opt/brig');
  assert.deepEqual(rt, { Type: 'bind', Source: '/var/lib/brig/runtime/abc', Target: '/opt/brig', ReadOnly: true });
  const inspect: InspectView = {
    Config: { User: b.User, Image: b.Image, Cmd: [...b.Cmd], Entrypoint: [], Healthcheck: { Test: ['NONE'] }, Env: [...b.Env], NetworkDisabled: true, Labels: { ...b.Labels } },
    HostConfig: JSON.parse(JSON.stringify(b.HostConfig)) as Record<string, unknown>,
    Mounts: b.HostConfig.Mounts.map((m) => (m.Type === 'volume' ? { Type: 'volume', Name: m.Source, Destination: m.Target, RW: !m.ReadOnly } : { Type: 'bind', Source: m.Source, Destination: m.Target, RW: !m.ReadOnly })),
    NetworkSettings: { Networks: { none: {} } },
  };
  assert.deepEqual(verifyInspect(inspect, b, GOLDEN_SPEC.limits), []);
  // An image ENV the body did not carry (the engine merged one brig never decided on) is drift,
  // and so is the runtime bound writable.
  const extra = structuredClone(inspect);
  extra.Config!.Env!.push('LD_PRELOAD=/x.so');
  assert.ok(verifyInspect(extra, b, GOLDEN_SPEC.limits).some((d) => d.field === 'Config.Env'));
  const rw = structuredClone(inspect);
  rw.Mounts!.find((m) => m.Destination === '/opt/brig')!.RW = true;
  assert.ok(verifyInspect(rw, b, GOLDEN_SPEC.limits).some((d) => d.field === 'Mounts[/opt/brig]'));
});
