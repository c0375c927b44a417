import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { imageAllowed, parsePolicy } from '../../../src/lease/index.js';

const DEFAULT = fs.readFileSync(path.resolve(import.meta.dirname, '../../../policies/default.yaml'), 'utf8');
/** The shipped default with `images` lines added under root and worker (the two-space profile indent). */
const withImages = (root: string | null, worker: string | null) =>
  DEFAULT.replace(/^  root:\n/m, `  root:\n${root === null ? '' : `    images: ${root}\n`}`).replace(/^  worker:\n/m, `  worker:\n${worker === null ? '' : `    images: ${worker}\n`}`);

test('[INV-1] policy images: absent means any local image; a profile without a list takes root\'s; a profile wider than root does not load', () => {
  const any = parsePolicy(DEFAULT, 'default.yaml');
  assert.ok(any.ok);
  assert.equal(any.value.profiles.root!.images, null);
  assert.equal(any.value.profiles.worker!.images, null);

  const narrowed = parsePolicy(withImages('[toolbox, "my-app:*"]', '["my-app:1.2"]'), 'p.yaml');
  assert.ok(narrowed.ok, narrowed.ok ? '' : JSON.stringify(narrowed.error));
  assert.deepEqual(narrowed.value.profiles.root!.images, ['toolbox', 'my-app:*']);
  assert.deepEqual(narrowed.value.profiles.worker!.images, ['my-app:1.2']);
  assert.deepEqual(narrowed.value.profiles.researcher!.images, ['toolbox', 'my-app:*'], 'silent: root\'s list');

  const wider = parsePolicy(withImages('[toolbox]', '[toolbox, "other:1"]'), 'p.yaml');
  assert.ok(!wider.ok);
  assert.match(JSON.stringify(wider.error), /profiles\.worker\.images names \\"other:1\\", which profiles\.root\.images does not allow/);

  const bad = parsePolicy(withImages('["Not An Image"]', null), 'p.yaml');
  assert.ok(!bad.ok, 'a name with spaces and capitals is refused at load');
});

test('imageAllowed: exact names and REPO:* (every tag of that repository, nothing under it)', () => {
  const list = ['toolbox', 'my-app:*', 'reg/base:1'];
  assert.equal(imageAllowed(list, 'toolbox'), true);
  assert.equal(imageAllowed(list, 'my-app:2.0'), true);
  assert.equal(imageAllowed(list, 'my-app:*'), true, 'the same pattern fits inside it');
  assert.equal(imageAllowed(list, 'my-app-evil:1'), false);
  assert.equal(imageAllowed(list, 'my-app:1/../x'), false);
  assert.equal(imageAllowed(list, 'reg/base:2'), false);
  assert.equal(imageAllowed(list, 'brig-toolbox:abc'), false, 'the name toolbox, not the tag behind it');
  assert.equal(imageAllowed([], 'toolbox'), false);
});
