/**
 * [INV-5] The DuckDB helper is spawned from nothing: its environment is empty, whether it runs
 * isolated (through unshare) or not. Proven from outside through /proc/<helper>/environ, with
 * a secret set in OUR environment first. (DuckDB's getenv() is a shell-only function, absent
 * from this build; the guard refuses it by name anyway.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckdbHelperPool, lockedQuery } from '../../../src/slice/index.js';
import { isolationAvailable } from '../../../src/slice/helper-isolation.js';

const SECRET = 'BRIG_A5_HELPER_ENV_CANARY';

for (const isolate of ['off', 'auto'] as const) {
  // req: slice:helper-locked
  test(`[INV-5] the DuckDB helper's environment is empty (isolate: ${isolate})`, async (t) => {
    if (isolate === 'auto' && !isolationAvailable()) {
      t.skip('helper isolation needs root and util-linux unshare; the unisolated case is the other test');
      return;
    }
    process.env[SECRET] = 'leak-me-if-you-can';
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-a5-env-'));
    const pool = new DuckdbHelperPool({ size: 1, isolate });
    t.after(async () => {
      delete process.env[SECRET];
      await pool.close();
      await fs.rm(dir, { recursive: true, force: true });
    });
    await pool.warm();
    const pids = pool.nodePids();
    assert.equal(pids.length, 1, `one warm helper (${pool.lastStartError ?? 'no start failed'})`);
    const environ = await fs.readFile(`/proc/${pids[0]}/environ`);
    assert.equal(environ.length, 0, `the helper has an empty environment, got: ${environ.toString('utf8').split('\0').map((kv) => kv.split('=')[0]).join(', ')}`);
    // Control: a process spawned the ordinary way (inheriting) does see the secret, so the
    // check above could have failed.
    const inherited = spawnSync('/bin/cat', ['/proc/self/environ']).stdout;
    assert.ok(inherited.includes(SECRET), 'an inheriting child sees our environment');

    // The helper still answers (an empty environment is not a broken one).
    const file = path.join(dir, 'rows.jsonl');
    await fs.writeFile(file, '{"a":1}\n{"a":2}\n');
    const r = await lockedQuery({ files: [file], viewName: 'ref', reader: 'read_ndjson', sql: 'SELECT sum(a) FROM ref', pool });
    assert.deepEqual(r.rows, [[3]]);
  });
}
