import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { confine } from '../../../src/child/agent/confine.js';
import { executeCall } from '../../../src/child/agent/calls.js';
import { Spiller } from '../../../src/child/agent/bound.js';
import { FS_TOOLS } from '../../../src/child/agent/tools/fs-tools.js';
import { tempRoots } from './fake-broker.js';

function setup() {
  const r = tempRoots();
  const { workspace: ws, artifacts: art, base } = r;
  fs.writeFileSync(path.join(ws, 'a.txt'), 'a');
  fs.mkdirSync(path.join(ws, 'sub'));
  fs.writeFileSync(path.join(base, 'secret.txt'), 'outside');
  fs.writeFileSync(path.join(art, 'in.csv'), 'x,y\n');
  fs.mkdirSync(path.join(ws, '.brig/spill'), { recursive: true });
  fs.writeFileSync(path.join(ws, '.brig/token'), 'bearer');
  fs.writeFileSync(path.join(ws, '.brig/spill/1.txt'), 'spilled');
  fs.symlinkSync(path.join(base, 'secret.txt'), path.join(ws, 'link-out'));
  fs.symlinkSync(base, path.join(ws, 'dir-out'));
  fs.symlinkSync(path.join(base, 'nowhere.txt'), path.join(ws, 'dangling'));
  fs.symlinkSync(path.join(ws, 'a.txt'), path.join(ws, 'sub/link-in'));
  fs.symlinkSync(path.join(art, 'in.csv'), path.join(ws, 'to-artifact'));
  return r;
}

test('confine: relative and absolute paths inside the workspace resolve; ../ and absolute paths outside are refused', (t) => {
  const r = setup();
  t.after(r.cleanup);
  const roots = { workspace: r.workspace, artifacts: r.artifacts };
  assert.deepEqual(confine('a.txt', roots, 'read'), { ok: true, path: path.join(r.workspace, 'a.txt'), root: 'workspace' });
  assert.equal(confine(path.join(r.workspace, 'sub/../a.txt'), roots, 'read').ok, true);
  assert.equal(confine('out/new/deep.txt', roots, 'write').ok, true, 'a file to create in a directory to create');
  for (const p of ['../secret.txt', 'sub/../../secret.txt', path.join(r.base, 'secret.txt'), '/etc/passwd', '..', `${r.workspace}-evil/x`]) {
    const c = confine(p, roots, 'read');
    assert.equal(c.ok, false, p);
  }
  assert.equal(confine('', roots, 'read').ok, false);
  assert.equal(confine('a\0b', roots, 'read').ok, false);
});

test('confine: symlinks are followed to their real place — out of the workspace is refused, a dangling one too', (t) => {
  const r = setup();
  t.after(r.cleanup);
  const roots = { workspace: r.workspace, artifacts: r.artifacts };
  assert.equal(confine('link-out', roots, 'read').ok, false);
  assert.equal(confine('link-out', roots, 'write').ok, false);
  assert.equal(confine('dir-out/secret.txt', roots, 'read').ok, false, 'through a symlinked directory');
  assert.equal(confine('dir-out/new.txt', roots, 'write').ok, false, 'a new file through a symlinked directory');
  assert.equal(confine('dangling', roots, 'write').ok, false, 'writing through a dangling link would land outside');
  assert.deepEqual(confine('sub/link-in', roots, 'read'), { ok: true, path: path.join(r.workspace, 'a.txt'), root: 'workspace' });
});

test('confine: /artifacts is read-only; brig’s own .brig/ is refused but its spill files are readable', (t) => {
  const r = setup();
  t.after(r.cleanup);
  const roots = { workspace: r.workspace, artifacts: r.artifacts };
  assert.equal(confine(path.join(r.artifacts, 'in.csv'), roots, 'read').ok, true);
  assert.equal(confine(path.join(r.artifacts, 'in.csv'), roots, 'write').ok, false);
  assert.deepEqual(confine('to-artifact', roots, 'read'), { ok: true, path: path.join(r.artifacts, 'in.csv'), root: 'artifacts' });
  assert.equal(confine('to-artifact', roots, 'write').ok, false);
  assert.equal(confine('.brig/token', roots, 'read').ok, false);
  assert.equal(confine('.brig', roots, 'read').ok, false);
  assert.equal(confine('.brig/packet.json', roots, 'write').ok, false);
  assert.equal(confine('.brig/spill/1.txt', roots, 'read').ok, true);
  assert.equal(confine('.brig/spill/1.txt', roots, 'write').ok, false);
});

test('the file tools refuse through confine: read_file ../, write_file via a symlink, list_files outside', async (t) => {
  const r = setup();
  t.after(r.cleanup);
  const env = {
    tools: new Map(FS_TOOLS.map((x) => [x.name, x])),
    ctx: { roots: { workspace: r.workspace, artifacts: r.artifacts }, broker: { call: async (): Promise<any> => ({}) }, children: new Map(), maxChars: 16_000, runTimeoutMs: 60_000 },
    stop: new AbortController().signal,
    spiller: new Spiller(path.join(r.workspace, '.brig/spill')),
    secrets: [],
  };
  const run = (name: string, input: unknown) => executeCall({ id: 'c', name, input }, env);
  const read = await run('read_file', { path: '../secret.txt' });
  assert.equal(read.message.isError, true);
  assert.match(read.message.content, /outside/);
  const write = await run('write_file', { path: 'link-out', content: 'pwned' });
  assert.equal(write.message.isError, true);
  assert.equal(fs.readFileSync(path.join(r.base, 'secret.txt'), 'utf8'), 'outside');
  assert.equal((await run('list_files', { path: r.base })).message.isError, true);
  assert.equal((await run('grep_files', { pattern: 'outside', path: 'dir-out' })).message.isError, true);
  // A tree walk lists links without following them, and hides .brig/.
  const list = (await run('list_files', { depth: 3 })).message.content;
  assert.match(list, /dir-out -> /);
  assert.match(list, /link-out -> .*secret\.txt/);
  assert.ok(!/secret\.txt \(/.test(list), 'the link target is named, never listed');
  assert.ok(!list.includes('.brig'));
  const grep = (await run('grep_files', { pattern: 'outside|bearer' })).message.content;
  assert.match(grep, /^\[0 matches/);
});
