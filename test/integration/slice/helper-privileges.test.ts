/**
 * [INV-5] [INV-9] An isolated DuckDB helper runs as uid 65534 with no capabilities and
 * no_new_privs, in its own PID and IPC namespaces too, and sees only the files of the query
 * it serves (and, idle, for at most a second after). Proven from inside (the helper's own /proc/self/status, which it reports in its
 * first line) and from outside (/proc/<helper>/status, ns links and mountinfo).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckdbHelperPool, lockedQuery } from '../../../src/slice/index.js';
import { isolationAvailable } from '../../../src/slice/helper-isolation.js';

function statusField(status: string, name: string): string {
  return new RegExp(`^${name}:[ \\t]*(.*)$`, 'm').exec(status)?.[1]?.trim() ?? '';
}

// req: slice:helper-locked slice:one-ref
test('[INV-5] [INV-9] the isolated helper is uid 65534 with CapEff 0 and no_new_privs, in its own PID/IPC namespaces, and sees only its query\'s files', async (t) => {
  if (!isolationAvailable()) {
    if (process.env.CI === 'true') throw new Error('CI requires helper isolation (root + util-linux)');
    t.skip('helper isolation needs root and util-linux unshare/setpriv');
    return;
  }
  // 0700 like $BRIG_HOME: uid 65534 cannot traverse it, so only the pool's bind mount lets the helper read.
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-priv-'));
  const pool = new DuckdbHelperPool({ size: 1, isolate: 'require' });
  t.after(async () => {
    await pool.close();
    await fs.rm(dir, { recursive: true, force: true });
  });
  await pool.warm();

  // Inside: what the helper read from its own /proc/self/status after dropping.
  const [h] = pool.helpers();
  assert.ok(h, 'a started helper');
  assert.equal(h.isolated, true);
  assert.deepEqual(h.self.uid, [65534, 65534, 65534, 65534], 'real, effective, saved and fs uid');
  assert.deepEqual(h.self.gid, [65534, 65534, 65534, 65534]);
  assert.deepEqual(h.self.groups, []);
  assert.equal(h.self.capEff, '0000000000000000', 'CapEff 0');
  assert.equal(h.self.capPrm, '0000000000000000', 'CapPrm 0');
  assert.equal(h.self.capInh, '0000000000000000');
  assert.equal(h.self.capAmb, '0000000000000000');
  assert.equal(h.self.noNewPrivs, 1);

  // Outside: the kernel's view of the same process agrees.
  const status = await fs.readFile(`/proc/${h.pid}/status`, 'utf8');
  assert.equal(statusField(status, 'Uid'), '65534\t65534\t65534\t65534');
  assert.equal(statusField(status, 'CapEff'), '0000000000000000');
  assert.equal(statusField(status, 'CapPrm'), '0000000000000000');
  assert.equal(statusField(status, 'NoNewPrivs'), '1');
  // Only what mounting and dropping needed is left in the bounding set; with no_new_privs and
  // no uid 0 nothing can be gained from it.
  assert.equal(BigInt(`0x${statusField(status, 'CapBnd')}`) & ~((1n << 6n) | (1n << 7n) | (1n << 21n)), 0n, 'CapBnd ⊆ {setgid, setuid, sys_admin}');
  for (const ns of ['pid', 'ipc', 'net', 'mnt']) {
    assert.notEqual(await fs.readlink(`/proc/${h.pid}/ns/${ns}`), await fs.readlink(`/proc/self/ns/${ns}`), `own ${ns} namespace`);
  }
  const mounts = async () => (await fs.readFile(`/proc/${h.pid}/mountinfo`, 'utf8')).split('\n').filter(Boolean).map((l) => l.split(' '));
  const shm = (await mounts()).filter((m) => m[4] === '/dev/shm').at(-1);
  if (shm) assert.match(shm[5]!, /(^|,)ro(,|$)/, '/dev/shm is read-only for the helper');

  // Files: readable through the query's own bind mount, gone from the helper's view afterwards.
  const a = path.join(dir, 'a.jsonl');
  const b = path.join(dir, 'b.csv');
  await fs.writeFile(a, '{"x":1}\n{"x":2}\n');
  await fs.writeFile(b, 'y\n5\n');
  const ra = await lockedQuery({ files: [a], viewName: 'ref', reader: 'read_ndjson', sql: 'SELECT sum(x) FROM ref', pool });
  assert.deepEqual(ra.rows, [[3]]);
  const rb = await lockedQuery({ files: [b], viewName: 'ref', reader: 'read_csv_auto', sql: 'SELECT sum(y) FROM ref', pool });
  assert.deepEqual(rb.rows, [[5]]);
  assert.deepEqual(pool.helpers().map((x) => x.pid), [h.pid], 'both served by the same helper');
  const binds = async () => (await mounts()).filter((m) => m[4]!.includes('/in/')).map((m) => path.basename(m[4]!));
  assert.deepEqual(await binds(), ['b.csv'], 'the earlier query\'s file was detached before the next one ran');
  await new Promise((r) => setTimeout(r, 1500));
  assert.deepEqual(await binds(), [], 'an idle helper keeps no file mounted past a second');

  // A file uid 65534 may not read is refused before DuckDB sees it, with the reason.
  const secret = path.join(dir, 'secret.jsonl');
  await fs.writeFile(secret, '{"s":1}\n', { mode: 0o600 });
  await assert.rejects(
    lockedQuery({ files: [secret], viewName: 'ref', reader: 'read_ndjson', sql: 'SELECT * FROM ref', pool }),
    (e: { code?: string; message?: string }) => e.code === 'query_failed' && /uid 65534/.test(e.message ?? '') && !(e.message ?? '').includes(dir),
  );
});
