/**
 * A vote on real jails: each voter an ordinary command run writing a structured ballot to its
 * out/, the tally reading the committed ballots (never a file a child can still write) — one
 * malformed ballot counted invalid and the majority deciding, and a tie that fails its tally
 * while the graph (on_failure continue) goes on.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
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
    assert.deepEqual(await leftovers(home), []);
  } finally {
    await c.close();
  }
});
