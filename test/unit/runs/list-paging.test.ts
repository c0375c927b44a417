import { test } from 'node:test';
import assert from 'node:assert/strict';
import { filterRuns, type RunRecord } from '../../../src/protocol/index.js';

const run = (id: string, createdAt: string, label: string | null = null) => ({ id, createdAt, label, status: 'ended', kind: 'command', rootRunId: id, parentRunId: null }) as unknown as RunRecord;

test('list paging: before a run pages back by creation time then id (two runs of one millisecond keep one order), with limit the page before; an unknown cursor pages to nothing', () => {
  const runs = [
    run('r-0000000000000005', '2026-12-04T10:00:03.000Z'),
    run('r-0000000000000002', '2026-12-04T10:00:01.000Z', 'x'),
    run('r-0000000000000004', '2026-12-04T10:00:02.000Z'),
    run('r-0000000000000003', '2026-12-04T10:00:02.000Z', 'x'),
    run('r-0000000000000001', '2026-12-04T10:00:00.000Z'),
  ];
  const ids = (f: Parameters<typeof filterRuns>[1]) => filterRuns(runs, f).map((r) => r.id.slice(-1));
  assert.deepEqual(ids({}), ['1', '2', '3', '4', '5'], 'oldest first, a tie by id');
  assert.deepEqual(ids({ limit: 2 }), ['4', '5'], 'the newest page');
  assert.deepEqual(ids({ limit: 2, before: 'r-0000000000000004' }), ['2', '3'], 'the page before it: its tie partner included');
  assert.deepEqual(ids({ limit: 2, before: 'r-0000000000000002' }), ['1']);
  assert.deepEqual(ids({ limit: 2, before: 'r-0000000000000001' }), []);
  assert.deepEqual(ids({ label: 'x', before: 'r-0000000000000004' }), ['2', '3'], 'a cursor filtered out of the page still places it');
  assert.deepEqual(ids({ before: 'r-000000000000000f' }), []);
  // Walking back page by page visits every run once.
  const seen: string[] = [];
  let page = filterRuns(runs, { limit: 2 });
  while (page.length > 0) {
    seen.unshift(...page.map((r) => r.id.slice(-1)));
    page = filterRuns(runs, { limit: 2, before: page[0]!.id });
  }
  assert.deepEqual(seen, ['1', '2', '3', '4', '5']);
});
