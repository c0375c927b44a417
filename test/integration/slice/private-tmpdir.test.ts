/**
 * A first run with a private TMPDIR (mode 0700, as pam_tmpdir and systemd's PrivateTmp give a
 * user) still slices (issue 27 item 9): real `brig` processes — a spawn, then sql, jq, grep and
 * read over its JSONL output — where every temporary directory brig makes lands under that
 * TMPDIR, and the isolated DuckDB and jq helpers (uid 65534 when run as root) still start.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const BRIG = [path.join(ROOT, 'dist/cli/main.js')];

test('[INV-3] a private TMPDIR (0700) does not break the slicing helpers: sql, jq, grep and read answer', async (t) => {
  if (!(await requireEngine(t))) return;
  if (!fs.existsSync(BRIG[0]!)) return void t.skip('dist/ is not built (`make build`)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-privtmp-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const home = path.join(dir, 'home');
  const tmp = path.join(dir, 'tmp');
  fs.mkdirSync(tmp, { mode: 0o700 });
  fs.chmodSync(tmp, 0o700);
  const env = { ...process.env, BRIG_HOME: home, TMPDIR: tmp };
  const brig = (...args: string[]) => {
    const r = spawnSync(process.execPath, [...BRIG, ...args], { env, encoding: 'utf8', timeout: 120_000 });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const spawned = brig('spawn', '--json', '--', 'sh', '-c', 'i=0; while [ $i -lt 50 ]; do echo "{\\"n\\":$i,\\"k\\":\\"k$((i % 3))\\"}"; i=$((i+1)); done > out/rows.jsonl');
  assert.equal(spawned.code, 0, spawned.err);
  const run = JSON.parse(spawned.out) as { runId: string; refs: { ref: string; path: string }[] };
  const ref = run.refs.find((r) => r.path === 'out/rows.jsonl')?.ref;
  assert.ok(ref, spawned.out);

  const sql = brig('ref', 'sql', ref, 'SELECT k, sum(n) AS s FROM ref GROUP BY k ORDER BY k', '--json');
  assert.equal(sql.code, 0, sql.err);
  assert.deepEqual((JSON.parse(sql.out) as { rows: unknown[] }).rows, [['k0', 408], ['k1', 425], ['k2', 392]], 'sums of n by n mod 3, below 50');
  const jq = brig('ref', 'jq', ref, 'select(.n == 42) | .k');
  assert.equal(jq.code, 0, jq.err);
  assert.equal(jq.out.trim(), '"k0"');
  const grep = brig('ref', 'grep', ref, '"n":49,');
  assert.equal(grep.code, 0, grep.err);
  assert.match(grep.out, /"k":"k1"/);
  const read = brig('ref', 'read', ref, '--length', '30');
  assert.equal(read.code, 0, read.err);
  assert.match(read.out, /^\{"n":0,"k":"k0"\}/);
  // Nothing brig made under the private TMPDIR outlives its command.
  assert.deepEqual(fs.readdirSync(tmp).filter((n) => n.startsWith('brig-')), []);
});
