/**
 * Define time: every refusal of the `graph: brig/v1` spec with its line (a table), and
 * properties over random DAGs: the order is topological, define is deterministic, the
 * critical path is the longest chain.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { defineGraph, defineGraphText, requestOf, topoOrder } from '../../../src/graphs/index.js';
import { GRAPH_BOUNDS, type GraphSpec } from '../../../src/protocol/index.js';

const cmd = (id: string, extra = '') => `  - id: ${id}\n    kind: command\n    spawn: { task: t, argv: ["true"] }\n${extra}`;
const doc = (nodes: string, head = '') => `graph: brig/v1\n${head}nodes:\n${nodes}`;

test('a minimal spec defines: order, nodes with their depth, sinks (YAML and the same in JSON)', () => {
  const y = defineGraphText(doc(cmd('a') + cmd('b', '    depends_on: [a]\n')));
  assert.ok(y.ok, y.ok ? '' : y.error.message);
  assert.deepEqual(y.value.order, ['a', 'b']);
  assert.deepEqual(y.value.nodes.map((n) => [n.id, n.depth]), [['a', 0], ['b', 1]]);
  assert.deepEqual(y.value.sinks, ['b']);
  const j = defineGraphText(JSON.stringify({ graph: 'brig/v1', nodes: [{ id: 'a', kind: 'command', spawn: { task: 't', argv: ['true'] } }, { id: 'b', kind: 'command', depends_on: ['a'], spawn: { task: 't', argv: ['true'] } }] }));
  assert.ok(j.ok);
  assert.equal(j.value.specHash, y.value.specHash, 'YAML and JSON of the same spec are the same graph');
});

/** Each refusal: the spec, the code, and what the message must say (a line number included). */
const REFUSALS: { name: string; text: string; code?: string; says: RegExp[] }[] = [
  { name: 'not YAML', text: 'graph: brig/v1\nnodes: [\n', says: [/graph:\d+: YAML/] },
  { name: 'wrong version', text: doc(cmd('a')).replace('brig/v1', 'brig/v2'), says: [/graph:1:/, /graph/] },
  { name: 'unknown top key (with the nearest)', text: doc(cmd('a'), 'nodez: []\n'), says: [/graph:2: unknown key "nodez"/] },
  { name: 'unknown node key', text: doc(cmd('a', '    dependson: [b]\n')), says: [/graph:6: unknown key "nodes\.0\.dependson"/] },
  { name: 'no nodes', text: 'graph: brig/v1\nnodes: []\n', says: [/nodes/] },
  { name: 'a bad node id', text: doc(cmd('A')), says: [/graph:3:/, /node id/] },
  { name: 'a macro without its fields names them', text: doc('  - id: v\n    kind: map\n    spawn: { task: t }\n'), says: [/graph:3: node v: a map node needs map/] },
  { name: 'unknown kind', text: doc('  - id: v\n    kind: nope\n    spawn: { task: t }\n'), says: [/graph:4:/, /not one of agent, script, command/] },
  { name: 'duplicate id (both lines)', text: doc(cmd('a') + cmd('a')), says: [/graph:6: node a: duplicate id \(first at graph:3\)/] },
  { name: 'unknown dependency (nearest)', text: doc(cmd('alpha') + cmd('b', '    depends_on: [alpah]\n')), says: [/graph:6: node b: depends_on names unknown node alpah/] },
  { name: 'self dependency', text: doc(cmd('a', '    depends_on: [a]\n')), says: [/node a: depends on itself/] },
  { name: 'repeated dependency', text: doc(cmd('a') + cmd('b', '    depends_on: [a, a]\n')), says: [/depends_on names a twice/] },
  { name: 'a cycle, with its path', text: doc(cmd('a', '    depends_on: [c]\n') + cmd('b', '    depends_on: [a]\n') + cmd('c', '    depends_on: [b]\n')), says: [/cycle (a → b → c → a|b → c → a → b|c → a → b → c)/, /graph:\d+:/] },
  { name: 'input from outside depends_on', text: doc(cmd('a') + cmd('b', '    inputs: [{ from: a, as: x }]\n')), says: [/graph:6: node b: input x is from a, which is not in its depends_on/] },
  { name: 'two inputs with one name', text: doc(cmd('a') + cmd('c') + cmd('b', '    depends_on: [a, c]\n    inputs: [{ from: a, as: x }, { from: c, as: x }]\n')), says: [/two inputs are named x/] },
  { name: 'when outside depends_on', text: doc(cmd('a') + cmd('b', '    when: { results: { a: failed } }\n')), says: [/node b: when names a, which is not in its depends_on/] },
  { name: 'a quorum that can never hold', text: doc(cmd('a') + cmd('b', '    depends_on: [a]\n    when: { quorum: 2 }\n')), says: [/quorum 2 can never hold/] },
  { name: 'any_succeeded with no dependency', text: doc(cmd('a', '    when: any_succeeded\n')), says: [/any_succeeded can never hold/] },
  { name: 'unknown when predicate', text: doc(cmd('a') + cmd('b', '    depends_on: [a]\n    when: sometimes\n')), says: [/graph:\d+:/, /when/] },
  { name: 'a command without argv', text: doc('  - id: a\n    kind: command\n    spawn: { task: t }\n'), says: [/a command node needs spawn.argv/] },
  { name: 'a script with argv', text: doc('  - id: a\n    kind: script\n    spawn: { task: t, script: x, argv: [y] }\n'), says: [/a script node needs spawn.script and no spawn.argv/] },
  { name: 'an agent with a script', text: doc('  - id: a\n    kind: agent\n    spawn: { task: t, script: x }\n'), says: [/an agent node takes no spawn.script/] },
  { name: 'a placeholder of upstream text', text: doc(cmd('a') + '  - id: b\n    kind: command\n    depends_on: [a]\n    spawn: { task: "use {{a.result}}", argv: ["true"] }\n'), says: [/\{\{a.result\}\} is not \{\{inputs.<name>\}\}/] },
  { name: 'an unknown graph input', text: doc('  - id: a\n    kind: command\n    spawn: { task: "x {{inputs.nope}}", argv: ["true"] }\n'), says: [/names no graph input/] },
  { name: 'a text input over 4 KiB', text: doc(cmd('a'), `inputs:\n  big: { text: "${'x'.repeat(GRAPH_BOUNDS.textInputBytes + 1)}" }\n`), says: [/graph:3:/] },
  { name: 'max_parallel over its bound (not clamped)', text: doc(cmd('a'), `concurrency: { max_parallel: ${GRAPH_BOUNDS.maxParallel + 1} }\n`), says: [/graph:2:/, /max_parallel/] },
  { name: 'retries over the bound', text: doc(cmd('a', '    retry: { max: 4 }\n')), says: [/retry\.max/] },
  { name: 'a retry on cancelled', text: doc(cmd('a', '    retry: { max: 1, on: [cancelled] }\n')), says: [/retry\.on/] },
  { name: 'an on_restart that is neither resume nor fail', text: doc(cmd('a'), 'on_restart: retry\n'), says: [/on_restart/] },
  { name: 'unknown sink', text: doc(cmd('a'), 'sinks: [b]\n'), says: [/sinks names unknown node b/] },
  { name: 'a critical path over the wall budget (the minimum said)', text: doc('  - id: a\n    kind: command\n    spawn: { task: t, argv: ["true"], timeout_ms: 1000 }\n    retry: { max: 1 }\n  - id: b\n    kind: command\n    depends_on: [a]\n    spawn: { task: t, argv: ["true"], timeout_ms: 500 }\n', 'budget: { wall_ms: 2000 }\n'), says: [/critical path needs up to 2500 ms/, /budget.wall_ms is 2000/] },
  // Budgets that cannot fit: refused at define, never clamped.
  { name: "a node's budget over the graph's", text: doc(cmd('a', '    budget: { tokens: 5000 }\n'), 'budget: { tokens: 4000 }\n'), says: [/graph:4: node a: budget.tokens 5000 is over the graph's budget.tokens 4000/] },
  { name: "a node's cost over the graph's", text: doc(cmd('a', '    budget: { cost_usd: 2 }\n'), 'budget: { cost_usd: 1 }\n'), says: [/node a: budget.cost_usd 2 is over the graph's budget.cost_usd 1/] },
  { name: "a timeout over the node's wall budget", text: doc('  - id: a\n    kind: command\n    spawn: { task: t, argv: ["true"], timeout_ms: 9000 }\n    budget: { wall_ms: 5000 }\n'), says: [/node a: spawn.timeout_ms 9000 is over its budget.wall_ms 5000/] },
  { name: 'fewer node runs than run nodes (a map counts its slots)', text: doc(cmd('a') + '  - id: m\n    kind: map\n    map: { over: { items: [1, 2] }, max_items: 3, item_kind: command }\n    spawn: { task: "x {{item}}", argv: ["true"] }\n', 'budget: { children: 2 }\n'), says: [/budget.children 2 cannot run every node once: the graph has 3 run node\(s\) \(a map counts max_items slots\)/] },
  { name: 'a budget on a gate', text: doc(cmd('a') + '  - id: g\n    kind: gate\n    depends_on: [a]\n    gate: { prompt: ok?, timeout_ms: 1000 }\n    budget: { tokens: 10 }\n'), says: [/node g: a gate runs nothing: it takes no budget/] },
  { name: "a node's wall budget on the critical path", text: doc('  - id: a\n    kind: command\n    spawn: { task: t, argv: ["true"] }\n    budget: { wall_ms: 3000 }\n', 'budget: { wall_ms: 2000 }\n'), says: [/critical path needs up to 3000 ms/] },
  // Graph inputs that are refs, the lease ceiling, context.summaries_of: refused at define, never narrowed silently.
  { name: 'a ref input that is not a ref id', text: doc(cmd('a'), 'inputs:\n  data: { ref: "out/x.json" }\n'), says: [/graph:3:/, /ResultRef id/] },
  { name: 'a ref input spliced into a task', text: doc('  - id: a\n    kind: command\n    spawn: { task: "use {{inputs.data}}", argv: ["true"] }\n', `inputs:\n  data: { ref: ref_${'a'.repeat(26)} }\n`), says: [/node a: task placeholder \{\{inputs.data\}\} names a ref input: a ref is never spliced into a task/] },
  { name: 'an input from an unknown graph input', text: doc(cmd('a', '    inputs: [{ from: $inputs.nope, as: x }]\n')), says: [/node a: input x is from \$inputs.nope, which names no graph input/] },
  { name: 'an input from a text graph input', text: doc(cmd('a', '    inputs: [{ from: $inputs.t, as: x }]\n'), 'inputs:\n  t: { text: hi }\n'), says: [/input x is from \$inputs.t, a text input/] },
  { name: 'a map over a text graph input', text: doc('  - id: m\n    kind: map\n    map: { over: { from: $inputs.t }, item_kind: command }\n    spawn: { task: "x {{item}}", argv: ["true"] }\n', 'inputs:\n  t: { text: hi }\n'), says: [/map.over.from names \$inputs.t, which is a text input/] },
  { name: 'caps outside the lease ceiling', text: doc('  - id: a\n    kind: agent\n    spawn: { task: t, caps: [llm, net.egress] }\n', 'lease: { caps: [llm, refs.read] }\n'), says: [/graph:4: node a: spawn.caps net.egress is outside the graph's lease ceiling \(llm, refs.read\)/] },
  { name: 'a command node under a ceiling without exec', text: doc(cmd('a'), 'lease: { caps: [llm] }\n'), says: [/node a: a command node runs its own code, which needs exec/] },
  { name: 'limits over the lease ceiling', text: doc('  - id: a\n    kind: command\n    spawn: { task: t, argv: ["true"], limits: { memoryMb: 512 } }\n', 'lease: { limits: { memoryMb: 256 } }\n'), says: [/node a: spawn.limits.memoryMb 512 is over the graph's lease ceiling 256/] },
  { name: 'a timeout over the lease ceiling', text: doc('  - id: a\n    kind: command\n    spawn: { task: t, argv: ["true"], timeout_ms: 9000 }\n', 'lease: { timeout_ms: 5000 }\n'), says: [/node a: its timeout 9000 ms is over the graph's lease ceiling timeout_ms 5000/] },
  { name: 'an unknown lease ceiling key', text: doc(cmd('a'), 'lease: { posture: none }\n'), says: [/graph:2:/, /lease\.posture/] },
  { name: 'summaries_of outside depends_on', text: doc(cmd('a') + cmd('b', '    context: { summaries_of: [a] }\n')), says: [/node b: context.summaries_of names a, which is not in its depends_on/] },
  { name: 'summaries_of a gate', text: doc(cmd('a') + '  - id: g\n    kind: gate\n    depends_on: [a]\n    gate: { prompt: ok?, timeout_ms: 1000 }\n' + cmd('b', '    depends_on: [g]\n    context: { summaries_of: [g] }\n')), says: [/node b: context.summaries_of names g, a gate with no single committed result/] },
  { name: 'context on a gate', text: doc(cmd('a') + '  - id: g\n    kind: gate\n    depends_on: [a]\n    gate: { prompt: ok?, timeout_ms: 1000 }\n    context: { summaries_of: [a] }\n'), says: [/node g: a gate runs nothing: it takes no context/] },
  { name: 'approvers as an empty list', text: doc(cmd('a') + '  - id: g\n    kind: gate\n    depends_on: [a]\n    gate: { prompt: ok?, timeout_ms: 1000, approvers: [] }\n'), says: [/graph:\d+:/, /approvers/] },
];

for (const r of REFUSALS) {
  test(`define refuses: ${r.name}`, () => {
    const d = defineGraphText(r.text);
    assert.equal(d.ok, false, 'must be refused');
    if (d.ok) return;
    assert.equal(d.error.code, r.code ?? 'invalid_input');
    for (const re of r.says) assert.match(d.error.message, re);
    assert.ok(d.error.hint, 'a refusal says what to do');
  });
}

test("a graph's budget is over its calling run's own: refused at define (a graph spends out of its caller's budget)", () => {
  const text = doc(cmd('a'), 'budget: { tokens: 9000, cost_usd: 3 }\n');
  assert.ok(defineGraphText(text).ok, "the operator's graph has no caller budget");
  assert.ok(defineGraphText(text, { callerBudget: { tokens: 9000, costUsd: 3 } }).ok, 'exactly the caller\'s fits');
  const d = defineGraphText(text, { callerBudget: { tokens: 8000, costUsd: 2 } });
  assert.ok(!d.ok);
  assert.match(d.error.message, /budget.tokens 9000 is over the calling run's own token budget 8000/);
  assert.match(d.error.message, /budget.cost_usd 3 is over the calling run's own cost budget 2/);
});

test("a macro's budget is each run node's it makes; a node's wall budget is its attempt's timeout", () => {
  const d = defineGraphText(doc('  - id: v\n    kind: vote\n    spawn: { task: "vote {{voter}}", argv: ["true"] }\n    vote: { voters: [x, y], voter_kind: command, field: $.v, choices: [A, B] }\n    budget: { tokens: 100, wall_ms: 4000 }\n'));
  assert.ok(d.ok, d.ok ? '' : d.error.message);
  assert.deepEqual(d.value.expanded.map((n) => [n.id, n.budget?.tokens ?? null]), [['v.x', 100], ['v.y', 100], ['v', null]]);
  assert.equal(d.value.criticalPathMs, 4000);
});

test('define refuses over 200 nodes, and depth over maxSpawnDepth (depth_exceeded), naming the limits', () => {
  const many = doc(Array.from({ length: GRAPH_BOUNDS.nodes + 1 }, (_, i) => cmd(`n${i}`)).join(''));
  const d = defineGraphText(many);
  assert.ok(!d.ok && /201 nodes; the bound is 200/.test(d.error.message));
  const ok200 = defineGraphText(doc(Array.from({ length: GRAPH_BOUNDS.nodes }, (_, i) => cmd(`n${i}`)).join('')));
  assert.ok(ok200.ok, 'exactly 200 is allowed');
  const deep = defineGraphText(doc(cmd('a')), { callerDepth: 3, maxDepth: 3 });
  assert.ok(!deep.ok && deep.error.code === 'depth_exceeded');
  assert.deepEqual(deep.ok ? null : deep.error.data, { limit: 3, current: 4 });
});


// ── properties over random DAGs ──

/** A random DAG: node i may depend only on nodes before it (in a shuffled id order). */
const dagArb = fc
  .integer({ min: 1, max: 40 })
  .chain((n) =>
    fc.tuple(
      fc.constant(n),
      fc.array(fc.array(fc.nat({ max: 1000 }), { maxLength: 4 }), { minLength: n, maxLength: n }),
      fc.shuffledSubarray(Array.from({ length: n }, (_, i) => i), { minLength: n, maxLength: n }),
      fc.array(fc.integer({ min: 1, max: 10_000 }), { minLength: n, maxLength: n }),
    ),
  )
  .map(([n, picks, perm, timeouts]) => {
    const nodes = Array.from({ length: n }, (_, i) => ({
      id: `n${perm[i]}`,
      deps: i === 0 ? [] : [...new Set(picks[i]!.map((p) => `n${perm[p % i]}`))],
      timeout: timeouts[i]!,
    }));
    // Listed in a shuffled order, so the spec's order is not already topological.
    return fc.sample(fc.shuffledSubarray(nodes, { minLength: n, maxLength: n }), { numRuns: 1, seed: n })[0]!;
  });

function specOf(nodes: { id: string; deps: string[]; timeout: number }[]): GraphSpec {
  return {
    graph: 'brig/v1',
    inputs: {},
    concurrency: { max_parallel: 4 },
    on_failure: { policy: 'fail_fast' },
    on_restart: 'fail',
    budget: {},
    sinks: [],
    nodes: nodes.map((n) => ({ id: n.id, kind: 'command', depends_on: n.deps, when: 'all_succeeded', spawn: { task: 't', argv: ['true'], timeout_ms: n.timeout }, inputs: [], retry: { max: 0, on: ['failed'], idempotent: false } })),
  };
}

test('property: over random DAGs the order is topological, holds every node once, and define is deterministic', () => {
  fc.assert(
    fc.property(dagArb, (nodes) => {
      const d = defineGraph(specOf(nodes));
      assert.ok(d.ok, d.ok ? '' : d.error.message);
      const pos = new Map(d.value.order.map((id, i) => [id, i]));
      assert.equal(pos.size, nodes.length);
      for (const n of nodes) for (const dep of n.deps) assert.ok(pos.get(dep)! < pos.get(n.id)!, `${dep} before ${n.id}`);
      const again = defineGraph(specOf(nodes));
      assert.ok(again.ok);
      assert.deepEqual(again.value, d.value);
      // Depth is one more than the deepest dependency; the critical path is the longest chain of timeouts.
      const depth = new Map(d.value.nodes.map((x) => [x.id, x.depth]));
      const fin = new Map<string, number>();
      for (const id of d.value.order) {
        const n = nodes.find((x) => x.id === id)!;
        assert.equal(depth.get(id), n.deps.length === 0 ? 0 : Math.max(...n.deps.map((x) => depth.get(x)! + 1)));
        fin.set(id, Math.max(0, ...n.deps.map((x) => fin.get(x)!)) + n.timeout);
      }
      assert.equal(d.value.criticalPathMs, Math.max(...fin.values()));
    }),
    { numRuns: 200 },
  );
});

test('property: adding one back edge to a random DAG is refused as a cycle whose path is a real cycle', () => {
  fc.assert(
    fc.property(dagArb.filter((n) => n.some((x) => x.deps.length > 0)), fc.nat(), (nodes, k) => {
      const withDeps = nodes.filter((x) => x.deps.length > 0);
      const child = withDeps[k % withDeps.length]!;
      const parent = nodes.find((x) => x.id === child.deps[0])!;
      const cyclic = nodes.map((x) => (x.id === parent.id ? { ...x, deps: [...x.deps, child.id] } : x));
      const d = defineGraph(specOf(cyclic));
      assert.ok(!d.ok);
      const m = /cycle (.*)$/m.exec(d.error.message.split(' (and')[0]!);
      assert.ok(m, d.error.message);
      const path = m[1]!.split(' → ');
      assert.equal(path[0], path.at(-1), 'the path closes');
      const deps = new Map(cyclic.map((x) => [x.id, x.deps]));
      // Work flows along the path: each next node depends on the one before it.
      for (let i = 0; i + 1 < path.length; i++) assert.ok(deps.get(path[i + 1]!)!.includes(path[i]!), `${path[i + 1]} depends on ${path[i]}`);
    }),
    { numRuns: 150 },
  );
});

test('topoOrder breaks ties by the spec order (stable)', () => {
  assert.deepEqual(topoOrder([{ id: 'c', depends_on: [] }, { id: 'a', depends_on: [] }, { id: 'b', depends_on: ['c'] }]).order, ['c', 'a', 'b']);
});

test('the lease ceiling shapes each request: caps the ceiling\'s when a node names none, limits the smaller, the timeout its own else the ceiling\'s; the critical path counts it', () => {
  const d = defineGraphText(
    doc('  - id: a\n    kind: command\n    spawn: { task: t, argv: ["true"], limits: { memoryMb: 128 } }\n  - id: b\n    kind: command\n    depends_on: [a]\n    spawn: { task: t, argv: ["true"], caps: [exec], timeout_ms: 2000 }\n', 'lease: { caps: [exec, refs.read], limits: { memoryMb: 256, pids: 64 }, timeout_ms: 5000 }\n'),
  );
  assert.ok(d.ok, d.ok ? '' : d.error.message);
  const [a, b] = d.value.expanded;
  const ra = requestOf(d.value, a!, 'g-test0000');
  const rb = requestOf(d.value, b!, 'g-test0000', undefined, { tokens: 10 });
  assert.deepEqual([ra.caps, ra.limits, ra.timeout], [['exec', 'refs.read'], { memoryMb: 128, pids: 64 }, 5000]);
  assert.deepEqual([rb.caps, rb.limits, rb.timeout], [['exec'], { memoryMb: 256, pids: 64, tokens: 10 }, 2000]);
  assert.equal(d.value.criticalPathMs, 7000, 'a (the ceiling\'s 5000) then b (2000)');
  const none = defineGraphText(doc(cmd('a')));
  assert.ok(none.ok);
  assert.equal(requestOf(none.value, none.value.expanded[0]!, 'g-test0000').caps, undefined, 'no ceiling: the request names no caps (the profile decides)');
});

test('graph inputs that are refs: mounted only where declared, a map may read its items from one, macros hand them to every run node they make', () => {
  const ref = `ref_${'b'.repeat(26)}`;
  const d = defineGraphText(
    doc('  - id: a\n    kind: command\n    inputs: [{ from: $inputs.corpus, as: corpus }]\n    spawn: { task: t, argv: ["true"] }\n  - id: m\n    kind: map\n    map: { over: { from: $inputs.corpus }, max_items: 2, item_kind: command }\n    inputs: [{ from: $inputs.corpus, as: all }]\n    spawn: { task: "x {{item}}", argv: ["true"] }\n', `inputs:\n  corpus: { ref: ${ref} }\n  topic: { text: t }\n`),
  );
  assert.ok(d.ok, d.ok ? '' : d.error.message);
  const byId = new Map(d.value.expanded.map((n) => [n.id, n]));
  assert.deepEqual(byId.get('a')!.inputs, [{ from: '$inputs.corpus', as: 'corpus' }]);
  assert.deepEqual(byId.get('m.items')!.split!.over, { from: '$inputs.corpus' });
  assert.deepEqual([byId.get('m.0')!.inputs, byId.get('m.1')!.inputs], [[{ from: '$inputs.corpus', as: 'all' }], [{ from: '$inputs.corpus', as: 'all' }]]);
  assert.deepEqual(byId.get('m.items')!.depends_on, [], 'a graph input is no dependency');
});
