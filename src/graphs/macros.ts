/**
 * Macros → plain nodes, at define, pure and deterministic (golden-tested): every node a macro
 * makes is visible in define's answer, in status, in the envelope and in the ledger, with its
 * own lease, timeout, retries and end reason — no hidden driver escapes a per-node bound.
 *
 * - vote `p`: voters `p.<voter>` in parallel, blind to each other, and the tally `p`.
 * - map `m`: the split `m.items` (no jail: reads the items once, bounded, into the graph's own
 *   store), one slot `m.<i>` per possible item (max_items of them; a slot without an item ends
 *   skipped `no_item`) run with `{{item}}`, and the join `m`.
 * - map_reduce `m`: the same with the join `m.map`, then the reducer `m`, which sees every
 *   item's committed out/ read-only at /artifacts/<as>-<i>.
 * - refine `r`: rounds `r.r1…r.rN` in a chain, round k seeing round k−1's out/ at /artifacts/prev;
 *   collaborate: round k sees every earlier round's at /artifacts/r<j>. `stop_when` on a
 *   round's committed result skips the later rounds (`stopped_early`). The join `r` commits the
 *   last succeeded round.
 * - debate `d`: turns `d.r<k>.<side>`; round k's turns see every earlier turn's committed out/
 *   at /artifacts/r<j>-<side> (the transcript, read-only); then the synthesizer `d`, or a join `d`.
 *
 * Each expanded node keeps the macro's line. Problems of shape are said here.
 */
import {
  GRAPH_RUN_KINDS,
  graphInputOf,
  SPAWN_BOUNDS,
  type GraphNodeInput,
  type GraphNodeSpec,
  type GraphSpawn,
  type WhenPredicate,
} from '../protocol/index.js';
import type { NodeLines } from './spec.js';

/** A node that makes no run: this stands in its spawn's place. */
export const NO_SPAWN = { task: '(no run)' } as const;
const isRunKind = (k: string): k is (typeof GRAPH_RUN_KINDS)[number] => (GRAPH_RUN_KINDS as readonly string[]).includes(k);
const NO_RETRY = { max: 0, on: ['failed'], idempotent: true } as GraphNodeSpec['retry'];

/** The fields each written kind may carry (besides id, kind, depends_on, when, inputs, retry). */
const FIELDS: Record<GraphNodeInput['kind'], readonly string[]> = {
  agent: ['spawn'],
  script: ['spawn'],
  command: ['spawn'],
  tally: ['tally'],
  gate: ['gate'],
  vote: ['vote', 'spawn'],
  map: ['map', 'spawn'],
  map_reduce: ['map', 'reduce', 'spawn'],
  refine: ['rounds', 'spawn'],
  collaborate: ['rounds', 'spawn'],
  debate: ['debate', 'spawn'],
};
const OPTIONAL = ['spawn', 'tally', 'gate', 'vote', 'map', 'reduce', 'rounds', 'debate'] as const;

const fill = (s: GraphSpawn, vars: Record<string, string>): GraphSpawn => ({
  ...s,
  task: s.task.replace(/\{\{\s*(voter|round|side)\s*\}\}/g, (m, k: string) => vars[k] ?? m),
});
const results = (ids: readonly string[]): WhenPredicate => ({ results: Object.fromEntries(ids.map((d) => [d, 'succeeded' as const])) });

type Problem = { at: number; text: string; hint?: string };

export function expand(nodes: readonly GraphNodeInput[], lines: NodeLines): { nodes: GraphNodeSpec[]; lines: NodeLines; problems: Problem[] } {
  const out: GraphNodeSpec[] = [];
  const outLines: NodeLines = [];
  const problems: Problem[] = [];
  nodes.forEach((n, i) => {
    const push = (x: GraphNodeSpec) => {
      // A node's budget is each run node's it makes (a macro's voters, slots, rounds, turns, reducer).
      if (n.budget && isRunKind(x.kind)) x.budget = n.budget;
      if (n.context && isRunKind(x.kind)) x.context = n.context;
      out.push(x);
      outLines.push(lines[i]);
    };
    const say = (text: string, hint?: string) => problems.push({ at: i, text, ...(hint ? { hint } : {}) });
    const extra = OPTIONAL.filter((f) => n[f] !== undefined && !FIELDS[n.kind].includes(f));
    const runsNothing = n.kind === 'gate' || n.kind === 'tally' ? ' runs nothing: it' : '';
    if (extra.length > 0) say(`a ${n.kind} node${runsNothing} takes no ${extra.join(', ')}`, `A ${n.kind} node takes ${FIELDS[n.kind].join(', ')}.`);
    if (n.budget && (n.kind === 'gate' || n.kind === 'tally')) say(`a ${n.kind} runs nothing: it takes no budget`);
    if (n.context && (n.kind === 'gate' || n.kind === 'tally')) say(`a ${n.kind} runs nothing: it takes no context`);
    for (const d of n.context?.summaries_of ?? []) if (!n.depends_on.includes(d)) say(`context.summaries_of names ${d}, which is not in its depends_on`, 'A node is told only of nodes it waits for.');
    if (n.context && new Set(n.context.summaries_of).size !== n.context.summaries_of.length) say('context.summaries_of names a node twice');
    const missing = FIELDS[n.kind].filter((f) => n[f as (typeof OPTIONAL)[number]] === undefined);
    if (missing.length > 0) return say(`a ${n.kind} node needs ${missing.join(' and ')}${n.kind === 'vote' || n.kind.startsWith('map') || n.kind === 'refine' || n.kind === 'collaborate' || n.kind === 'debate' ? ' (spawn is the template of the nodes it makes)' : ''}`, 'docs/graphs.md has each kind\'s fields.');
    const base = { depends_on: n.depends_on, when: n.when, inputs: n.inputs, retry: n.retry };
    if (isRunKind(n.kind)) return push({ id: n.id, kind: n.kind, ...base, spawn: n.spawn! });
    if (n.kind === 'gate') {
      if (n.inputs.length > 0) say('a gate takes no inputs');
      if (n.retry.max > 0) say('a gate takes no retry: an operator decides it once');
      for (const d of n.gate!.show ?? []) if (!n.depends_on.includes(d)) say(`gate.show names ${d}, which is not in its depends_on`, 'A gate shows only the results of nodes it waits for.');
      return push({ id: n.id, kind: 'gate', ...base, spawn: NO_SPAWN, gate: n.gate! });
    }
    if (n.kind === 'tally') {
      if (n.inputs.length > 0) say("a tally node reads its dependencies' ballots: it takes no inputs");
      if (n.retry.max > 0) say('a tally is a pure count: it takes no retry');
      return push({ id: n.id, kind: 'tally', ...base, spawn: NO_SPAWN, tally: n.tally! });
    }
    const spawn = n.spawn!;
    const macro = { macro_of: n.id };
    if (n.kind === 'vote') {
      const { voters, voter_kind, ...tally } = n.vote!;
      if (new Set(voters).size !== voters.length) say('two voters have one name');
      const ids = voters.map((v) => `${n.id}.${v}`);
      voters.forEach((v, k) => push({ id: ids[k]!, kind: voter_kind, ...macro, ...base, spawn: fill(spawn, { voter: v }) }));
      return push({ id: n.id, kind: 'tally', ...macro, depends_on: ids, when: 'all_done', spawn: NO_SPAWN, inputs: [], retry: NO_RETRY, tally });
    }
    if (n.kind === 'map' || n.kind === 'map_reduce') {
      const m = n.map!;
      const over = m.over;
      if ('items' in over && over.items.length > m.max_items) say(`map lists ${over.items.length} items; max_items is ${m.max_items}`, 'Raise max_items (≤ 100) or split the list: items are never dropped.');
      if ('from' in over && graphInputOf(over.from) === null && !n.depends_on.includes(over.from)) say(`map.over.from names ${over.from}, which is not in its depends_on`, 'Add it to depends_on: the items are read from its committed out/.');
      if (spawn.task.length + m.item_max_bytes > SPAWN_BOUNDS.taskChars) say(`the template (${spawn.task.length} characters) with an item of item_max_bytes ${m.item_max_bytes} would be over the task bound ${SPAWN_BOUNDS.taskChars}`);
      if (!/\{\{\s*item\s*\}\}/.test(spawn.task)) say('a map template names no {{item}}', 'Each slot runs the template with its item in place of {{item}}.');
      const split = `${n.id}.items`;
      const slots = Array.from({ length: 'items' in over ? over.items.length : m.max_items }, (_, k) => `${n.id}.${k}`);
      push({ id: split, kind: 'split', ...macro, depends_on: n.depends_on, when: n.when, spawn: NO_SPAWN, inputs: [], retry: NO_RETRY, split: { over, max_items: m.max_items, item_max_bytes: m.item_max_bytes, slots } });
      slots.forEach((s, k) => push({ id: s, kind: m.item_kind, ...macro, depends_on: [split, ...n.depends_on], when: results([split]), inputs: n.inputs, retry: n.retry, spawn, item: { split, index: k } }));
      const join = n.kind === 'map' ? n.id : `${n.id}.map`;
      push({ id: join, kind: 'join', ...macro, depends_on: [split, ...slots], when: 'all_done', spawn: NO_SPAWN, inputs: [], retry: NO_RETRY, join: { mode: 'items', split } });
      if (n.kind === 'map_reduce') {
        const r = n.reduce!;
        push({ id: n.id, kind: r.kind, ...macro, depends_on: [join], when: 'all_succeeded', inputs: [{ from: join, as: r.as }], retry: n.retry, spawn: r.spawn });
      }
      return;
    }
    if (n.kind === 'refine' || n.kind === 'collaborate') {
      const r = n.rounds!;
      const ids = Array.from({ length: r.count }, (_, k) => `${n.id}.r${k + 1}`);
      ids.forEach((id, k) => {
        const earlier = n.kind === 'refine' ? ids.slice(Math.max(0, k - 1), k) : ids.slice(0, k);
        const inputs = [...n.inputs, ...earlier.map((e, j) => ({ from: e, as: n.kind === 'refine' ? 'prev' : `r${j + 1}` }))];
        push({
          id,
          kind: r.round_kind,
          ...macro,
          depends_on: [...n.depends_on, ...earlier],
          when: k === 0 ? n.when : results([ids[k - 1]!]),
          inputs,
          retry: n.retry,
          spawn: fill(spawn, { round: String(k + 1) }),
          ...(r.stop_when && k < ids.length - 1 ? { stop: { when: r.stop_when, later: ids.slice(k + 1) } } : {}),
        });
      });
      return push({ id: n.id, kind: 'join', ...macro, depends_on: ids, when: 'all_done', spawn: NO_SPAWN, inputs: [], retry: NO_RETRY, join: { mode: 'last' } });
    }
    // debate
    const d = n.debate!;
    if (new Set(d.sides).size !== d.sides.length) say('two sides have one name');
    const turn = (k: number, side: string) => `${n.id}.r${k}.${side}`;
    const names: Record<string, string> = {};
    const turns: string[] = [];
    for (let k = 1; k <= d.rounds; k++) {
      const prev = d.sides.map((s) => turn(k - 1, s));
      for (const side of d.sides) {
        const id = turn(k, side);
        push({
          id,
          kind: d.side_kind,
          ...macro,
          depends_on: [...n.depends_on, ...turns],
          when: k === 1 ? n.when : results(prev),
          inputs: [...n.inputs, ...turns.map((t) => ({ from: t, as: names[t]! }))],
          retry: n.retry,
          spawn: fill(spawn, { side, round: String(k) }),
        });
        names[id] = `r${k}-${side}`;
      }
      turns.push(...d.sides.map((s) => turn(k, s)));
    }
    if (d.synthesizer) {
      return push({ id: n.id, kind: d.synthesizer.kind, ...macro, depends_on: turns, when: 'all_succeeded', inputs: turns.map((t) => ({ from: t, as: names[t]! })), retry: n.retry, spawn: d.synthesizer.spawn });
    }
    push({ id: n.id, kind: 'join', ...macro, depends_on: turns, when: 'all_done', spawn: NO_SPAWN, inputs: [], retry: NO_RETRY, join: { mode: 'all', names } });
  });
  return { nodes: out, lines: outLines, problems };
}
