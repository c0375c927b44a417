/**
 * The tally and the vote macro: the rules over structured ballots (invalid and absent ballots
 * counted, never guessed; ties by the tie rule), a golden expansion of a vote, its refusals at
 * define, and a vote run end to end over the supervisor twin with one malformed ballot.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { defineGraphText, GraphService, GraphStore, tally, type Ballot } from '../../../src/graphs/index.js';
import type { RunRecord, SpawnContext, SpawnRequestInput, TallySpec } from '../../../src/protocol/index.js';
import { ok } from '../../../src/util/errors.js';
import { tempDir } from '../../helpers/temp-dir.js';

const spec = (o: Partial<TallySpec> = {}): TallySpec => ({ field: '$.verdict', choices: ['BUY', 'HOLD', 'SELL'], rule: 'plurality', min_valid: 1, tie: 'fail', ballot: 'result', ...o });
const read = (voter: string, value: unknown): Ballot => ({ voter, value, state: 'read' });

test('tally rules: plurality, majority, unanimous, quorum; a tie fails or goes to the first choice', () => {
  const b = [read('a', { verdict: 'BUY' }), read('b', { verdict: 'BUY' }), read('c', { verdict: 'HOLD' })];
  assert.deepEqual([tally(spec(), b).winner, tally(spec(), b).outcome], ['BUY', 'decided']);
  assert.equal(tally(spec({ rule: 'majority' }), b).winner, 'BUY');
  assert.equal(tally(spec({ rule: 'unanimous' }), b).outcome, 'not_unanimous');
  assert.equal(tally(spec({ rule: { quorum: 3 } }), b).outcome, 'no_quorum');
  assert.equal(tally(spec({ rule: { quorum: 2 } }), b).winner, 'BUY');
  const tie = [read('a', { verdict: 'SELL' }), read('b', { verdict: 'HOLD' })];
  assert.deepEqual([tally(spec(), tie).winner, tally(spec(), tie).outcome], [null, 'tie']);
  assert.equal(tally(spec({ tie: 'first_choice' }), tie).winner, 'HOLD', 'HOLD is listed before SELL');
  assert.equal(tally(spec({ rule: 'majority' }), tie).outcome, 'no_majority');
});

test('invalid ballots are counted with their reason, never guessed; absent voters counted apart; too few valid fails', () => {
  const t = tally(spec({ min_valid: 2 }), [
    read('ok', { verdict: 'SELL' }),
    read('lower', { verdict: 'sell' }),
    read('spaced', { verdict: ' SELL' }),
    read('nofield', { answer: 'SELL' }),
    read('notjson', undefined),
    read('number', { verdict: 3 }),
    { voter: 'gone', value: undefined, state: 'absent' },
    { voter: 'lost', value: undefined, state: 'unreadable' },
  ]);
  assert.equal(t.valid, 1);
  assert.equal(t.invalid, 6);
  assert.equal(t.absent, 1);
  assert.equal(t.outcome, 'too_few_valid');
  assert.deepEqual(t.ballots.map((x) => x.why), ['ok', 'not_a_choice', 'not_a_choice', 'no_field', 'not_json', 'not_a_choice', 'absent', 'unreadable']);
  assert.deepEqual(t.counts, { BUY: 0, HOLD: 0, SELL: 1 });
});

test('property: the tally is deterministic and order-independent; counts add up; a decided winner has the top count', () => {
  const ballot = fc.oneof(fc.constantFrom('BUY', 'HOLD', 'SELL', 'buy', '').map((v) => ({ verdict: v })), fc.constant(undefined), fc.constant({}));
  fc.assert(
    fc.property(fc.array(ballot, { maxLength: 12 }), fc.constantFrom<TallySpec['rule']>('plurality', 'majority', 'unanimous', { quorum: 2 }), fc.constantFrom<'fail' | 'first_choice'>('fail', 'first_choice'), (values, rule, tie) => {
      const bs = values.map((v, i) => read(`v${i}`, v));
      const s = spec({ rule, tie });
      const t = tally(s, bs);
      assert.deepEqual(tally(s, [...bs].reverse()).winner, t.winner);
      assert.equal(t.valid + t.invalid + t.absent, bs.length);
      assert.equal(Object.values(t.counts).reduce((a, b) => a + b, 0), t.valid);
      if (t.winner) assert.equal(t.counts[t.winner], Math.max(...Object.values(t.counts)));
    }),
    { numRuns: 300 },
  );
});

const VOTE = `graph: brig/v1
nodes:
  - id: brief
    kind: command
    spawn: { task: brief, argv: ["true"] }
  - id: panel
    kind: vote
    depends_on: [brief]
    inputs: [{ from: brief, as: brief }]
    spawn: { task: "vote as {{voter}}", argv: ["true"] }
    vote: { voters: [bull, bear, quant], voter_kind: command, field: $.verdict, choices: [BUY, HOLD, SELL], rule: majority, ballot: out/ballot.json }
  - id: act
    kind: command
    depends_on: [panel]
    spawn: { task: act, argv: ["true"] }
`;

test('golden: a vote expands into one visible node per voter (blind to each other) and its tally under the macro id', () => {
  const d = defineGraphText(VOTE);
  assert.ok(d.ok, d.ok ? '' : d.error.message);
  assert.deepEqual(d.value.order, ['brief', 'panel.bull', 'panel.bear', 'panel.quant', 'panel', 'act']);
  assert.deepEqual(d.value.nodes.map((n) => [n.id, n.kind, n.macro_of ?? null, n.depends_on.join(','), n.depth]), [
    ['brief', 'command', null, '', 0],
    ['panel.bull', 'command', 'panel', 'brief', 1],
    ['panel.bear', 'command', 'panel', 'brief', 1],
    ['panel.quant', 'command', 'panel', 'brief', 1],
    ['panel', 'tally', 'panel', 'panel.bull,panel.bear,panel.quant', 2],
    ['act', 'command', null, 'panel', 3],
  ]);
  const bear = d.value.expanded.find((n) => n.id === 'panel.bear')!;
  assert.equal(bear.spawn.task, 'vote as bear');
  assert.deepEqual(bear.inputs, [{ from: 'brief', as: 'brief' }]);
  const t = d.value.expanded.find((n) => n.id === 'panel')!;
  assert.equal(t.when, 'all_done');
  assert.deepEqual(t.tally, { field: '$.verdict', choices: ['BUY', 'HOLD', 'SELL'], rule: 'majority', min_valid: 1, tie: 'fail', ballot: 'out/ballot.json' });
  const again = defineGraphText(VOTE);
  assert.ok(again.ok);
  assert.deepEqual(again.value, d.value, 'expansion is deterministic');
});

const REFUSED: [string, string, RegExp][] = [
  ['min_valid over the voters', VOTE.replace('rule: majority', 'rule: majority, min_valid: 4'), /min_valid 4 can never be met: 3 voter/],
  ['a quorum over the voters', VOTE.replace('rule: majority', 'rule: { quorum: 5 }'), /quorum 5 can never be met/],
  ['repeated choices', VOTE.replace('[BUY, HOLD, SELL]', '[BUY, BUY]'), /choices repeat/],
  ['two voters with one name', VOTE.replace('[bull, bear, quant]', '[bull, bull]'), /two voters have one name/],
  ['an input from a tally', VOTE.replace('depends_on: [panel]\n', 'depends_on: [panel]\n    inputs: [{ from: panel, as: p }]\n'), /input p is from panel, a tally: it commits no out\//],
  ['a reference into a macro', VOTE.replace('depends_on: [panel]\n', 'depends_on: [panel.bull]\n'), /depends_on/],
  ['a vote without a template', VOTE.replace('    spawn: { task: "vote as {{voter}}", argv: ["true"] }\n', ''), /a vote node needs spawn \(spawn is the template/],
  ['a tally with a spawn', 'graph: brig/v1\nnodes:\n  - id: a\n    kind: command\n    spawn: { task: t, argv: ["x"] }\n  - id: t\n    kind: tally\n    depends_on: [a]\n    spawn: { task: t }\n    tally: { field: $.v, choices: [x, y] }\n', /graph:6: node t: a tally node runs nothing: it takes no spawn/],
  ['a tally with no voter', 'graph: brig/v1\nnodes:\n  - id: t\n    kind: tally\n    tally: { field: $.v, choices: [x, y] }\n', /a tally needs at least one voter/],
  ['{{voter}} outside a vote', 'graph: brig/v1\nnodes:\n  - id: a\n    kind: command\n    spawn: { task: "{{voter}}", argv: ["x"] }\n', /\{\{voter\}\} is not \{\{inputs.<name>\}\}/],
  ['a bad field path', VOTE.replace('field: $.verdict', 'field: verdict'), /field/],
];
for (const [name, text, re] of REFUSED) {
  test(`define refuses (vote/tally): ${name}`, () => {
    const d = defineGraphText(text);
    assert.ok(!d.ok, 'refused');
    assert.match(d.error.message, re);
  });
}

test('a vote runs over the twin: three voters in parallel, one malformed ballot counted invalid, the majority decides, the dependent runs; the envelope shows the count', async () => {
  const ballots: Record<string, unknown> = { bull: { verdict: 'BUY' }, bear: { verdict: 'BUY' }, quant: { verdict: 'maybe' } };
  const runs = new Map<string, { node: string; ctx: SpawnContext }>();
  let n = 0;
  const started: string[] = [];
  const sup = {
    async spawn(req: SpawnRequestInput, ctx: SpawnContext = {}) {
      const id = `r-twin${String(++n).padStart(6, '0')}`;
      runs.set(id, { node: req.label!.split('/')[1]!, ctx });
      started.push(req.label!.split('/')[1]! + ':' + req.task);
      return ok({ id, status: 'running' } as unknown as RunRecord);
    },
    async wait(id: string) {
      await new Promise((r) => setImmediate(r));
      return ok({ id, status: 'ended', endReason: 'completed' } as unknown as RunRecord);
    },
    kill: async () => ok({} as RunRecord),
    list: async () => [],
  };
  const store = new GraphStore(tempDir('brig-vote-'));
  const asked: string[] = [];
  const g = new GraphService({
    supervisor: sup,
    store,
    limits: { maxChildren: 5, maxDepth: 3, defaultTimeoutMs: 1000 },
    putManifest: async () => 'ref_m',
    async readBallot(runId, ballot) {
      asked.push(ballot);
      return ballots[runs.get(runId)!.node.split('.')[1]!];
    },
  });
  const s = await g.run(VOTE);
  assert.ok(s.ok);
  const w = await g.wait(s.value.graphId);
  assert.ok(w.ok);
  const rec = w.value;
  assert.equal(rec.state, 'completed');
  const panel = rec.nodes.find((x) => x.id === 'panel')!;
  assert.equal(panel.kind, 'tally');
  assert.equal(panel.state, 'succeeded');
  assert.deepEqual([panel.tally!.winner, panel.tally!.valid, panel.tally!.invalid, panel.tally!.absent], ['BUY', 2, 1, 0]);
  assert.deepEqual(asked, ['out/ballot.json', 'out/ballot.json', 'out/ballot.json']);
  assert.ok(started.includes('panel.quant:vote as quant'));
  assert.ok(!started.some((x) => x.startsWith('panel:')), 'a tally makes no run');
  assert.match(rec.envelope!, /^panel\s+tally\s+succeeded\s+a1\s+.*BUY 2 · HOLD 0 · SELL 0 · invalid 1 · absent 0 → BUY$/m);
  assert.equal(rec.nodes.find((x) => x.id === 'act')!.state, 'succeeded');
  // Each voter saw the brief, none saw another voter.
  for (const [, r] of runs) if (r.node.startsWith('panel.')) assert.deepEqual(r.ctx.inputs!.map((i) => i.as), ['brief']);
});

test('a vote with a tie (tie: fail) fails the tally and, under fail_fast, skips what follows', async () => {
  const text = VOTE.replace('rule: majority', 'rule: plurality').replace('[bull, bear, quant]', '[bull, bear]');
  const ballots: Record<string, unknown> = { bull: { verdict: 'BUY' }, bear: { verdict: 'SELL' } };
  const names = new Map<string, string>();
  let n = 0;
  const g = new GraphService({
    supervisor: {
      async spawn(req: SpawnRequestInput) {
        const id = `r-twin${String(++n).padStart(6, '0')}`;
        names.set(id, req.label!.split('/')[1]!);
        return ok({ id, status: 'running' } as unknown as RunRecord);
      },
      wait: async (id: string) => ok({ id, status: 'ended', endReason: 'completed' } as unknown as RunRecord),
      kill: async () => ok({} as RunRecord),
      list: async () => [],
    },
    store: new GraphStore(tempDir('brig-vote-')),
    limits: { maxChildren: 5, maxDepth: 3, defaultTimeoutMs: 1000 },
    putManifest: async () => 'ref_m',
    readBallot: async (runId) => ballots[names.get(runId)!.split('.')[1]!],
  });
  const s = await g.run(text);
  assert.ok(s.ok);
  const rec = (await g.wait(s.value.graphId)).ok ? (await g.status(s.value.graphId)) : null;
  assert.ok(rec?.ok);
  const panel = rec.value.nodes.find((x) => x.id === 'panel')!;
  assert.deepEqual([panel.state, panel.tally!.outcome, panel.attempts[0]!.endReason], ['failed', 'tie', 'tie']);
  assert.deepEqual(rec.value.nodes.find((x) => x.id === 'act')!.skipReason, 'fail_fast');
  assert.equal(rec.value.state, 'failed');
});
