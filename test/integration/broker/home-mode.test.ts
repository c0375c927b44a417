/**
 * A BRIG_HOME other local users can enter is refused before anything starts (invalid_input,
 * hint `chmod 700 …`); a fresh one is created 0700. No engine needed: the check comes first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { brigPaths, loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/compose.js';
import { BrigError } from '../../../src/util/errors.js';

test('a 0755 (or 0750, 0701) BRIG_HOME is refused with invalid_input and a chmod 700 hint; nothing is started in it', async (t) => {
  const parent = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-homemode-'));
  t.after(() => fs.promises.rm(parent, { recursive: true, force: true }));
  for (const mode of [0o755, 0o750, 0o701]) {
    const home = path.join(parent, `home-${mode.toString(8)}`);
    fs.mkdirSync(home);
    fs.chmodSync(home, mode);
    await assert.rejects(compose(loadConfig({ BRIG_HOME: home }), { reconcile: false, ensureImage: false }), (e: unknown) => {
      assert.ok(e instanceof BrigError);
      assert.equal(e.code, 'invalid_input');
      assert.match(e.message, new RegExp(`mode 0${mode.toString(8)}`));
      assert.equal(e.hint, `chmod 700 ${home}`);
      return true;
    });
    assert.deepEqual(fs.readdirSync(home), [], 'no ledger, lease or run directory was made');
    assert.equal(fs.statSync(home).mode & 0o777, mode, 'refused, not silently changed');
    assert.equal(fs.existsSync(brigPaths(home).brokers), false, 'no broker directory either');
  }
});

test('a BRIG_HOME that does not exist yet is created 0700, and so is its broker runtime directory', async (t) => {
  const parent = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-homemode-'));
  const home = path.join(parent, 'new-home');
  t.after(() => fs.promises.rm(parent, { recursive: true, force: true }));
  const c = await compose(loadConfig({ BRIG_HOME: home }), { reconcile: false, ensureImage: false });
  try {
    assert.equal(fs.statSync(home).mode & 0o777, 0o700);
    const brokers = brigPaths(home).brokers;
    for (const d of [path.dirname(brokers), brokers]) {
      const st = fs.lstatSync(d);
      assert.ok(st.isDirectory());
      assert.deepEqual([st.mode & 0o777, st.uid], [0o700, process.getuid?.()], d);
    }
  } finally {
    await c.close();
  }
  assert.equal(fs.existsSync(brigPaths(home).brokers), false, 'an empty broker runtime directory goes with the supervisor');
});
