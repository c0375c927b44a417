/**
 * [INV-2] An artifact is bound exactly as it was checked: a path (or a parent of it) swapped
 * for a symlink between the spawn's check and the jail's mount reaches nothing — the run is
 * refused `artifact_changed` before any child runs, and the host's /etc never appears under
 * /artifacts. brig's own directories (its home, its runtime sockets, its disks) are never an
 * artifact. The swap is made while the run waits in the queue, the window a queued run has.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { brigPaths } from '../../../src/config/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, supervisorAt, until } from './fixture.js';

const LOOK = ['sh', '-c', 'ls /artifacts/data > /workspace/out/ls.txt; cat /artifacts/data/passwd > /workspace/out/passwd.txt 2>/dev/null; true'];

async function operatorDir(t: { after(fn: () => void): void }): Promise<{ base: string; data: string }> {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-art-'));
  fs.chmodSync(base, 0o755);
  t.after(() => fs.rmSync(base, { recursive: true, force: true }));
  const data = path.join(base, 'data');
  fs.mkdirSync(data);
  fs.writeFileSync(path.join(data, 'rows.txt'), 'the operator\'s file\n');
  return { base, data };
}

for (const what of ['the path itself', 'a parent of it'] as const) {
  // req: jail:no-host-paths
  test(`[INV-2] an artifact swapped for a symlink to /etc while its run is queued (${what}) is refused artifact_changed; /etc never reaches the jail`, async (t) => {
    if (!(await requireEngine(t))) return;
    const home = await freshHome(t);
    const { base, data } = await operatorDir(t);
    const c = await supervisorAt(home, { maxConcurrent: 1 });
    try {
      // One slot, held: the artifact's run waits in the queue after its check passed.
      const blocker = await c.supervisor.spawn({ task: 'hold the slot', kind: 'command', argv: ['sleep', '30'], async: true });
      assert.ok(blocker.ok);
      await until(async () => (await c.supervisor.get(blocker.value.id))?.status === 'running', 'the blocker runs');
      const r = await c.supervisor.spawn({ task: 'look at the artifact', kind: 'command', argv: LOOK, artifact_refs: [data], async: true });
      assert.ok(r.ok, r.ok ? '' : r.error.message);
      assert.equal(r.value.status, 'queued');
      // The swap: the checked directory is moved away and a symlink to /etc takes its place.
      if (what === 'the path itself') {
        fs.renameSync(data, `${data}.orig`);
        fs.symlinkSync('/etc', data);
      } else {
        const moved = `${base}.moved`;
        fs.renameSync(base, moved);
        t.after(() => fs.rmSync(moved, { recursive: true, force: true }));
        fs.mkdirSync(base);
        fs.symlinkSync('/etc', path.join(base, 'data'));
      }
      const k = await c.supervisor.kill(blocker.value.id, { confirm: true });
      assert.ok(k.ok);
      const w = await c.supervisor.wait(r.value.id, { timeoutMs: 60_000 });
      assert.ok(w.ok);
      assert.equal(w.value.endReason, 'failed');
      assert.equal(w.value.error?.code, 'artifact_changed', JSON.stringify(w.value.error));
      assert.equal(w.value.startedAt, null, 'no child ever ran');
      const refs = await c.refs.list(r.value.id);
      const paths = refs.ok ? refs.value.map((x) => x.path) : [];
      assert.ok(!paths.includes('out/passwd.txt') && !paths.includes('out/ls.txt'), `nothing of the jail's was collected: ${paths.join(', ')}`);
    } finally {
      await c.close();
    }
    assert.deepEqual(await leftovers(home, { released: true }), []);
  });
}

// req: jail:no-host-paths
test('[INV-2] the control: an artifact left alone while queued is mounted, read-only, with the content that was checked', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const { data } = await operatorDir(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'read it', kind: 'command', argv: ['sh', '-c', 'cat /artifacts/data/rows.txt > /workspace/out/got.txt; touch /artifacts/data/x 2>/workspace/out/ro.txt; true'], artifact_refs: [data] });
    assert.ok(r.ok);
    assert.equal(r.value.endReason, 'completed', JSON.stringify(r.value.error));
    const refs = await c.refs.list(r.value.id);
    assert.ok(refs.ok);
    const got = refs.value.find((x) => x.path === 'out/got.txt')!;
    const text = await c.refs.read(got.ref, { offset: 0 });
    assert.ok(text.ok);
    assert.equal(text.value.text, "the operator's file\n");
    const ro = await c.refs.read(refs.value.find((x) => x.path === 'out/ro.txt')!.ref, { offset: 0 });
    assert.ok(ro.ok);
    assert.match(String(ro.value.text), /Read-only file system/);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

// req: jail:no-host-paths
test("[INV-2] brig's own directories are never an artifact: its home, its runtime (sockets, warm slots) and what is under them", async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const paths = brigPaths(home);
    fs.mkdirSync(path.join(paths.brokers, 'pool-aaaaaaaaaaaa'), { recursive: true });
    for (const a of [home, path.join(home, 'runs'), paths.brokers, path.join(paths.brokers, 'pool-aaaaaaaaaaaa')]) {
      const r = await c.supervisor.spawn({ task: 'x', kind: 'command', argv: ['true'], artifact_refs: [a] });
      assert.ok(!r.ok, `${a} was accepted`);
      assert.equal(r.error.code, 'artifact_missing', `${a}: ${r.error.message}`);
      assert.match(r.error.message, /brig's own/);
    }
  } finally {
    await c.close();
  }
});
