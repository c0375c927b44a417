import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { isBrigError } from '../../../src/util/errors.js';
import { runToEnd, spec, sweepOwn } from './helpers.js';

after(sweepOwn);

const CAPS = { perFileBytes: 1024 * 1024, perRunBytes: 4 * 1024 * 1024, maxEntries: 1000 };

async function tmp(t: { after: (fn: () => void) => void }): Promise<string> {
  const d = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-collect-it-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

test('[INV-4] a hostile child output tree yields regular files only, inside the destination', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  const dest = path.join(base, 'ref');
  const sh = [
    'mkdir -p out/sub',
    'echo hello > out/a.txt',
    'echo deep > out/sub/b.txt',
    'ln -s /etc/passwd out/passwd-link',
    'ln -s ../../../../../tmp out/escape-dir',
    'mkfifo out/fifo',
    'chmod 4755 out/sub/b.txt',
  ].join(' && ');
  const { exit, tails } = await runToEnd(spec('hostile', ['sh', '-c', sh]), async (jail) => {
    const rep = await jail.collect(dest, CAPS);
    assert.deepEqual(rep.files.map((f) => f.path).sort(), ['a.txt', 'sub/b.txt']);
    assert.deepEqual(rep.skipped.map((s) => s.reason).sort(), ['fifo', 'symlink', 'symlink']);
    assert.equal(rep.totalBytes, 6 + 5);
  });
  assert.equal(exit.exitCode, 0, tails.stderrTail);
  assert.equal(fs.readFileSync(path.join(dest, 'a.txt'), 'utf8'), 'hello\n');
  assert.equal(fs.statSync(path.join(dest, 'sub/b.txt')).mode & 0o7777, 0o644);
  const all = fs.readdirSync(dest, { recursive: true }).map(String).sort();
  assert.deepEqual(all, ['a.txt', 'sub', 'sub/b.txt']);
});

test('[INV-4] a child output over the per-file cap is refused whole', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  const dest = path.join(base, 'ref');
  await runToEnd(spec('big', ['sh', '-c', 'mkdir -p out && echo small > out/a && dd if=/dev/zero of=out/big bs=1024 count=2048 2>/dev/null']), async (jail) => {
    await assert.rejects(jail.collect(dest, CAPS), (e) => isBrigError(e, 'ref_too_large'));
  });
  assert.deepEqual(fs.readdirSync(base), []);
});

test('a child that writes no output collects to an empty directory', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  await runToEnd(spec('none', ['sh', '-c', 'rmdir out; true']), async (jail) => {
    const rep = await jail.collect(path.join(base, 'ref'), CAPS);
    assert.deepEqual(rep.files, []);
  });
  assert.deepEqual(fs.readdirSync(path.join(base, 'ref')), []);
});

test('[INV-4] an out/ replaced by a symlink to elsewhere collects nothing from elsewhere', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  await runToEnd(spec('outlink', ['sh', '-c', 'rm -rf out && ln -s /etc out']), async (jail) => {
    const rep = await jail.collect(path.join(base, 'ref'), CAPS);
    assert.deepEqual(rep.files, []);
    assert.deepEqual(rep.skipped.map((s) => s.reason), ['symlink']);
  });
  assert.deepEqual(fs.readdirSync(path.join(base, 'ref')), []);
});
