import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fleetReport } from '../../../src/daemon/fleet.js';
import type { RunRecord } from '../../../src/protocol/index.js';

const run = (id: string, createdAt: string, startedAfterMs: number | null, endReason: RunRecord['endReason'], tokens = 0) =>
  ({ id, rootRunId: id, status: endReason ? 'ended' : 'running', createdAt, startedAt: startedAfterMs === null ? null : new Date(Date.parse(createdAt) + startedAfterMs).toISOString(), endReason, killedBy: null, tokens, costUsd: 0 }) as unknown as RunRecord;

test('fleet over time: whole-hour buckets oldest first (6 h ones past 48 h), runs by end reason and tokens in the bucket they were created in; spawn latency p50/p95 over the runs that started', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-fleet-series-'));
  try {
    const runs = [
      run('r-a', '2026-12-03T08:10:00Z', 100, 'completed', 500),
      run('r-b', '2026-12-03T08:50:00Z', 300, 'killed'),
      run('r-c', '2026-12-03T10:05:00Z', 200, 'completed', 70),
      run('r-d', '2026-12-03T10:30:00Z', null, null), // queued: no start, no latency
      run('r-e', '2026-12-03T10:40:00Z', 5000, null),
    ];
    const f = await fleetReport({ list: async () => runs, refs: { peek: async () => ({ ok: false }) as never }, ledgerDir: dir, now: () => new Date('2026-12-03T10:45:00Z') }, { sinceMinutes: 180 });
    assert.equal(f.bucketMinutes, 60);
    assert.deepEqual(
      f.buckets.map((b) => [b.start, b.runs, b.byEndReason, b.tokens]),
      [
        ['2026-12-03T07:00:00.000Z', 0, {}, 0],
        ['2026-12-03T08:00:00.000Z', 2, { completed: 1, killed: 1 }, 500],
        ['2026-12-03T09:00:00.000Z', 0, {}, 0],
        ['2026-12-03T10:00:00.000Z', 3, { completed: 1 }, 70],
      ],
    );
    assert.deepEqual(f.spawnLatencyMs, { n: 4, p50: 200, p95: 5000 });
    const week = await fleetReport({ list: async () => [], refs: { peek: async () => ({ ok: false }) as never }, ledgerDir: dir, now: () => new Date('2026-12-03T10:45:00Z') }, { sinceMinutes: 7 * 24 * 60 });
    assert.equal(week.bucketMinutes, 360);
    assert.equal(week.buckets.length, 29, 'a week in 6-hour buckets, the first holding the window\'s start');
    assert.deepEqual(week.spawnLatencyMs, { n: 0, p50: null, p95: null });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
