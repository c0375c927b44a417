import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CONTENT_HASH_MAX_BYTES, fingerprint, planChildImage } from '../../../src/jail/docker/image.js';

async function tmpdir(t: { after: (fn: () => void) => void }): Promise<string> {
  const d = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-fp-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

test('the child image tag follows the content of dist/child and the recipe, not a rebuild\'s mtimes', async (t) => {
  const dir = await tmpdir(t);
  const runtime = path.join(dir, 'child');
  fs.mkdirSync(path.join(runtime, 'sdk'), { recursive: true });
  fs.writeFileSync(path.join(runtime, 'runtime.js'), 'export const v = 1;\n');
  fs.writeFileSync(path.join(runtime, 'sdk', 'index.js'), 'export {};\n');
  const plan = () => planChildImage({ nodePath: fs.realpathSync(process.execPath), busyboxPath: '/bin/busybox', childRuntimeDir: runtime });
  const first = await fingerprint(await plan());
  assert.match(first, /^[0-9a-f]{16}$/);
  assert.equal(await fingerprint(await plan()), first, 'stable');

  // `tsc` rewrote the same bytes: a later mtime, the same tag (no needless rebuild).
  const later = new Date(Date.now() + 60_000);
  fs.utimesSync(path.join(runtime, 'runtime.js'), later, later);
  fs.writeFileSync(path.join(runtime, 'sdk', 'index.js'), 'export {};\n');
  assert.equal(await fingerprint(await plan()), first, 'same content keeps the tag');

  fs.writeFileSync(path.join(runtime, 'runtime.js'), 'export const v = 2;\n');
  const changed = await fingerprint(await plan());
  assert.notEqual(changed, first, 'a changed runtime file changes the tag');

  fs.writeFileSync(path.join(runtime, 'sdk', 'new.js'), 'export {};\n');
  const added = await fingerprint(await plan());
  assert.notEqual(added, changed, 'an added runtime file changes the tag');

  const recipe = await plan();
  recipe.entries.push({ kind: 'data', dest: 'etc/extra', mode: 0o644, data: Buffer.from('x') });
  assert.notEqual(await fingerprint(recipe), added, 'a changed recipe changes the tag');
  const mode = await plan();
  const passwd = mode.entries.find((e) => e.dest === 'etc/passwd')!;
  (passwd as { mode: number }).mode = 0o666;
  assert.notEqual(await fingerprint(mode), added, 'a changed mode changes the tag');
});

test('a host file over the content-hash size counts by metadata: a replaced binary changes the tag', async (t) => {
  const dir = await tmpdir(t);
  const big = path.join(dir, 'node');
  fs.closeSync(fs.openSync(big, 'w'));
  fs.truncateSync(big, CONTENT_HASH_MAX_BYTES + 1);
  const plan = { name: 'child', entries: [{ kind: 'host' as const, dest: 'usr/bin/node', mode: 0o755, hostPath: big }] };
  const a = await fingerprint(plan);
  assert.equal(await fingerprint(plan), a);
  const later = new Date(Date.now() + 60_000);
  fs.utimesSync(big, later, later);
  assert.notEqual(await fingerprint(plan), a);
});
