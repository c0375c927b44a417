/**
 * Graphs through the faces on a real daemon: `brig graph define|run|status|wait|cancel` over
 * the HTTP routes (the daemon's GraphService spawns every node), the end envelope ≤ 4 KiB with
 * a line per node, the manifest a ResultRef to drill into with `brig ref jq`, a cancel that
 * kills the running node; and `brig graph run` without a daemon (the graph in that process).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome } from '../daemon/serve-proc.js';
import { until } from '../runs/fixture.js';
import type { GraphRecord } from '../../../src/protocol/index.js';

const EXAMPLE = path.resolve(import.meta.dirname, '../../../examples/graphs/fanout.yaml');

test('brig graph define/run/status/wait through a daemon: the example graph ends with its envelope and a manifest ref', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve();
  const d = await h.run(['graph', 'define', EXAMPLE]);
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, /^order: left → right → join$/m);

  const bad = path.join(h.home, 'bad.yaml');
  fs.writeFileSync(bad, 'graph: brig/v1\nnodes:\n  - id: a\n    kind: command\n    depends_on: [b]\n    spawn: { task: t, argv: ["true"] }\n');
  const refused = await h.run(['graph', 'define', bad]);
  assert.equal(refused.code, 2, 'invalid input');
  assert.match(refused.stderr, /bad\.yaml:3: node a: depends_on names unknown node b/);

  const r = await h.run(['graph', 'run', EXAMPLE, '--wait', '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const rec = (JSON.parse(r.stdout) as { graph: GraphRecord }).graph;
  assert.equal(rec.state, 'completed');
  assert.ok(rec.envelope && Buffer.byteLength(rec.envelope) <= 4096);
  assert.match(rec.envelope, /^\[Graph Result: fanout-join\] completed · 3 nodes \(3 succeeded\)/);
  for (const n of ['left', 'right', 'join']) assert.match(rec.envelope, new RegExp(`^${n}\\s+command\\s+succeeded\\s+a1\\s`, 'm'));
  const join = rec.nodes.find((n) => n.id === 'join')!.attempts[0]!.runId!;
  const total = fs.readFileSync(path.join(h.home, 'results', join, join, 'out', 'total.txt'), 'utf8');
  assert.equal(total.trim(), '5', 'the join read both inputs');

  // The manifest: a ref, one row per node attempt, drilled into like any ref.
  assert.match(rec.manifestRef ?? '', /^ref_/);
  const jq = await h.run(['ref', 'jq', rec.manifestRef!, '.node + " " + .state + " " + .run_id', '--json']);
  assert.equal(jq.code, 0, jq.stderr);
  const rows = jq.stdout;
  for (const n of rec.nodes) assert.ok(rows.includes(`${n.id} succeeded ${n.attempts[0]!.runId}`), rows);

  const st = await h.run(['graph', 'status', rec.id]);
  assert.equal(st.code, 0, st.stderr);
  assert.equal(st.stdout.trim(), rec.envelope.trim(), 'status of an ended graph is its envelope');
  const all = await h.run(['graph', 'status', '--json']);
  assert.deepEqual((JSON.parse(all.stdout) as { graphs: GraphRecord[] }).graphs.map((g) => g.id), [rec.id]);
  const unknown = await h.run(['graph', 'status', 'g-0000000000']);
  assert.equal(unknown.code, 4);
  assert.match(unknown.stderr, /graph_not_found|no graph g-0000000000/);

  // A cancel kills the running node (by operator) and ends the graph cancelled.
  const slow = path.join(h.home, 'slow.json');
  fs.writeFileSync(slow, JSON.stringify({ graph: 'brig/v1', nodes: [{ id: 'sleepy', kind: 'command', spawn: { task: 'sleep', argv: ['sleep', '120'] } }, { id: 'after', kind: 'command', depends_on: ['sleepy'], spawn: { task: 'never', argv: ['true'] } }] }));
  const started = await h.run(['graph', 'run', slow, '--json']);
  assert.equal(started.code, 0, started.stderr);
  const gid = (JSON.parse(started.stdout) as { graph: { graphId: string } }).graph.graphId;
  let runId = '';
  await until(async () => {
    const s = JSON.parse((await h.run(['graph', 'status', gid, '--json'])).stdout) as { graph: GraphRecord };
    runId = s.graph.nodes[0]!.attempts[0]?.runId ?? '';
    if (!runId) return false;
    const list = JSON.parse((await h.run(['list', '--json'])).stdout) as { runs: { id: string; status: string }[] };
    return list.runs.some((x) => x.id === runId && x.status === 'running');
  }, 'the sleepy node runs');
  const noConfirm = await h.run(['graph', 'cancel', gid]);
  assert.equal(noConfirm.code, 2);
  const c = await h.run(['graph', 'cancel', gid, '--confirm']);
  assert.equal(c.code, 0, c.stderr);
  const w = await h.run(['graph', 'wait', gid, '--json']);
  assert.equal(w.code, 1, 'not completed');
  const ended = (JSON.parse(w.stdout) as { graph: GraphRecord }).graph;
  assert.equal(ended.state, 'cancelled');
  assert.deepEqual(ended.nodes.map((n) => [n.id, n.state, n.skipReason]), [['sleepy', 'cancelled', null], ['after', 'skipped', 'cancelled']]);
  const killed = JSON.parse((await h.run(['list', '--json'])).stdout) as { runs: { id: string; endReason: string; killedBy: string }[] };
  const k = killed.runs.find((x) => x.id === runId)!;
  assert.deepEqual([k.endReason, k.killedBy], ['killed', 'operator']);
  await serve.signal('SIGTERM');
});

test('brig graph run without a daemon: the graph runs in that process to its end; status reads the record from disk', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const r = await h.run(['graph', 'run', EXAMPLE]);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.match(r.stderr, /no daemon: the graph runs in this process/);
  const gid = /^(g-[a-z0-9]+)  order: left → right → join/m.exec(r.stdout)?.[1];
  assert.ok(gid, r.stdout);
  assert.match(r.stdout, /\[Graph Result: fanout-join\] completed/);
  const st = await h.run(['graph', 'status', gid, '--json']);
  assert.equal(st.code, 0, st.stderr);
  assert.equal((JSON.parse(st.stdout) as { graph: GraphRecord }).graph.state, 'completed');
  // explain reads the record and the kept spec from disk; the leases are the daemon's to read.
  const ex = await h.run(['graph', 'explain', gid]);
  assert.equal(ex.code, 0, ex.stderr);
  assert.match(ex.stdout, /^join {2}command {2}succeeded\n {2}depends on left, right · when all_succeeded\n {2}waited \S+ for left, right \(the last to end: (left|right)\)$/m);
  assert.equal(ex.stdout.match(/^ {5}lease: not readable here$/gm)?.length, 3, ex.stdout);
  const cancel = await h.run(['graph', 'cancel', gid, '--confirm']);
  assert.notEqual(cancel.code, 0, 'nothing to cancel from another process');
});

test('a daemon SIGKILLed while a graph runs: the next daemon ends it failed (supervisor_restart) once and kills its node run; nothing of it runs on', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const first = await h.serve();
  const slow = path.join(h.home, 'slow.json');
  fs.writeFileSync(slow, JSON.stringify({ graph: 'brig/v1', nodes: [{ id: 'sleepy', kind: 'command', spawn: { task: 'sleep', argv: ['sleep', '120'] } }, { id: 'after', kind: 'command', depends_on: ['sleepy'], spawn: { task: 'never', argv: ['true'] } }] }));
  const started = await h.run(['graph', 'run', slow, '--json']);
  assert.equal(started.code, 0, started.stderr);
  const gid = (JSON.parse(started.stdout) as { graph: { graphId: string } }).graph.graphId;
  let runId = '';
  await until(async () => {
    const s = JSON.parse((await h.run(['graph', 'status', gid, '--json'])).stdout) as { graph: GraphRecord };
    runId = s.graph.nodes[0]!.attempts[0]?.runId ?? '';
    if (!runId) return false;
    // Its container started (a run still starting has none: the restart would ghost-sweep it instead).
    const list = JSON.parse((await h.run(['list', '--json'])).stdout) as { runs: { id: string; status: string }[] };
    return list.runs.some((x) => x.id === runId && x.status === 'running');
  }, 'the sleepy node runs');
  await first.signal('SIGKILL');
  const second = await h.serve();
  const st = await h.run(['graph', 'status', gid, '--json']);
  assert.equal(st.code, 0, st.stderr);
  const rec = (JSON.parse(st.stdout) as { graph: GraphRecord }).graph;
  assert.deepEqual([rec.state, rec.endReason], ['failed', 'supervisor_restart']);
  assert.deepEqual(rec.nodes.map((n) => [n.id, n.state, n.skipReason]), [['sleepy', 'failed', null], ['after', 'skipped', 'supervisor_restart']]);
  assert.match(rec.envelope ?? '', /\[Graph Result: g-[a-z0-9]+\] failed \(supervisor_restart\)/);
  const w = await h.run(['wait', runId, '--json']);
  const run = JSON.parse(w.stdout) as { runs?: { endReason: string; killedBy: string }[]; endReason?: string; killedBy?: string };
  const r = run.runs?.[0] ?? run;
  assert.deepEqual([r.endReason, r.killedBy], ['killed', 'system'], w.stdout);
  // A third start finds nothing more to end: the end came once.
  await second.signal('SIGTERM');
  await (await h.serve()).signal('SIGTERM');
  const again = JSON.parse((await h.run(['graph', 'status', gid, '--json'])).stdout) as { graph: GraphRecord };
  assert.equal(again.graph.endedAt, rec.endedAt);
});

test('a gate through the daemon: only an operator decides it (brig graph approve, ledgered with the note\'s hash, never the note); another times out and is rejected', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve();
  const gated = (timeoutMs: number) => {
    const f = path.join(h.home, `gated-${timeoutMs}.json`);
    fs.writeFileSync(f, JSON.stringify({ graph: 'brig/v1', nodes: [
      { id: 'plan', kind: 'command', spawn: { task: 'plan', argv: ['true'] } },
      { id: 'go', kind: 'gate', depends_on: ['plan'], gate: { prompt: 'Ship it?', timeout_ms: timeoutMs } },
      { id: 'ship', kind: 'command', depends_on: ['go'], spawn: { task: 'ship', argv: ['true'] } },
    ] }));
    return f;
  };
  const a = await h.run(['graph', 'run', gated(120_000), '--json']);
  assert.equal(a.code, 0, a.stderr);
  const gid = (JSON.parse(a.stdout) as { graph: { graphId: string } }).graph.graphId;
  await until(async () => (JSON.parse((await h.run(['graph', 'status', gid, '--json'])).stdout) as { graph: GraphRecord }).graph.nodes[1]!.state === 'running', 'the gate waits');
  const note = 'looked at the plan: fine';
  const ap = await h.run(['graph', 'approve', gid, 'go', '--note', note]);
  assert.equal(ap.code, 0, ap.stderr);
  const again = await h.run(['graph', 'reject', gid, 'go']);
  assert.equal(again.code, 5, `a second decision is a conflict: ${again.stderr}`);
  const w = await h.run(['graph', 'wait', gid, '--json']);
  assert.equal(w.code, 0, w.stderr);
  const rec = (JSON.parse(w.stdout) as { graph: GraphRecord }).graph;
  assert.equal(rec.state, 'completed');
  assert.equal(rec.nodes[1]!.gate!.decision, 'approved');
  const ledger = fs.readdirSync(path.join(h.home, 'ledger')).map((f) => fs.readFileSync(path.join(h.home, 'ledger', f), 'utf8')).join('');
  const decided = ledger.split('\n').filter((l) => l.includes('"graph.gate_decided"'));
  assert.equal(decided.length, 1, ledger.slice(-2000));
  assert.match(decided[0]!, /"decision":"approved"/);
  assert.match(decided[0]!, /"noteHash":"[0-9a-f]{64}"/);
  assert.ok(!ledger.includes(note), 'the note itself is nowhere in the ledger');

  const b = await h.run(['graph', 'run', gated(1500), '--wait', '--json']);
  assert.equal(b.code, 1, b.stderr);
  const timed = (JSON.parse(b.stdout) as { graph: GraphRecord }).graph;
  assert.deepEqual(timed.nodes.map((n) => [n.id, n.state]), [['plan', 'succeeded'], ['go', 'failed'], ['ship', 'skipped']]);
  assert.deepEqual([timed.nodes[1]!.gate!.decision, timed.nodes[1]!.gate!.by], ['rejected', 'timeout']);
  await serve.signal('SIGTERM');
});
