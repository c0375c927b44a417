import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, supervisorAt, until } from './fixture.js';

/**
 * [INV-8] What a child produced before it ended is kept, however it ended: a killed run's
 * out/ files and stdout are collected as partial results, and aborting a library spawn
 * (Ctrl-C's twin) kills and collects the child instead of leaving its container running.
 */

const WRITES_THEN_HANGS = `import { mkdirSync, writeFileSync } from 'node:fs';
export default async function (brig) {
  mkdirSync('/workspace/out', { recursive: true });
  writeFileSync('/workspace/out/half.txt', 'written before the kill');
  process.stdout.write('progress so far: 41%\\n');
  await brig.progress('half way');
  await new Promise((r) => setTimeout(r, 120000));
}`;

// req: end:output-kept
test('[INV-8] a killed run keeps its out/ files and stdout as a partial result', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'half done', script: WRITES_THEN_HANGS, async: true });
    assert.ok(r.ok);
    await until(async () => ((await c.supervisor.get(r.value.id))?.stepsExecuted ?? 0) >= 1, 'the child reported progress');
    const k = await c.supervisor.kill(r.value.id, { confirm: true });
    assert.ok(k.ok);
    const rec = k.value;
    assert.equal(rec.endReason, 'killed');
    assert.equal(rec.killedBy, 'operator');
    assert.equal(rec.partial, true);
    assert.deepEqual(rec.outputs, [{ path: 'half.txt', bytes: 23 }]);
    assert.match(rec.stdoutTail, /progress so far: 41%/);
    const refs = await c.refs.list(rec.id);
    assert.ok(refs.ok);
    assert.deepEqual(refs.value.map((x) => x.path).sort(), ['out/half.txt', 'stdout.txt']);
    const env = await c.refs.result(rec.id);
    assert.ok(env.ok);
    assert.match(env.value.envelope, /partial/);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('aborting a library spawn kills its child (killedBy operator), collects it and returns the ended run', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const ac = new AbortController();
    const pending = c.supervisor.spawn({ task: 'abort me', script: WRITES_THEN_HANGS }, { signal: ac.signal });
    await until(async () => (await c.supervisor.list()).some((r) => r.stepsExecuted >= 1), 'the child reported progress');
    ac.abort();
    const r = await pending;
    assert.ok(r.ok);
    assert.equal(r.value.status, 'ended');
    assert.equal(r.value.endReason, 'killed');
    assert.equal(r.value.killedBy, 'operator');
    assert.deepEqual(r.value.outputs.map((o) => o.path), ['half.txt']);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
