/**
 * Crash tests (issue 25 item 6): a real `brig serve` runs a four-node graph of command
 * children on the real engine and is SIGKILLed right after the k-th node's end is on the
 * graph record (k = 2 and 3 resume, k = 1 fails); the next `brig serve` takes the graph up by its `on_restart`. With `resume`:
 * no completed node runs again (one attempt, one run record, one run id in the ledger each),
 * the node running at the crash is reattached (its run id kept), the rest run, the graph
 * ends completed exactly once with the right envelope and manifest, and its last node read
 * the reattached node's committed out/. With `fail`: the graph ends `failed`
 * (`supervisor_restart`) once, the completed node stays completed, nothing after it ever
 * spawns. dist/ must be built.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome, recordsOnDisk, type DaemonHome } from '../daemon/serve-proc.js';
import { until } from '../runs/fixture.js';
import { GraphStore } from '../../../src/graphs/index.js';
import type { GraphRecord } from '../../../src/protocol/index.js';

/** a → b → c → d; c runs for a while (the crash lands while it runs), d reads c's out/. */
function chain(h: DaemonHome, onRestart: 'resume' | 'fail'): string {
  const file = path.join(h.home, `chain-${onRestart}.json`);
  const cmd = (id: string, sh: string, extra: Record<string, unknown> = {}) => ({ id, kind: 'command', spawn: { task: `node ${id}`, argv: ['sh', '-c', sh] }, ...extra });
  fs.writeFileSync(file, JSON.stringify({
    graph: 'brig/v1',
    label: `crash-${onRestart}`,
    on_restart: onRestart,
    nodes: [
      cmd('a', 'echo a > /workspace/out/a.txt'),
      cmd('b', 'echo b > /workspace/out/b.txt', { depends_on: ['a'] }),
      cmd('c', 'sleep 6; echo c > /workspace/out/c.txt', { depends_on: ['b'] }),
      cmd('d', 'cat /artifacts/up/c.txt > /workspace/out/d.txt; echo d >> /workspace/out/d.txt', { depends_on: ['c'], inputs: [{ from: 'c', as: 'up' }] }),
    ],
  }));
  return file;
}

/** The graph record as the daemon last wrote it (its snapshot and journal read straight from disk, as a restart reads them). */
async function onDisk(h: DaemonHome, gid: string): Promise<GraphRecord | null> {
  return (await new GraphStore(h.paths.graphs).load(gid).catch(() => undefined)) ?? null;
}

function ledgerLines(h: DaemonHome): Record<string, unknown>[] {
  const dir = path.join(h.home, 'ledger');
  return fs.readdirSync(dir).flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n')).flatMap((l) => {
    try {
      const v = JSON.parse(l) as unknown;
      return v && typeof v === 'object' ? [v as Record<string, unknown>] : [];
    } catch {
      return []; // not an event line (the anchor, a blank line)
    }
  });
}

/** Per node: the run ids the ledger's graph.node events name (each attempt's run, once spawned). */
function ledgerRuns(h: DaemonHome, gid: string): Record<string, string[]> {
  const out: Record<string, Set<string>> = {};
  for (const e of ledgerLines(h)) {
    if (e.type !== 'graph.node' || e.graphId !== gid || typeof e.runId !== 'string') continue;
    (out[e.node as string] ??= new Set()).add(e.runId);
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, [...v]]));
}

const graphEvents = (h: DaemonHome, gid: string, type: string) => ledgerLines(h).filter((e) => e.type === type && e.graphId === gid);

/** Starts the graph on the daemon and SIGKILLs it once the k-th node's end is on the record. */
async function crashAfter(h: DaemonHome, file: string, k: string): Promise<{ gid: string; before: GraphRecord }> {
  const first = await h.serve();
  const started = await h.run(['graph', 'run', file, '--json']);
  assert.equal(started.code, 0, started.stderr);
  const gid = (JSON.parse(started.stdout) as { graph: { graphId: string } }).graph.graphId;
  let before: GraphRecord | null = null;
  await until(async () => {
    before = await onDisk(h, gid);
    return before?.nodes.find((n) => n.id === k)?.state === 'succeeded';
  }, `node ${k} ended (serve stderr: ${first.stderr()})`);
  await first.signal('SIGKILL');
  return { gid, before: (await onDisk(h, gid))! };
}

test('on_restart resume: a daemon SIGKILLed after node 2 of 4 ended — the restart re-runs no completed node, reattaches the running one, and ends the graph once', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const { gid, before } = await crashAfter(h, chain(h, 'resume'), 'b');
  assert.equal(before.state, 'running', 'the kill landed while the graph ran');
  assert.deepEqual(before.nodes.slice(0, 2).map((n) => [n.id, n.state, n.attempts.length]), [['a', 'succeeded', 1], ['b', 'succeeded', 1]]);
  assert.equal(before.nodes[3]!.state, 'pending', 'd had not started');
  const cBefore = before.nodes[2]!.attempts[0]?.runId ?? null;
  t.diagnostic(`c at the crash: ${before.nodes[2]!.state}, attempt ${before.nodes[2]!.attempts[0]?.state ?? 'none'}, run ${cBefore ?? 'none'}`);

  const second = await h.serve();
  const w = await h.run(['graph', 'wait', gid, '--json']);
  assert.equal(w.code, 0, `${w.stderr}${w.stdout}\nserve stderr: ${second.stderr()}`);
  const rec = (JSON.parse(w.stdout) as { graph: GraphRecord }).graph;
  assert.deepEqual([rec.state, rec.endReason], ['completed', 'completed']);
  assert.deepEqual(rec.nodes.map((n) => [n.id, n.state, n.attempts.length]), [['a', 'succeeded', 1], ['b', 'succeeded', 1], ['c', 'succeeded', 1], ['d', 'succeeded', 1]]);
  // Completed nodes kept their one run; the running one was reattached (its run id kept, when it had one).
  assert.deepEqual(rec.nodes.slice(0, 2).map((n) => n.attempts[0]!.runId), before.nodes.slice(0, 2).map((n) => n.attempts[0]!.runId));
  if (cBefore) assert.equal(rec.nodes[2]!.attempts[0]!.runId, cBefore, 'c reattached, not spawned again');
  assert.equal(rec.nodes[2]!.attempts[0]!.endReason, 'completed');

  // One run per node on disk and in the ledger: nothing ran twice.
  const runs = recordsOnDisk(h.home).filter((r) => r.label?.startsWith(`${gid}/`));
  assert.deepEqual(['a', 'b', 'c', 'd'].map((n) => runs.filter((r) => r.label === `${gid}/${n}`).length), [1, 1, 1, 1], JSON.stringify(runs.map((r) => [r.label, r.id, r.status])));
  const byNode = ledgerRuns(h, gid);
  assert.deepEqual(['a', 'b', 'c', 'd'].map((n) => byNode[n]), rec.nodes.map((n) => [n.attempts[0]!.runId]));
  assert.equal(graphEvents(h, gid, 'graph.resumed').length, 1);
  assert.equal(graphEvents(h, gid, 'graph.ended').length, 1, 'the graph ended once');
  assert.equal(graphEvents(h, gid, 'graph.resumed')[0]!.lost, 0);

  // The envelope and the manifest: one line / one row per node, attempt 1 each.
  assert.ok(rec.envelope && Buffer.byteLength(rec.envelope) <= 4096);
  assert.match(rec.envelope, /^\[Graph Result: crash-resume\] completed · 4 nodes \(4 succeeded\)/);
  for (const n of ['a', 'b', 'c', 'd']) assert.match(rec.envelope, new RegExp(`^${n}\\s+command\\s+succeeded\\s+a1\\s`, 'm'));
  const jq = await h.run(['ref', 'jq', rec.manifestRef!, '"row " + .node + " " + .state + " " + .run_id']);
  assert.equal(jq.code, 0, jq.stderr);
  const rows = jq.stdout.split('\n').map((l) => /row (\S+) (\S+) (r-[a-z0-9]+)/.exec(l)).filter((m) => m !== null).map((m) => m.slice(1));
  assert.deepEqual(rows, rec.nodes.map((n) => [n.id, 'succeeded', n.attempts[0]!.runId]), `one manifest row per node: ${jq.stdout}`);

  // d saw the reattached c's committed out/.
  const d = rec.nodes[3]!.attempts[0]!.runId!;
  assert.equal(fs.readFileSync(path.join(h.home, 'results', d, d, 'out', 'd.txt'), 'utf8'), 'c\nd\n');

  // A third start takes nothing up: the end came once.
  await second.signal('SIGTERM');
  await (await h.serve()).signal('SIGTERM');
  assert.equal((await onDisk(h, gid))!.endedAt, rec.endedAt);
  assert.equal(graphEvents(h, gid, 'graph.ended').length, 1);
});

test('on_restart resume: a daemon SIGKILLed after node 3 of 4 ended — the last node, in flight or not yet asked, runs once; the graph ends once', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const { gid, before } = await crashAfter(h, chain(h, 'resume'), 'c');
  const dBefore = before.nodes[3]!.attempts[0]?.runId ?? null;
  t.diagnostic(`d at the crash: ${before.nodes[3]!.state}, attempt ${before.nodes[3]!.attempts[0]?.state ?? 'none'}, run ${dBefore ?? 'none'}`);
  const second = await h.serve();
  const w = await h.run(['graph', 'wait', gid, '--json']);
  assert.equal(w.code, 0, `${w.stderr}${w.stdout}\nserve stderr: ${second.stderr()}`);
  const rec = (JSON.parse(w.stdout) as { graph: GraphRecord }).graph;
  assert.deepEqual(rec.nodes.map((n) => [n.id, n.state, n.attempts.length]), [['a', 'succeeded', 1], ['b', 'succeeded', 1], ['c', 'succeeded', 1], ['d', 'succeeded', 1]]);
  assert.deepEqual(rec.nodes.slice(0, 3).map((n) => n.attempts[0]!.runId), before.nodes.slice(0, 3).map((n) => n.attempts[0]!.runId), 'a, b, c kept their one run');
  if (dBefore) assert.equal(rec.nodes[3]!.attempts[0]!.runId, dBefore, 'd reattached (or collected), not spawned again');
  const runs = recordsOnDisk(h.home).filter((r) => r.label?.startsWith(`${gid}/`));
  assert.deepEqual(['a', 'b', 'c', 'd'].map((n) => runs.filter((r) => r.label === `${gid}/${n}`).length), [1, 1, 1, 1]);
  assert.deepEqual(['a', 'b', 'c', 'd'].map((n) => ledgerRuns(h, gid)[n]), rec.nodes.map((n) => [n.attempts[0]!.runId]));
  assert.equal(graphEvents(h, gid, 'graph.ended').length, 1);
  const d = rec.nodes[3]!.attempts[0]!.runId!;
  assert.equal(fs.readFileSync(path.join(h.home, 'results', d, d, 'out', 'd.txt'), 'utf8'), 'c\nd\n');
  await second.signal('SIGTERM');
});

test('on_restart fail: a daemon SIGKILLed after node 1 of 4 ended — the restart ends the graph failed (supervisor_restart) once; the completed node stays, nothing after it spawns', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const { gid, before } = await crashAfter(h, chain(h, 'fail'), 'a');
  assert.equal(before.state, 'running');
  const second = await h.serve();
  const st = await h.run(['graph', 'status', gid, '--json']);
  assert.equal(st.code, 0, st.stderr);
  const rec = (JSON.parse(st.stdout) as { graph: GraphRecord }).graph;
  assert.deepEqual([rec.state, rec.endReason], ['failed', 'supervisor_restart']);
  assert.deepEqual(rec.nodes[0]!.attempts.map((a) => [a.result, a.runId]), [['succeeded', before.nodes[0]!.attempts[0]!.runId]], 'a is as it ended');
  // b was in flight (starting or running) or not yet started: either way it ends now, and c, d never start.
  const b = rec.nodes[1]!;
  if (b.attempts.length > 0) assert.deepEqual([b.state, b.attempts.map((a) => a.endReason)], ['failed', ['supervisor_restart']]);
  else assert.deepEqual([b.state, b.skipReason], ['skipped', 'supervisor_restart']);
  assert.deepEqual(rec.nodes.slice(2).map((n) => [n.id, n.state, n.skipReason, n.attempts.length]), [['c', 'skipped', 'supervisor_restart', 0], ['d', 'skipped', 'supervisor_restart', 0]]);
  assert.match(rec.envelope ?? '', /\[Graph Result: crash-fail\] failed \(supervisor_restart\)/);
  await new Promise((r) => setTimeout(r, 1000));
  const runs = recordsOnDisk(h.home).filter((r) => r.label?.startsWith(`${gid}/`));
  assert.equal(runs.filter((r) => r.label === `${gid}/a`).length, 1);
  assert.ok(runs.filter((r) => r.label === `${gid}/b`).length <= 1);
  assert.deepEqual(runs.filter((r) => r.label === `${gid}/c` || r.label === `${gid}/d`), [], 'nothing after the crash spawned');
  assert.equal(graphEvents(h, gid, 'graph.ended').length, 1);
  assert.equal(graphEvents(h, gid, 'graph.resumed').length, 0);
  await second.signal('SIGTERM');
  await (await h.serve()).signal('SIGTERM');
  assert.equal((await onDisk(h, gid))!.endedAt, rec.endedAt);
  assert.equal(graphEvents(h, gid, 'graph.ended').length, 1, 'a third start ends nothing again');
});
