/**
 * [INV-5] The DuckDB helper runs in its own network namespace with a read-only `/` (when the
 * host allows it: root + unshare). Proven from outside through /proc of the helper process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { lockedQuery, DuckdbHelperPool } from '../../../src/slice/index.js';
import { isolationAvailable } from '../../../src/slice/helper-isolation.js';

async function nodeChildOf(pid: number): Promise<number> {
  const kids = (await fs.readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')).trim().split(/\s+/).filter(Boolean);
  assert.equal(kids.length, 1, 'unshare --fork has exactly one child: the helper');
  return Number(kids[0]);
}

// req: slice:helper-locked
test('[INV-5] isolated helper: own network namespace, read-only root, queries still run', async (t) => {
  if (!isolationAvailable()) {
    if (process.env.CI === 'true') throw new Error('CI requires helper isolation (root + unshare)');
    t.skip('helper isolation needs root and util-linux unshare');
    return;
  }
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-h3-iso-'));
  const pool = new DuckdbHelperPool({ size: 1, isolate: 'require' });
  t.after(async () => {
    await pool.close();
    await fs.rm(dir, { recursive: true, force: true });
  });
  await pool.warm();
  assert.equal(pool.isolated, true);
  const [outer] = pool.pids();
  const helper = await nodeChildOf(outer!);
  const ourNet = await fs.readlink('/proc/self/ns/net');
  assert.notEqual(await fs.readlink(`/proc/${helper}/ns/net`), ourNet, 'the helper has its own network namespace');
  assert.notEqual(await fs.readlink(`/proc/${helper}/ns/mnt`), await fs.readlink('/proc/self/ns/mnt'));
  const mounts = (await fs.readFile(`/proc/${helper}/mountinfo`, 'utf8')).split('\n');
  const rootMounts = mounts.filter((l) => l.split(' ')[4] === '/');
  assert.ok(rootMounts.length > 0);
  for (const m of rootMounts) assert.match(m.split(' ')[5]!, /(^|,)ro(,|$)/, `/ is read-only for the helper: ${m}`);
  const ours = (await fs.readFile('/proc/self/mountinfo', 'utf8')).split('\n').filter((l) => l.split(' ')[4] === '/');
  assert.ok(ours.some((m) => /(^|,)rw(,|$)/.test(m.split(' ')[5]!)), 'the host keeps its read-write root');
  const devs = await fs.readFile(`/proc/${helper}/net/dev`, 'utf8');
  assert.deepEqual(devs.split('\n').slice(2).filter(Boolean).map((l) => l.trim().split(':')[0]), ['lo']);

  const file = path.join(dir, 'rows.jsonl');
  await fs.writeFile(file, Array.from({ length: 2000 }, (_, i) => JSON.stringify({ i, s: `${i}`.repeat(20) })).join('\n') + '\n');
  const r = await lockedQuery({ files: [file], viewName: 'ref', reader: 'read_ndjson', sql: 'SELECT count(*), max(i) FROM ref', pool });
  assert.deepEqual(r.rows, [[2000, 1999]]);
  const sorted = await lockedQuery({ files: [file], viewName: 'ref', reader: 'read_ndjson', sql: 'SELECT i FROM ref ORDER BY s DESC, i LIMIT 1', pool });
  assert.deepEqual(sorted.rows, [[999]]);
});
