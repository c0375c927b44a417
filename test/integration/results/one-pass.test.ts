/**
 * [INV-4] One pass with the real engine: a jailed child's hostile /workspace/out collected
 * with the store's observer and indexed from those scans gives the refs the re-reading path
 * gives — regular files only, same hashes, kinds, line counts and line indexes.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FsResultStore, ScannedFile, type ResultRef } from '../../../src/results/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { runToEnd, spec, sweepOwn } from '../jail/helpers.js';

after(sweepOwn);

const CAPS = { perFileBytes: 64 << 20, perRunBytes: 128 << 20, maxEntries: 1000 };
const facts = ({ ref: _r, runId: _u, createdAt: _c, expiresAt: _e, ...rest }: ResultRef) => rest;

test('[INV-4] a real child\'s output indexed from the collect\'s own scans equals the re-read index', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-one-pass-it-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const sh = [
    'mkdir -p out/sub',
    'i=0; while [ $i -lt 5000 ]; do echo "{\\"i\\":$i}"; i=$((i+1)); done > out/rows.jsonl',
    'printf "a,b\\n1,2\\n" > out/t.csv',
    'head -c 300000 /dev/zero > out/sub/zeros.bin',
    'echo hi > out/sub/hi.txt',
    'ln -s /etc/passwd out/passwd',
    'mkfifo out/fifo',
  ].join(' && ');
  const { exit, tails } = await runToEnd(spec('onepass', ['sh', '-c', sh]), async (jail) => {
    const one = store.outDir('root', 'r1');
    const two = store.outDir('root', 'r2');
    await fs.mkdir(path.dirname(one), { recursive: true });
    await fs.mkdir(path.dirname(two), { recursive: true });
    const rep = await jail.collect(one, CAPS, 'out', { observe: store.observe });
    assert.ok(rep.files.length === 4 && rep.files.every((f) => f.observed instanceof ScannedFile));
    const m1 = await store.indexCollected('r1', 'root', one, rep.files);
    await jail.collect(two, CAPS);
    const m2 = await store.indexDir('r2', 'root', two);
    assert.deepEqual(m1.refs.map(facts), m2.refs.map(facts));
    assert.deepEqual(m1.refs.map((r) => [r.path, r.kind]), [['out/rows.jsonl', 'jsonl'], ['out/sub/hi.txt', 'text'], ['out/sub/zeros.bin', 'binary'], ['out/t.csv', 'csv']]);
    const rows = m1.refs[0]!;
    assert.equal(rows.lines, 5000);
    assert.equal(rows.sha256, createHash('sha256').update(await fs.readFile(store.resolvePath(rows))).digest('hex'));
    assert.deepEqual(await store.lineIndex(rows), await store.lineIndex(m2.refs[0]!));
    assert.equal((await store.lineIndex(rows)).length, 5);
  });
  assert.equal(exit.exitCode, 0, tails.stderrTail);
});
