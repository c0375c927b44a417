/**
 * The workspace disk's stage (workspace-disk.ts stageContent): what mkfs copies into a run's
 * fresh filesystem — out/ and the inputs, the owner's, with their modes — and the paths refused.
 * Real files in a temporary directory; chown needs root (brig's disks do too).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stageContent } from '../../../src/jail/docker/workspace-disk.js';
import { isBrigError } from '../../../src/util/errors.js';

const OWNER = { uid: 65534, gid: 65534 };

async function stageDir(t: { after: (f: () => Promise<void>) => void }): Promise<string> {
  const base = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-stage-'));
  t.after(() => fs.promises.rm(base, { recursive: true, force: true }));
  return path.join(base, 'r-x.stage');
}

function seen(p: string): [number, number, string] {
  const s = fs.statSync(p);
  return [s.uid, s.gid, (s.mode & 0o7777).toString(8)];
}

test('the stage holds out/ and each input with its parents, all the owner\'s, modes kept and masked to 0777; a later input replaces an earlier one', async (t) => {
  if (process.getuid?.() !== 0) return t.skip('not root: the stage chowns to the jail user, as the disk needs root');
  const stage = await stageDir(t);
  const bytes = await stageContent(stage, OWNER, [
    { path: 'a.txt', data: 'first' },
    { path: './deep//er/run.sh', data: Buffer.from('#!/bin/sh\n'), mode: 0o4755 },
    { path: '.brig/token', data: 'secret', mode: 0o400 },
    { path: 'a.txt', data: 'second', mode: 0o600 },
  ]);
  assert.equal(bytes, 5 + 10 + 6 + 6);
  assert.deepEqual(seen(stage), [0, 0, '700'], 'the stage itself is brig\'s, closed');
  assert.deepEqual(seen(path.join(stage, 'out')), [65534, 65534, '755']);
  assert.deepEqual(seen(path.join(stage, 'deep')), [65534, 65534, '755']);
  assert.deepEqual(seen(path.join(stage, 'deep/er')), [65534, 65534, '755']);
  assert.deepEqual(seen(path.join(stage, 'deep/er/run.sh')), [65534, 65534, '755'], 'setuid dropped');
  assert.deepEqual(seen(path.join(stage, '.brig/token')), [65534, 65534, '400']);
  assert.deepEqual(seen(path.join(stage, 'a.txt')), [65534, 65534, '600']);
  assert.equal(fs.readFileSync(path.join(stage, 'a.txt'), 'utf8'), 'second');
  assert.deepEqual(fs.readdirSync(stage).sort(), ['.brig', 'a.txt', 'deep', 'out']);
});

test('a leftover stage of the same run is replaced, not merged', async (t) => {
  if (process.getuid?.() !== 0) return t.skip('not root: the stage chowns to the jail user, as the disk needs root');
  const stage = await stageDir(t);
  await fs.promises.mkdir(stage, { recursive: true });
  fs.writeFileSync(path.join(stage, 'stale'), 'from a crash');
  await stageContent(stage, OWNER, []);
  assert.deepEqual(fs.readdirSync(stage), ['out']);
});

test('paths that climb out, and inputs colliding with a directory, are refused as invalid_input', async (t) => {
  if (process.getuid?.() !== 0) return t.skip('not root: the stage chowns to the jail user, as the disk needs root');
  for (const [inputs, why] of [
    [[{ path: '../escape', data: 'x' }], /relative to \/workspace/],
    [[{ path: '/etc/passwd', data: 'x' }], /relative to \/workspace/],
    [[{ path: 'out', data: 'x' }], /names a directory/],
    [[{ path: 'd/f', data: 'x' }, { path: 'd', data: 'x' }], /names a directory|collides/],
    [[{ path: 'f', data: 'x' }, { path: 'f/g', data: 'x' }], /is a file where another input needs a directory/],
  ] as const) {
    const stage = await stageDir(t);
    await assert.rejects(stageContent(stage, OWNER, inputs), (e) => isBrigError(e, 'invalid_input') && why.test((e as Error).message), JSON.stringify(inputs.map((i) => i.path)));
  }
});
