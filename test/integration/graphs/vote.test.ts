/**
 * A vote on real jails: each voter an ordinary command run writing a structured ballot to its
 * out/, the tally reading the committed ballots (never a file a child can still write) — one
 * malformed ballot counted invalid and the majority deciding, and a tie that fails its tally
 * while the graph (on_failure continue) goes on.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, supervisorAt } from '../runs/fixture.js';

// A command voter finds its name in its own packet's task (read-only in its jail).
const VOTER = [
  'sh',
  '-c',
  'p=$(cat /workspace/.brig/packet.json); case "$p" in *"vote as bull"*) v=\'{"verdict":"BUY"}\';; *"vote as bear"*) v=\'{"verdict":"BUY"}\';; *"vote as dove"*) v=\'{"verdict":"SELL"}\';; *) v="BUY!!";; esac; echo "$v" > /workspace/out/ballot.json',
];

const SPEC = JSON.stringify({
  graph: 'brig/v1',
  label: 'votes',
  on_failure: { policy: 'continue' },
  concurrency: { max_parallel: 3 },
  sinks: ['act'],
  nodes: [
    { id: 'panel', kind: 'vote', spawn: { task: 'vote as {{voter}}', argv: VOTER }, vote: { voters: ['bull', 'bear', 'quant'], voter_kind: 'command', field: '$.verdict', choices: ['BUY', 'HOLD', 'SELL'], rule: 'majority', ballot: 'out/ballot.json' } },
    { id: 'split', kind: 'vote', spawn: { task: 'vote as {{voter}}', argv: VOTER }, vote: { voters: ['bull', 'dove'], voter_kind: 'command', field: '$.verdict', choices: ['BUY', 'SELL'], rule: 'plurality', tie: 'fail', ballot: 'out/ballot.json' } },
    { id: 'act', kind: 'command', depends_on: ['panel'], spawn: { task: 'act on the verdict', argv: ['true'] } },
  ],
});

test('a vote on real jails: a malformed ballot is counted invalid and the majority decides; a tie fails its tally; the graph goes on', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const s = await c.graphs.run(SPEC);
    assert.ok(s.ok, s.ok ? '' : s.error.message);
    assert.deepEqual(s.value.order, ['panel.bull', 'panel.bear', 'panel.quant', 'panel', 'split.bull', 'split.dove', 'split', 'act']);
    const w = await c.graphs.wait(s.value.graphId, { timeoutMs: 240_000 });
    assert.ok(w.ok);
    const rec = w.value;
    const node = (id: string) => rec.nodes.find((n) => n.id === id)!;
    assert.equal(rec.state, 'completed', rec.envelope ?? '');
    const panel = node('panel').tally!;
    assert.deepEqual([panel.outcome, panel.winner, panel.valid, panel.invalid, panel.absent], ['decided', 'BUY', 2, 1, 0]);
    assert.deepEqual(panel.ballots.map((b) => [b.voter, b.choice, b.why]), [['panel.bull', 'BUY', 'ok'], ['panel.bear', 'BUY', 'ok'], ['panel.quant', null, 'not_json']]);
    const split = node('split');
    assert.deepEqual([split.state, split.tally!.outcome, split.tally!.counts], ['failed', 'tie', { BUY: 1, SELL: 1 }]);
    assert.equal(node('act').state, 'succeeded');
    assert.match(rec.envelope!, /^panel\s+tally\s+succeeded .*BUY 2 · HOLD 0 · SELL 0 · invalid 1 · absent 0 → BUY$/m);
    assert.match(rec.envelope!, /^split\s+tally\s+failed .*BUY 1 · SELL 1 · invalid 0 · absent 0 → tie$/m);
    // Every voter an ordinary run, ended once.
    for (const n of rec.nodes.filter((x) => x.kind === 'command')) assert.equal((await c.supervisor.get(n.attempts[0]!.runId!))?.endReason, 'completed');
    assert.deepEqual(await leftovers(home, { released: true }), []);
  } finally {
    await c.close();
  }
});

test('the example examples/graphs/vote-gate.yaml runs as documented: fan-out, a vote over ballots, a gate an operator approves, the release note', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const file = path.resolve(import.meta.dirname, '../../../examples/graphs/vote-gate.yaml');
    const s = await c.graphs.run(fs.readFileSync(file, 'utf8'), { source: 'vote-gate.yaml', by: 'alice' });
    assert.ok(s.ok, s.ok ? '' : s.error.message);
    for (let i = 0; ; i++) {
      const st = await c.graphs.status(s.value.graphId);
      assert.ok(st.ok);
      if (st.value.nodes.find((n) => n.id === 'go')!.state === 'running') break;
      assert.ok(st.value.state === 'running' && i < 1200, `the gate never waited: ${JSON.stringify(st.value.nodes.map((n) => [n.id, n.state]))}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const d = await c.graphs.decide(s.value.graphId, 'go', { decision: 'approve', by: 'bob', note: 'count looks right' });
    assert.ok(d.ok, d.ok ? '' : d.error.message);
    const w = await c.graphs.wait(s.value.graphId, { timeoutMs: 180_000 });
    assert.ok(w.ok);
    const rec = w.value;
    assert.equal(rec.state, 'completed', rec.envelope ?? '');
    const panel = rec.nodes.find((n) => n.id === 'panel')!.tally!;
    assert.deepEqual([panel.winner, panel.counts], ['SHIP', { SHIP: 2, HOLD: 1 }]);
    const ship = rec.nodes.find((n) => n.id === 'ship')!.committedRunId!;
    assert.equal(fs.readFileSync(path.join(home, 'results', ship, ship, 'out', 'release-note.txt'), 'utf8'), 'tests: 412 passed\nopen bugs: 2 minor\n');
    assert.ok(Buffer.byteLength(rec.envelope!) <= 4096);
    assert.match(rec.envelope!, /^go\s+gate\s+succeeded\s+a1\s+.*approved by bob$/m);
  } finally {
    await c.close();
  }
});
