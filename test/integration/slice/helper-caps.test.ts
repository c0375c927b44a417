/**
 * [INV-9] The DuckDB helper has OS caps of its own: RLIMIT_AS (its size once loaded + the
 * pool's budget) and RLIMIT_CPU, read from /proc/<helper>/limits — the kernel's view, not
 * ours. A hostile query that would grow a helper past DuckDB's memory_limit (a 4 GB string
 * grew an uncapped helper to 7.7 GB RSS) fails cleanly with a code, fast, with the helper's
 * peak RSS under the cap, and the same helper serves the next query; a query that burns its
 * helper's CPU time is stopped by the kernel and answered as a timeout, and a helper that could
 * run out of CPU time during an ordinary query is retired before it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { FsResultStore } from '../../../src/results/index.js';
import { DuckdbHelperPool, Slicer, lockedQuery } from '../../../src/slice/index.js';

async function limits(pid: number): Promise<{ as: [number, number]; cpu: [number, number] }> {
  const text = await fs.readFile(`/proc/${pid}/limits`, 'utf8');
  const row = (name: string): [number, number] => {
    const m = new RegExp(`^${name}\\s+(\\S+)\\s+(\\S+)`, 'm').exec(text);
    const n = (v: string | undefined) => (v === 'unlimited' ? Infinity : Number(v));
    return [n(m?.[1]), n(m?.[2])];
  };
  return { as: row('Max address space'), cpu: row('Max cpu time') };
}

async function status(pid: number, field: string): Promise<number> {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(await fs.readFile(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1]) * 1024;
}

// req: limits:helper-os-caps
test('[INV-9] a 4 GB string fails cleanly under the helper\'s own memory cap; the helper stays bounded and serves the next query', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-caps-'));
  const pool = new DuckdbHelperPool({ size: 1 });
  t.after(async () => {
    await pool.close();
    await fs.rm(home, { recursive: true, force: true });
  });
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const ref = await store.writeStream('run-caps', 'root-caps', 'rows.jsonl', Readable.from([Buffer.from('{"a":1}\n{"a":2}\n')]));
  const slicer = new Slicer(store, { pool, limits: { timeoutMs: 60_000 } });
  await pool.warm();
  const [pid] = pool.nodePids();
  assert.ok(pid, `a warm helper (${pool.lastStartError ?? 'no start failed'})`);
  const before = await limits(pid);
  const size = await status(pid, 'VmSize');
  assert.ok(Number.isFinite(before.as[1]), 'the helper has an address-space cap (RLIMIT_AS)');
  assert.equal(before.as[0], before.as[1], 'soft = hard: the helper cannot raise its own cap');
  assert.ok(before.as[1] <= size + 3 * 1024 ** 3, `the cap (${before.as[1]}) is the helper's size (${size}) + at most 3 GiB`);
  assert.ok(Number.isFinite(before.cpu[1]) && before.cpu[1] <= 910, `the helper has a CPU-time cap (RLIMIT_CPU), got ${before.cpu.join(':')}`);

  for (const q of ["SELECT length(repeat('x', 4000000000))", "SELECT length(string_agg(repeat('x', 1000000), '')) FROM range(5000)"]) {
    const res = await slicer.sql(ref.ref, q);
    assert.equal(res.ok, false, `${q} must not succeed`);
    if (!res.ok) {
      // A memory failure, not the query timeout (that would be `timeout`).
      assert.ok(['query_failed', 'output_too_large'].includes(res.error.code), `${q} → ${res.error.code}: ${res.error.message}`);
      assert.match(res.error.message, /memory/i, 'the failure says it is about memory');
      assert.ok(!res.error.message.includes(home), 'no host path in the message');
    }
  }
  const hwm = await status(pid, 'VmHWM');
  assert.ok(hwm < before.as[1], `peak RSS ${hwm} stays under the cap ${before.as[1]}`);
  assert.ok(hwm < 2 * 1024 ** 3, `peak RSS ${(hwm / 1024 ** 2).toFixed(0)} MiB stays far below the 4 GB the query asked for`);
  const next = await slicer.sql(ref.ref, 'SELECT sum(a) FROM ref');
  assert.ok(next.ok, 'the next query is served');
  if (next.ok) assert.deepEqual(next.value.rows, [[3]]);
  assert.deepEqual(pool.nodePids(), [pid], 'by the same helper: an over-memory query is an ordinary failure');
});

// req: limits:helper-os-caps
test('[INV-9] a query that burns its helper\'s CPU time is stopped by the kernel (SIGXCPU) and answered as a timeout', async (t) => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-cpu-'));
  const pool = new DuckdbHelperPool({ size: 1, cpuSeconds: 2 });
  t.after(async () => {
    await pool.close();
    await fs.rm(dir, { recursive: true, force: true });
  });
  const file = path.join(dir, 'rows.jsonl');
  await fs.writeFile(file, '{"a":1}\n');
  await pool.warm();
  const [pid] = pool.nodePids();
  assert.deepEqual((await limits(pid!)).cpu, [2, 12], 'RLIMIT_CPU: 2 s soft (SIGXCPU), hard 10 s later (SIGKILL)');
  // Far more work than 2 CPU seconds, and a wall-clock budget far longer: only the kernel stops it.
  const err = await lockedQuery({ files: [file], viewName: 'ref', reader: 'read_ndjson', sql: 'SELECT sum(hash(range)) FROM range(100000000000)', pool, timeoutMs: 60_000, threads: 2 }).then(
    () => undefined,
    (e: unknown) => e as { code?: string; message?: string },
  );
  assert.equal(err?.code, 'timeout', `a CPU-bound query ends as a timeout, got ${err?.code}: ${err?.message}`);
  // Stopped by the kernel's CPU cap (SIGXCPU), not by the 60 s wall-clock budget.
  assert.match(err?.message ?? '', /CPU time/);
  const r = await lockedQuery({ files: [file], viewName: 'ref', reader: 'read_ndjson', sql: 'SELECT sum(a) FROM ref', pool });
  assert.deepEqual(r.rows, [[1]], 'a fresh helper serves the next query');
  assert.notDeepEqual(pool.nodePids(), [pid]);
});

// req: limits:helper-os-caps
test('[INV-9] a helper whose CPU time could run out during a query is retired before it, so the cap never stops an ordinary query', async (t) => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-cpu-'));
  const CAP = 40;
  const pool = new DuckdbHelperPool({ size: 1, cpuSeconds: CAP });
  t.after(async () => {
    await pool.close();
    await fs.rm(dir, { recursive: true, force: true });
  });
  const file = path.join(dir, 'rows.jsonl');
  await fs.writeFile(file, '{"a":1}\n');
  const q = (sql: string, timeoutMs: number, threads: number) => lockedQuery({ files: [file], viewName: 'ref', reader: 'read_ndjson', sql, pool, timeoutMs, threads });
  await pool.warm();
  const [pid] = pool.nodePids();
  // CPU seconds the helper has used, as the pool reads them (utime + stime of every thread).
  const used = async () => {
    const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  };
  // Burn past the 5 s under which a helper counts as new, in small steps (≈ 3.5 CPU seconds a
  // query on an idle host; a loaded one made a single 7-s step run into the cap itself, seen in
  // CI): what it costs varies with the host and its load, so the next steps are sized from what it used.
  for (let i = 0; i < 8 && (await used()) < 5; i++) await q('SELECT sum(hash(range)) FROM range(600000000)', 60_000, 2);
  const burnt = await used();
  assert.ok(burnt >= 5 && burnt <= CAP - 6, `the helper used ${burnt} CPU seconds`);
  // Worst case (1 s + 2 s grace) × 2 threads = 6 s fits in what is left: the same helper.
  assert.deepEqual((await q('SELECT sum(a) FROM ref', 1000, 1)).rows, [[1]]);
  assert.deepEqual(pool.nodePids(), [pid]);
  // A worst case (timeout + 2 s grace) × 3 threads past what is left does not: a fresh helper answers it.
  const timeoutMs = (Math.ceil((CAP - burnt) / 3) + 1) * 1000;
  assert.deepEqual((await q('SELECT sum(a) FROM ref', timeoutMs, 2)).rows, [[1]]);
  assert.equal(pool.nodePids().length, 1);
  assert.notDeepEqual(pool.nodePids(), [pid]);
});
