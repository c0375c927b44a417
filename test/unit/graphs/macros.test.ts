/**
 * Macro expansion at define (golden): map, map_reduce, refine, collaborate and debate become
 * plain nodes define answers with — their ids, kinds, dependencies, `when`, inputs and tasks —
 * deterministically; and the refusals of their shapes, each with the macro's line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defineGraphText, parseItems, stopHolds } from '../../../src/graphs/index.js';
import { GRAPH_BOUNDS } from '../../../src/protocol/index.js';

const cmd = (id: string, extra = '') => `  - id: ${id}\n    kind: command\n    spawn: { task: t, argv: ["true"] }\n${extra}`;
const doc = (nodes: string) => `graph: brig/v1\nnodes:\n${nodes}`;
const shape = (text: string) => {
  const d = defineGraphText(text);
  assert.ok(d.ok, d.ok ? '' : d.error.message);
  return d.value;
};

const MAP_REDUCE = doc(
  cmd('plan') +
    `  - id: research
    kind: map_reduce
    depends_on: [plan]
    inputs: [{ from: plan, as: plan }]
    retry: { max: 1 }
    map: { over: { from: plan, path: out/items.jsonl }, max_items: 3, item_kind: command }
    spawn: { task: "research {{item}}", argv: ["true"] }
    reduce: { kind: script, spawn: { task: sum, script: "export default async () => 1" } }
`,
);

test('golden: a map_reduce over a runtime file expands into its split, max_items slots, the map join and the reducer under the macro id', () => {
  const d = shape(MAP_REDUCE);
  assert.deepEqual(d.order, ['plan', 'research.items', 'research.0', 'research.1', 'research.2', 'research.map', 'research']);
  assert.deepEqual(d.nodes.map((n) => [n.id, n.kind, n.macro_of ?? null, n.depends_on.join(','), n.depth]), [
    ['plan', 'command', null, '', 0],
    ['research.items', 'split', 'research', 'plan', 1],
    ['research.0', 'command', 'research', 'research.items,plan', 2],
    ['research.1', 'command', 'research', 'research.items,plan', 2],
    ['research.2', 'command', 'research', 'research.items,plan', 2],
    ['research.map', 'join', 'research', 'research.items,research.0,research.1,research.2', 3],
    ['research', 'script', 'research', 'research.map', 4],
  ]);
  const x = (id: string) => d.expanded.find((n) => n.id === id)!;
  assert.deepEqual(x('research.1').item, { split: 'research.items', index: 1 });
  assert.equal(x('research.1').spawn.task, 'research {{item}}', 'the item is filled at run time, from the split');
  assert.deepEqual(x('research.1').when, { results: { 'research.items': 'succeeded' } });
  assert.deepEqual(x('research.1').inputs, [{ from: 'plan', as: 'plan' }]);
  assert.equal(x('research.1').retry.max, 1);
  assert.deepEqual(x('research.items').split, { over: { from: 'plan', path: 'out/items.jsonl' }, max_items: 3, item_max_bytes: 2048, slots: ['research.0', 'research.1', 'research.2'] });
  assert.deepEqual(x('research').inputs, [{ from: 'research.map', as: 'items' }]);
  assert.deepEqual(shape(MAP_REDUCE), d, 'expansion is deterministic');
  // Static items: exactly one slot per item, and the join is the macro id.
  const s = shape(doc(`  - id: m\n    kind: map\n    map: { over: { items: [a, {b: 1}] }, item_kind: command }\n    spawn: { task: "do {{item}}", argv: ["true"] }\n`));
  assert.deepEqual(s.nodes.map((n) => `${n.id}:${n.kind}`), ['m.items:split', 'm.0:command', 'm.1:command', 'm:join']);
});

test('golden: refine is a chain seeing the previous round at /artifacts/prev, stop_when on each round but the last; collaborate sees every earlier round', () => {
  const r = shape(doc(cmd('brief') + `  - id: draft\n    kind: refine\n    depends_on: [brief]\n    inputs: [{ from: brief, as: brief }]\n    rounds: { count: 3, round_kind: command, stop_when: { field: $.done, equals: true } }\n    spawn: { task: "round {{round}}", argv: ["true"] }\n`));
  assert.deepEqual(r.order, ['brief', 'draft.r1', 'draft.r2', 'draft.r3', 'draft']);
  const x = (id: string) => r.expanded.find((n) => n.id === id)!;
  assert.deepEqual([x('draft.r1').spawn.task, x('draft.r1').when, x('draft.r1').inputs], ['round 1', 'all_succeeded', [{ from: 'brief', as: 'brief' }]]);
  assert.deepEqual([x('draft.r3').spawn.task, x('draft.r3').depends_on, x('draft.r3').when, x('draft.r3').inputs], ['round 3', ['brief', 'draft.r2'], { results: { 'draft.r2': 'succeeded' } }, [{ from: 'brief', as: 'brief' }, { from: 'draft.r2', as: 'prev' }]]);
  assert.deepEqual(x('draft.r1').stop, { when: { file: 'result', field: '$.done', equals: true }, later: ['draft.r2', 'draft.r3'] });
  assert.equal(x('draft.r3').stop, undefined, 'the last round has nothing to stop');
  assert.deepEqual([x('draft').kind, x('draft').join, x('draft').when], ['join', { mode: 'last' }, 'all_done']);
  const c = shape(doc(`  - id: team\n    kind: collaborate\n    rounds: { count: 3, round_kind: command }\n    spawn: { task: "turn {{round}}", argv: ["true"] }\n`));
  assert.deepEqual(c.expanded.find((n) => n.id === 'team.r3')!.inputs, [{ from: 'team.r1', as: 'r1' }, { from: 'team.r2', as: 'r2' }]);
});

test('golden: a debate is sides × rounds, each turn seeing every earlier turn read-only, then its synthesizer (or a join whose parts are the turns)', () => {
  const d = shape(doc(`  - id: d\n    kind: debate\n    debate: { sides: [pro, con], rounds: 2, side_kind: command, synthesizer: { kind: command, spawn: { task: judge, argv: ["true"] } } }\n    spawn: { task: "argue {{side}} in round {{round}}", argv: ["true"] }\n`));
  assert.deepEqual(d.order, ['d.r1.pro', 'd.r1.con', 'd.r2.pro', 'd.r2.con', 'd']);
  const x = (id: string) => d.expanded.find((n) => n.id === id)!;
  assert.equal(x('d.r2.con').spawn.task, 'argue con in round 2');
  assert.deepEqual(x('d.r1.pro').inputs, [], 'round 1 sees no one: the sides are blind to each other within a round');
  assert.deepEqual(x('d.r2.pro').inputs, [{ from: 'd.r1.pro', as: 'r1-pro' }, { from: 'd.r1.con', as: 'r1-con' }]);
  assert.deepEqual(x('d.r2.pro').when, { results: { 'd.r1.pro': 'succeeded', 'd.r1.con': 'succeeded' } });
  assert.deepEqual(x('d').inputs.map((i) => i.as), ['r1-pro', 'r1-con', 'r2-pro', 'r2-con']);
  const j = shape(doc(`  - id: d\n    kind: debate\n    debate: { sides: [pro, con], rounds: 1, side_kind: command }\n    spawn: { task: "argue {{side}}", argv: ["true"] }\n` + cmd('after', '    depends_on: [d]\n    inputs: [{ from: d, as: t }]\n')));
  assert.deepEqual(j.expanded.find((n) => n.id === 'd')!.join, { mode: 'all', names: { 'd.r1.pro': 'r1-pro', 'd.r1.con': 'r1-con' } });
});

const REFUSED: [string, string, RegExp][] = [
  ['a map over more listed items than max_items', doc(`  - id: m\n    kind: map\n    map: { over: { items: [1, 2, 3] }, max_items: 2, item_kind: command }\n    spawn: { task: "{{item}}", argv: ["true"] }\n`), /graph:3: node m: map lists 3 items; max_items is 2/],
  ['max_items over the bound', doc(`  - id: m\n    kind: map\n    map: { over: { items: [1] }, max_items: 101 }\n    spawn: { task: "{{item}}" }\n`), /max_items/],
  ['a map reading from a node it does not depend on', doc(cmd('plan') + `  - id: m\n    kind: map\n    map: { over: { from: plan, path: out/i.jsonl } }\n    spawn: { task: "{{item}}" }\n`), /map.over.from names plan, which is not in its depends_on/],
  ['a map template without {{item}}', doc(`  - id: m\n    kind: map\n    map: { over: { items: [1] } }\n    spawn: { task: "no item" }\n`), /names no \{\{item\}\}/],
  ['{{item}} outside a map', doc(`  - id: a\n    kind: command\n    spawn: { task: "{{item}}", argv: ["x"] }\n`), /\{\{item\}\} is not \{\{inputs.<name>\}\}/],
  ['a map_reduce without reduce', doc(`  - id: m\n    kind: map_reduce\n    map: { over: { items: [1] } }\n    spawn: { task: "{{item}}" }\n`), /a map_reduce node needs reduce/],
  ['a map with rounds', doc(`  - id: m\n    kind: map\n    map: { over: { items: [1] } }\n    rounds: { count: 2 }\n    spawn: { task: "{{item}}" }\n`), /a map node takes no rounds/],
  ['rounds over 5', doc(`  - id: r\n    kind: refine\n    rounds: { count: 6 }\n    spawn: { task: t }\n`), /rounds/],
  ['stop_when with both tests', doc(`  - id: r\n    kind: refine\n    rounds: { count: 2, stop_when: { field: $.x, equals: 1, gte: 2 } }\n    spawn: { task: t }\n`), /exactly one of equals or gte/],
  ['a debate with one side', doc(`  - id: d\n    kind: debate\n    debate: { sides: [pro] }\n    spawn: { task: t }\n`), /sides/],
  ['two sides with one name', doc(`  - id: d\n    kind: debate\n    debate: { sides: [pro, pro] }\n    spawn: { task: t }\n`), /two sides have one name/],
  ['an input from a map whose part names would be over 48 characters', doc(`  - id: m\n    kind: map\n    map: { over: { items: [1] } }\n    spawn: { task: "{{item}}" }\n` + cmd('x', '    depends_on: [m]\n    inputs: [{ from: m, as: abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstu }]\n')), /mounts abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstu-<name> names over 48 characters/],
  ['over 200 nodes after expansion', doc(`  - id: a\n    kind: map\n    map: { over: { items: [1] }, max_items: 100 }\n    spawn: { task: "{{item}}" }\n  - id: b\n    kind: map\n    map: { over: { items: [1] }, max_items: 100 }\n    spawn: { task: "{{item}}" }\n`.replace(/items: \[1\] \}, max_items: 100/g, `from: p, path: out/x }, max_items: 100`).replace(/kind: map\n/g, 'kind: map\n    depends_on: [p]\n') + cmd('p')), new RegExp(`20\\d nodes after expansion; the bound is ${GRAPH_BOUNDS.nodes}`)],
];
for (const [name, text, re] of REFUSED) {
  test(`define refuses (macros): ${name}`, () => {
    const d = defineGraphText(text);
    assert.ok(!d.ok, 'refused');
    assert.match(d.error.message, re);
  });
}

test('items are a JSON array or JSON lines (blank lines ignored), never guessed; stop_when is exact', () => {
  assert.deepEqual(parseItems('[1, "a", {"b": 2}]'), [1, 'a', { b: 2 }]);
  assert.deepEqual(parseItems('{"q": 1}\n\n"x"\n'), [{ q: 1 }, 'x']);
  assert.equal(parseItems('{"q": 1}\nnot json\n'), null);
  assert.deepEqual(parseItems('{"one": "object"}'), [{ one: 'object' }], 'one JSON line is one item');
  assert.equal(parseItems('["unclosed"'), null);
  assert.equal(stopHolds({ file: 'result', field: '$.done', equals: true }, { done: true }), true);
  assert.equal(stopHolds({ file: 'result', field: '$.done', equals: true }, { done: 'true' }), false, 'no coercion');
  assert.equal(stopHolds({ file: 'result', field: '$.s', gte: 0.8 }, { s: 0.8 }), true);
  assert.equal(stopHolds({ file: 'result', field: '$.s', gte: 0.8 }, { s: '0.9' }), false);
  assert.equal(stopHolds({ file: 'result', field: '$.s', gte: 0.8 }, undefined), false);
});
