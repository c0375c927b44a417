/**
 * The slicer tells its observer (the daemon's metrics) of every verb call once it answered:
 * the verb, the caller's lane (kept by `as`), the outcome (`ok` or the error code) and the
 * seconds from the call — refusals included, never the ref, its path or the query.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { FsResultStore } from '../../../src/results/index.js';
import { Slicer, type SliceObserver } from '../../../src/slice/index.js';

test('slicer: onSlice hears each call with its verb, lane, outcome and seconds', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-slice-obs-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const ref = await store.writeStream('r1', 'root', 'a.txt', Readable.from([Buffer.from('alpha\nbeta\n')]));
  const heard: Parameters<SliceObserver>[0][] = [];
  const s = new Slicer(store, { onSlice: (c) => heard.push(c) });
  assert.ok((await s.read(ref.ref, { line: 2 })).ok);
  assert.equal((await s.read('r-missing', { line: 1 })).ok, false);
  const child = s.as({ lane: 'child', runId: 'r1', treeId: 'root' });
  assert.ok((await child.read(ref.ref, { offset: 0, length: 5 })).ok);
  assert.deepEqual(heard.map(({ verb, lane, outcome }) => [verb, lane, outcome]), [
    ['read', 'operator', 'ok'],
    ['read', 'operator', 'ref_not_found'],
    ['read', 'child', 'ok'],
  ]);
  for (const c of heard) assert.ok(c.seconds >= 0 && c.seconds < 5, String(c.seconds));
  assert.doesNotMatch(JSON.stringify(heard), /r1|a\.txt|alpha/);
});
