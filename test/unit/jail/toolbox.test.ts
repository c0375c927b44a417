/**
 * The toolbox recipe (src/jail/docker/toolbox.ts), pure: the package list is the issue's, the
 * tag is a fingerprint of the whole recipe (the same recipe the same tag, any change a new
 * one), and mmdebstrap's argv is argv — the tar on stdout, the host's sources as the mirror.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TOOLBOX_PACKAGES, mmdebstrapArgv, toolboxFingerprint, toolboxRecipe } from '../../../src/jail/docker/toolbox.js';

test('the toolbox recipe: the list in one place, a tag that changes with any part of the recipe and only then', () => {
  for (const p of ['git', 'python3', 'python3-pip', 'python3-venv', 'build-essential', 'nodejs', 'ripgrep', 'jq', 'curl', 'ca-certificates', 'patch', 'file', 'unzip', 'sqlite3']) {
    assert.ok((TOOLBOX_PACKAGES as readonly string[]).includes(p), p);
  }
  const r = toolboxRecipe();
  assert.equal(toolboxFingerprint(r), toolboxFingerprint(toolboxRecipe()), 'an unchanged recipe, the same tag');
  assert.match(toolboxFingerprint(r), /^[0-9a-f]{16}$/);
  assert.notEqual(toolboxFingerprint({ ...r, packages: [...r.packages, 'vim'] }), toolboxFingerprint(r));
  assert.notEqual(toolboxFingerprint({ ...r, hooks: [...r.hooks, 'true'] }), toolboxFingerprint(r));
  assert.notEqual(toolboxFingerprint({ ...r, sources: { path: '/x', content: 'other mirror' } }), toolboxFingerprint(r));
  assert.notEqual(toolboxFingerprint({ ...r, env: [...r.env, 'X=1'] }), toolboxFingerprint(r), 'the image environment is part of the tag');
  assert.ok(r.env.includes('PYTHONDONTWRITEBYTECODE=1'), "no bytecode cache to go stale under a fast agent's same-second edit");
  const argv = mmdebstrapArgv(r);
  assert.ok(argv.includes('--variant=apt'));
  assert.ok(argv.includes(`--include=${TOOLBOX_PACKAGES.join(',')}`));
  assert.equal(argv[argv.indexOf('bookworm') + 1], '-', 'the target slot (a temp file at build time)');
  assert.ok(argv.some((a) => a.startsWith('--customize-hook=') && a.includes('chown -R 65534:65534 "$1/workspace"')));
});
