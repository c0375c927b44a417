/**
 * The graph store's journal: a running graph's saves are lines after a snapshot; any reader
 * (a fresh store, as after a restart) gets exactly the last save; a torn last line is ignored,
 * a crash between a snapshot and the journal's drop skips the lines it holds, a restarted
 * writer numbers after what is on disk, a gap is `state_corrupt`, the end leaves one snapshot.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GRAPH_FILES, GraphStore, SNAPSHOT_EVERY } from '../../../src/graphs/index.js';
import type { GraphRecord, GraphSpec } from '../../../src/protocol/index.js';
import { tempDir } from '../../helpers/temp-dir.js';

const ID = 'g-journal0000test';
const SPEC = { graph: 'brig/v1', nodes: [] } as unknown as GraphSpec;

function record(): GraphRecord {
  return {
    v: 1,
    id: ID,
    label: null,
    specHash: 'h',
    state: 'running',
    endReason: null,
    createdAt: '2026-12-04T00:00:00.000Z',
    endedAt: null,
    callerRunId: null,
    parallel: 2,
    order: ['a', 'b'],
    nodes: ['a', 'b'].map((id) => ({ id, kind: 'command' as const, state: 'pending' as const, skipReason: null, attempts: [], committedRunId: null })),
    manifestRef: null,
    envelope: null,
  };
}

function home(): { dir: string; file: (f: string) => string } {
  const dir = tempDir('brig-gstore-');
  return { dir, file: (f) => path.join(dir, ID, f) };
}

const lines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
const seqOf = (file: string) => (JSON.parse(fs.readFileSync(file, 'utf8')) as { seq: number }).seq;

test('a running graph saves as journal lines after its snapshot; a fresh reader gets exactly the last save', async () => {
  const h = home();
  const store = new GraphStore(h.dir);
  const rec = record();
  await store.create(rec, SPEC);
  assert.equal(seqOf(h.file(GRAPH_FILES.record)), 1);
  rec.nodes[0]!.state = 'running';
  rec.nodes[0]!.attempts.push({ n: 1, key: `graph:${ID}:a:1`, state: 'starting', runId: null, result: null, endReason: null, errorCode: null, startedAt: 'x', endedAt: null, tokens: null, costUsd: null });
  await store.save(rec);
  rec.budgetStop = { node: 'b', why: 'test' };
  await store.save(rec);
  await store.save(rec); // nothing changed: nothing written
  const j = lines(h.file(GRAPH_FILES.journal)).map((l) => JSON.parse(l) as { seq: number; nodes?: { id: string }[]; top?: Record<string, unknown> });
  assert.deepEqual(j.map((l) => [l.seq, (l.nodes ?? []).map((n) => n.id), Object.keys(l.top ?? {})]), [[2, ['a'], []], [3, [], ['budgetStop']]], 'only what changed, numbered after the snapshot');
  assert.equal(seqOf(h.file(GRAPH_FILES.record)), 1, 'the snapshot is not rewritten');
  assert.deepEqual(await new GraphStore(h.dir).load(ID), rec);
});

test(`every ${SNAPSHOT_EVERY} lines and at the end a snapshot replaces the journal; the end leaves the record alone`, async () => {
  const h = home();
  const store = new GraphStore(h.dir);
  const rec = record();
  await store.create(rec, SPEC);
  for (let i = 0; i < SNAPSHOT_EVERY + 3; i++) {
    rec.nodes[1]!.skipReason = i % 2 === 0 ? 'cancelled' : null;
    await store.save(rec);
  }
  assert.equal(lines(h.file(GRAPH_FILES.journal)).length, 2, 'the 65th save was a snapshot, two lines since');
  assert.equal(seqOf(h.file(GRAPH_FILES.record)), SNAPSHOT_EVERY + 2);
  assert.deepEqual(await new GraphStore(h.dir).load(ID), rec);
  Object.assign(rec, { state: 'completed', endReason: 'completed', endedAt: 'y' });
  await store.save(rec);
  assert.equal(fs.existsSync(h.file(GRAPH_FILES.journal)), false);
  assert.deepEqual(await new GraphStore(h.dir).load(ID), rec);
});

test('a torn last line is ignored; a crash between a snapshot and the journal drop skips the lines the snapshot holds', async () => {
  const h = home();
  const store = new GraphStore(h.dir);
  const rec = record();
  await store.create(rec, SPEC);
  rec.nodes[0]!.state = 'skipped';
  await store.save(rec);
  const before = structuredClone(rec);
  fs.appendFileSync(h.file(GRAPH_FILES.journal), '{"seq":3,"nodes":[{"id":"b","sta');
  assert.deepEqual(await new GraphStore(h.dir).load(ID), before, 'the torn line was never acknowledged');

  // The snapshot written (seq 2 holds the line), the journal not yet dropped.
  const journal = fs.readFileSync(h.file(GRAPH_FILES.journal), 'utf8');
  fs.writeFileSync(h.file(GRAPH_FILES.record), JSON.stringify({ ...before, seq: 2 }));
  fs.writeFileSync(h.file(GRAPH_FILES.journal), journal.split('\n')[0] + '\n');
  assert.deepEqual(await new GraphStore(h.dir).load(ID), before);
});

test('a restarted writer numbers after what is on disk; a gap in the journal is state_corrupt', async () => {
  const h = home();
  const first = new GraphStore(h.dir);
  const rec = record();
  await first.create(rec, SPEC);
  rec.nodes[0]!.state = 'running';
  await first.save(rec);
  await first.save({ ...rec, parallel: 1 });
  // A new supervisor over the same home: its first save is a snapshot after seq 3, then lines.
  const again = new GraphStore(h.dir);
  const loaded = (await again.load(ID))!;
  assert.equal(loaded.parallel, 1);
  loaded.nodes[1]!.state = 'running';
  await again.save(loaded);
  assert.equal(seqOf(h.file(GRAPH_FILES.record)), 4);
  assert.equal(fs.existsSync(h.file(GRAPH_FILES.journal)), false);
  loaded.nodes[1]!.state = 'succeeded';
  await again.save(loaded);
  assert.deepEqual(lines(h.file(GRAPH_FILES.journal)).map((l) => (JSON.parse(l) as { seq: number }).seq), [5]);
  assert.deepEqual(await new GraphStore(h.dir).load(ID), loaded);

  fs.appendFileSync(h.file(GRAPH_FILES.journal), `${JSON.stringify({ seq: 7, top: { parallel: 9 } })}\n`);
  await assert.rejects(new GraphStore(h.dir).load(ID), (e: { code?: string; message?: string }) => e.code === 'state_corrupt' && /journal\.jsonl of graph .*line 7 follows 5/.test(e.message ?? ''));
});
