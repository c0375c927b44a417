/**
 * A policy profile restricts the images a spawn may run in (issue 24 item 1): with `images` in
 * this home's policy.yaml, a spawn naming an image outside its profile's list — by `--image`
 * or through an agent spec's `image:` — is refused at once (`capability_denied`, the allowed
 * list in the hint), nothing recorded; an image the list allows runs; brig's child image is
 * always allowed. Against a real supervisor and a real engine.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { brigPaths, loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { shippedPoliciesDir } from '../../../src/lease/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { busyboxImage } from '../../helpers/foreign-images.js';
import { freshHome, leftovers } from '../runs/fixture.js';

// req: lease:caps-intersect
test('[INV-1] a profile\'s images: an image outside the list is refused at once (request or agent spec), one inside runs, the child image always', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const image = await busyboxImage(); // brig-test-busybox:<sha>
  const repo = image.split(':')[0]!;
  const policy = fs.readFileSync(path.join(shippedPoliciesDir(), 'default.yaml'), 'utf8')
    .replace(/^  root:\n/m, `  root:\n    images: ["${repo}:*", toolbox]\n`)
    .replace(/^  worker:\n/m, '  worker:\n    images: [toolbox]\n');
  fs.writeFileSync(path.join(home, 'policy.yaml'), policy, { mode: 0o600 });
  fs.mkdirSync(path.join(home, 'agents'), { recursive: true });
  fs.writeFileSync(path.join(home, 'agents', 'boxed.md'), `---\nname: boxed\ndescription: runs in the busybox test image\nimage: ${image}\nprofile: worker\n---\nDo it.\n`);
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: 'http://127.0.0.1:9', BRIG_MODEL: 'unused' }), { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const before = fs.readdirSync(brigPaths(home).runs);
    const outside = await c.supervisor.spawn({ task: 'x', kind: 'command', argv: ['true'], image: 'brig-test-not-listed:1', caps: ['exec'] });
    assert.equal(outside.ok, false);
    if (!outside.ok) {
      assert.equal(outside.error.code, 'capability_denied');
      assert.match(outside.error.message, /image "brig-test-not-listed:1" is not allowed under profile root/);
      assert.match(outside.error.hint ?? '', new RegExp(`${repo}:\\*, toolbox`));
    }
    const workerOutside = await c.supervisor.spawn({ task: 'x', kind: 'command', argv: ['true'], image, profile: 'worker', caps: ['exec'] });
    assert.equal(workerOutside.ok, false, 'the worker profile lists only toolbox');
    const viaSpec = await c.supervisor.spawn({ task: 'x', kind: 'agent', agent: 'boxed' });
    assert.equal(viaSpec.ok, false, 'an agent spec\'s image is checked against its profile too');
    if (!viaSpec.ok) assert.match(viaSpec.error.message, /not allowed under profile worker/);
    assert.deepEqual(fs.readdirSync(brigPaths(home).runs), before, 'no run recorded for a refused spawn');

    const inside = await c.supervisor.spawn({ task: 'x', kind: 'command', argv: ['sh', '-c', 'echo in > out/x.txt'], image, caps: ['exec'] });
    assert.ok(inside.ok, inside.ok ? '' : inside.error.message);
    assert.equal(inside.value.endReason, 'completed', inside.value.stderrTail);
    const child = await c.supervisor.spawn({ task: 'x', kind: 'command', argv: ['true'], profile: 'worker' });
    assert.ok(child.ok && child.value.endReason === 'completed', 'brig\'s child image under a profile that lists only toolbox');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

/** Spawns the agent spec named in its task from inside its jail; reports the refusal. */
const SPAWNER = `export default async function (brig) {
  try { const c = await brig.spawn({ task: 'x', kind: 'agent', agent: brig.task }); return { code: 'allowed', runId: c.runId }; }
  catch (e) { return { code: e.code, message: e.message }; }
}`;

// req: lease:caps-intersect
test('[INV-1] a child\'s spawn of an agent spec with an image is checked against the profile its lease inherits, not root\'s', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const image = await busyboxImage();
  const repo = image.split(':')[0]!;
  const policy = fs.readFileSync(path.join(shippedPoliciesDir(), 'default.yaml'), 'utf8')
    .replace(/^  root:\n/m, `  root:\n    images: ["${repo}:*", toolbox]\n`)
    .replace(/^  researcher:\n/m, '  researcher:\n    images: [toolbox]\n');
  fs.writeFileSync(path.join(home, 'policy.yaml'), policy, { mode: 0o600 });
  fs.mkdirSync(path.join(home, 'agents'), { recursive: true });
  // No profile of its own: a child spawning it hands down its own.
  fs.writeFileSync(path.join(home, 'agents', 'boxed.md'), `---\nname: boxed\ndescription: runs in the busybox test image\nimage: ${image}\n---\nDo it.\n`);
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: 'http://127.0.0.1:9', BRIG_MODEL: 'unused' }), { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const parent = await c.supervisor.spawn({ task: 'boxed', kind: 'script', script: SPAWNER, profile: 'researcher' });
    assert.ok(parent.ok, parent.ok ? '' : parent.error.message);
    assert.equal(parent.value.endReason, 'completed', parent.value.stderrTail);
    const got = parent.value.result as { code: string; message?: string };
    assert.equal(got.code, 'capability_denied', JSON.stringify(got));
    assert.match(got.message ?? '', /not allowed under profile researcher/);
    assert.equal((await c.supervisor.list()).length, 1, 'no child recorded');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
