/**
 * `brig serve --warm N` is checked before anything starts: a bad value is a clear refusal
 * (what was wrong, what to give), exit 2, and no daemon, socket or home is made.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../helpers/cli.js';

test('brig serve --warm refuses anything but a whole number from 0 to 64, before it starts', async (t) => {
  const home = path.join(await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-warmflag-')), 'home');
  t.after(() => fs.promises.rm(path.dirname(home), { recursive: true, force: true }));
  for (const bad of ['-1', '1.5', '65', 'many']) {
    const r = await runCli(['serve', '--warm', bad], { home });
    assert.equal(r.code, 2, `${bad}: ${r.err}`);
    assert.match(r.err, /--warm/, bad);
    assert.equal(fs.existsSync(home), false, `${bad}: nothing was made`);
  }
});
