/**
 * Define time (pure): a parsed spec becomes a definition — the topological order and the
 * nodes as they will run — or every refusal, each with the node's line.
 *
 * Refused: unknown and duplicate ids, self and repeated dependencies, cycles (the path in the
 * message), `inputs`/`when` naming a node outside `depends_on`, a `when` that can never hold,
 * a placeholder other than `{{inputs.<name>}}` or naming an unknown input, spawn fields that
 * do not fit the kind, bounds (nodes ≤ 200), depth (caller depth + 1 ≤ maxDepth), and a
 * critical path (the longest chain of node timeouts × attempts) over `budget.wall_ms`.
 * Nothing is clamped or raised silently.
 */
import { createHash } from 'node:crypto';
import { GRAPH_BOUNDS, graphInputOf, type GraphDefinition, type GraphNodeSpec, type GraphSpec, type TallySpec } from '../protocol/index.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { nearest } from '../util/nearest.js';
import { expand } from './macros.js';
import { parseGraphSpec, specError, type NodeLines } from './spec.js';

export interface DefineOptions {
  /** The caller's depth (0 for the operator): nodes sit at callerDepth + 1. */
  callerDepth?: number;
  /** The supervisor's maxSpawnDepth (default 3). */
  maxDepth?: number;
  /** A node's timeout when its spawn names none (the supervisor's default run timeout). */
  defaultTimeoutMs?: number;
  /** Names the spec in errors (a file name). */
  source?: string;
  /** A run calling (graph_run): its lease's token and cost budgets — the graph's budget spends out of them, so it may not be larger. */
  callerBudget?: { tokens?: number; costUsd?: number };
}

const PLACEHOLDER = /\{\{\s*([^}]*?)\s*\}\}/g;

/** The deterministic topological order: Kahn's algorithm, ties broken by the spec's order. */
export function topoOrder(nodes: readonly Pick<GraphNodeSpec, 'id' | 'depends_on'>[]): { order: string[]; cycle: string[] | null } {
  const index = new Map(nodes.map((n, i) => [n.id, i]));
  const indeg = nodes.map((n) => new Set(n.depends_on).size);
  const out = nodes.map(() => [] as number[]);
  nodes.forEach((n, i) => new Set(n.depends_on).forEach((d) => out[index.get(d)!]!.push(i)));
  const ready = indeg.flatMap((d, i) => (d === 0 ? [i] : []));
  const order: string[] = [];
  while (ready.length > 0) {
    ready.sort((a, b) => a - b);
    const i = ready.shift()!;
    order.push(nodes[i]!.id);
    for (const j of out[i]!) if (--indeg[j]! === 0) ready.push(j);
  }
  return { order, cycle: order.length === nodes.length ? null : findCycle(nodes) };
}

/** One cycle's path (`a → b → a`), by depth-first search. */
function findCycle(nodes: readonly Pick<GraphNodeSpec, 'id' | 'depends_on'>[]): string[] {
  const deps = new Map(nodes.map((n) => [n.id, n.depends_on]));
  const color = new Map<string, 0 | 1 | 2>();
  const stack: string[] = [];
  let found: string[] | null = null;
  const visit = (id: string): void => {
    if (found) return;
    color.set(id, 1);
    stack.push(id);
    for (const d of deps.get(id) ?? []) {
      if (found) return;
      const c = color.get(d) ?? 0;
      if (c === 1) {
        found = [...stack.slice(stack.indexOf(d)), d];
        return;
      }
      if (c === 0) visit(d);
    }
    stack.pop();
    color.set(id, 2);
  };
  for (const n of nodes) if ((color.get(n.id) ?? 0) === 0) visit(n.id);
  // Edges point to dependencies: read it the way work flows.
  return (found ?? []).reverse();
}

/** The nodes nothing depends on, in order. */
export function leaves(nodes: readonly Pick<GraphNodeSpec, 'id' | 'depends_on'>[]): string[] {
  const used = new Set(nodes.flatMap((n) => n.depends_on));
  return nodes.filter((n) => !used.has(n.id)).map((n) => n.id);
}

function tallyProblems(t: TallySpec, deps: number): string[] {
  const p: string[] = [];
  if (new Set(t.choices).size !== t.choices.length) p.push('tally choices repeat');
  if (t.min_valid > deps) p.push(`tally min_valid ${t.min_valid} can never be met: ${deps} voter(s)`);
  if (typeof t.rule === 'object' && t.rule.quorum > deps) p.push(`tally quorum ${t.rule.quorum} can never be met: ${deps} voter(s)`);
  if (deps === 0) p.push('a tally needs at least one voter in depends_on');
  return p;
}

/** Node timeout (ms) as the supervisor will bound it: the spawn's, else its budget's wall time, else the lease ceiling's, else the default. */
const timeoutOf = (n: GraphNodeSpec, dflt: number, ceiling?: number) => n.spawn.timeout_ms ?? n.budget?.wall_ms ?? ceiling ?? dflt;

const LIMIT_KEYS = ['cpu', 'memoryMb', 'pids', 'diskMb', 'tokens', 'costUsd'] as const;

/**
 * A run node's ask against the graph's lease ceiling: caps outside it, a command or script node
 * under a ceiling without `exec`, limits or a timeout over it. Refused, never narrowed silently
 * (the caller's own lease still attenuates each node's as any spawn's: caller ∩ ask).
 */
function leaseProblems(spec: GraphSpec, n: GraphNodeSpec): { text: string; hint?: string }[] {
  const p: { text: string; hint?: string }[] = [];
  const c = spec.lease;
  const s = n.spawn;
  if (c?.caps) {
    const over = (s.caps ?? []).filter((x) => !c.caps!.includes(x));
    if (over.length > 0) p.push({ text: `spawn.caps ${over.join(', ')} ${over.length > 1 ? 'are' : 'is'} outside the graph's lease ceiling (${c.caps.join(', ') || 'none'})`, hint: 'A node asks for at most the ceiling\'s capabilities: drop them, or widen lease.caps.' });
    if ((n.kind === 'command' || n.kind === 'script') && !c.caps.includes('exec')) p.push({ text: `a ${n.kind} node runs its own code, which needs exec: the graph's lease ceiling does not grant it`, hint: 'Add exec to lease.caps, or make the node an agent.' });
  }
  for (const k of LIMIT_KEYS) {
    const max = c?.limits?.[k];
    const asked = s.limits?.[k];
    if (max !== undefined && asked !== undefined && asked > max) p.push({ text: `spawn.limits.${k} ${asked} is over the graph's lease ceiling ${max}`, hint: `Ask for at most ${max}, or raise lease.limits.${k}.` });
  }
  const t = s.timeout_ms ?? n.budget?.wall_ms;
  if (c?.timeout_ms !== undefined && t !== undefined && t > c.timeout_ms) p.push({ text: `its timeout ${t} ms is over the graph's lease ceiling timeout_ms ${c.timeout_ms}` });
  return p;
}

const RUN_KINDS: readonly string[] = ['agent', 'script', 'command'];

/** Budgets that cannot fit (define time): a node's over the graph's, a timeout over its wall, fewer node runs allowed than nodes, a graph's over its caller's. */
function budgetProblems(spec: GraphSpec, nodes: readonly GraphNodeSpec[], o: DefineOptions): { at: number | null; text: string; hint?: string }[] {
  const b = spec.budget;
  const p: { at: number | null; text: string; hint?: string }[] = [];
  nodes.forEach((n, i) => {
    const nb = n.budget;
    if (!nb) return;
    if (nb.tokens !== undefined && b.tokens !== undefined && nb.tokens > b.tokens) p.push({ at: i, text: `budget.tokens ${nb.tokens} is over the graph's budget.tokens ${b.tokens}`, hint: 'A node reserves its budget out of the graph\'s: give it at most the graph\'s.' });
    if (nb.cost_usd !== undefined && b.cost_usd !== undefined && nb.cost_usd > b.cost_usd) p.push({ at: i, text: `budget.cost_usd ${nb.cost_usd} is over the graph's budget.cost_usd ${b.cost_usd}` });
    if (nb.wall_ms !== undefined && n.spawn.timeout_ms !== undefined && n.spawn.timeout_ms > nb.wall_ms) p.push({ at: i, text: `spawn.timeout_ms ${n.spawn.timeout_ms} is over its budget.wall_ms ${nb.wall_ms}`, hint: 'Drop spawn.timeout_ms (the budget\'s wall time is the attempt\'s timeout) or make it fit.' });
  });
  const runs = nodes.filter((n) => RUN_KINDS.includes(n.kind)).length;
  if (b.children !== undefined && runs > b.children) p.push({ at: null, text: `budget.children ${b.children} cannot run every node once: the graph has ${runs} run node(s)${nodes.some((n) => n.item) ? ' (a map counts max_items slots)' : ''}`, hint: `Raise budget.children to at least ${runs}.` });
  const c = o.callerBudget;
  if (c?.tokens !== undefined && b.tokens !== undefined && b.tokens > c.tokens) p.push({ at: null, text: `budget.tokens ${b.tokens} is over the calling run's own token budget ${c.tokens}`, hint: 'A graph spends out of its caller\'s budget: ask for at most what the caller has.' });
  if (c?.costUsd !== undefined && b.cost_usd !== undefined && b.cost_usd > c.costUsd) p.push({ at: null, text: `budget.cost_usd ${b.cost_usd} is over the calling run's own cost budget ${c.costUsd}` });
  return p;
}

export function defineGraph(spec: GraphSpec, specLines: NodeLines = [], o: DefineOptions = {}): Result<GraphDefinition, BrigError> {
  const source = o.source ?? 'graph';
  const problems: { text: string; hint?: string }[] = [];
  const inputLine = (i: number) => `${source}${specLines[i] ? `:${specLines[i]}` : ''}`;
  // Duplicates among the ids as written first (an expanded id holds a `.`, which no written id can).
  const seen = new Map<string, number>();
  spec.nodes.forEach((n, i) => {
    if (seen.has(n.id)) problems.push({ text: `${inputLine(i)}: node ${n.id}: duplicate id (first at ${inputLine(seen.get(n.id)!)})`, hint: 'Give every node its own id.' });
    else seen.set(n.id, i);
  });
  const ex = expand(spec.nodes, specLines);
  for (const p of ex.problems) problems.push({ text: `${inputLine(p.at)}: node ${spec.nodes[p.at]!.id}: ${p.text}`, ...(p.hint ? { hint: p.hint } : {}) });
  if (problems.length > 0) return err(specError(source, problems));
  const nodes = ex.nodes;
  const lines = ex.lines;
  const lineOfNode = (i: number) => `${source}${lines[i] ? `:${lines[i]}` : ''}`;
  const add = (i: number, text: string, hint?: string) => problems.push({ text: `${lineOfNode(i)}: node ${nodes[i]!.id}: ${text}`, ...(hint ? { hint } : {}) });

  if (nodes.length > GRAPH_BOUNDS.nodes) {
    return err(specError(source, [{ text: `${source}: ${nodes.length} nodes${nodes.length !== spec.nodes.length ? ' after expansion' : ''}; the bound is ${GRAPH_BOUNDS.nodes}`, hint: 'Split the work into several graphs.' }]));
  }
  const first = new Map<string, number>();
  nodes.forEach((n, i) => {
    if (first.has(n.id)) add(i, `duplicate id (first at ${lineOfNode(first.get(n.id)!)})`, 'Give every node its own id.');
    else first.set(n.id, i);
  });
  const ids = [...first.keys()];
  const kindOf = new Map(nodes.map((n) => [n.id, n.kind]));
  const byIdAll = new Map(nodes.map((n) => [n.id, n]));
  // The longest name an input from this node takes under /artifacts beyond its `as` (a join with parts mounts `<as>-<name>` each).
  const partSuffix = (from: string): number | null => {
    const j = byIdAll.get(from)?.join;
    if (!j || j.mode === 'last') return null;
    if (j.mode === 'items') return 1 + String(byIdAll.get(j.split!)!.split!.slots.length - 1).length;
    return 1 + Math.max(...Object.values(j.names ?? {}).map((x) => x.length));
  };
  nodes.forEach((n, i) => {
    const deps = new Set<string>();
    for (const d of n.depends_on) {
      if (d === n.id) add(i, 'depends on itself');
      else if (!first.has(d)) {
        const near = nearest(d, ids);
        add(i, `depends_on names unknown node ${d}`, near ? `Did you mean "${near}"?` : `Known nodes: ${ids.slice(0, 20).join(', ')}`);
      } else if (deps.has(d)) add(i, `depends_on names ${d} twice`);
      deps.add(d);
    }
    const w = n.when;
    if (typeof w === 'object' && 'results' in w) {
      for (const k of Object.keys(w.results)) if (!deps.has(k)) add(i, `when names ${k}, which is not in its depends_on`, 'A predicate may only look at the node\'s own dependencies.');
    }
    if (typeof w === 'object' && 'quorum' in w && w.quorum > deps.size) add(i, `when quorum ${w.quorum} can never hold: it depends on ${deps.size} node(s)`);
    if (w === 'any_succeeded' && deps.size === 0) add(i, 'when any_succeeded can never hold: it depends on nothing');
    const as = new Set<string>();
    for (const inp of n.inputs) {
      const input = graphInputOf(inp.from);
      if (input !== null) {
        const v = spec.inputs[input];
        if (!v) add(i, `input ${inp.as} is from $inputs.${input}, which names no graph input`, `Known inputs: ${Object.keys(spec.inputs).join(', ') || 'none'}`);
        else if (!('ref' in v)) add(i, `input ${inp.as} is from $inputs.${input}, a text input`, `A text input goes into a task as {{inputs.${input}}}; only a ref input is mounted.`);
        if (as.has(inp.as)) add(i, `two inputs are named ${inp.as}`);
        as.add(inp.as);
        continue;
      }
      if (!deps.has(inp.from)) add(i, `input ${inp.as} is from ${inp.from}, which is not in its depends_on`, 'Add it to depends_on: a node sees only the outputs of nodes it waits for.');
      if (kindOf.get(inp.from) === 'gate') add(i, `input ${inp.as} is from ${inp.from}, a gate: it commits no out/`, 'Depend on it with when.');
      if (kindOf.get(inp.from) === 'tally') add(i, `input ${inp.as} is from ${inp.from}, a tally: it commits no out/`, 'Its count is in the envelope and the manifest; depend on it with when.');
      if (kindOf.get(inp.from) === 'split') add(i, `input ${inp.as} is from ${inp.from}, a map's split: it commits no out/`);
      const suffix = partSuffix(inp.from);
      if (suffix !== null && inp.as.length + suffix > 48) add(i, `input ${inp.as} from ${inp.from} mounts ${inp.as}-<name> names over 48 characters`, `Give it a name of at most ${48 - suffix} characters.`);
      if (as.has(inp.as)) add(i, `two inputs are named ${inp.as}`);
      as.add(inp.as);
    }
    for (const d of n.context?.summaries_of ?? []) {
      const k = kindOf.get(d);
      if (k === 'gate' || k === 'tally' || k === 'split' || partSuffix(d) !== null) add(i, `context.summaries_of names ${d}, a ${k === 'join' ? `${byIdAll.get(d)!.macro_of ? 'macro' : 'join'} with several parts` : k} with no single committed result`, 'Name a node that runs (or a refine, a map_reduce, a debate with a synthesizer).');
    }
    if (n.kind === 'tally') {
      for (const p of tallyProblems(n.tally!, deps.size)) add(i, p);
      return;
    }
    if (n.kind === 'gate') {
      for (const d of n.gate!.show ?? []) {
        const k = kindOf.get(d);
        if (k === 'gate' || k === 'split' || partSuffix(d) !== null) add(i, `gate.show names ${d}, a ${k === 'join' ? 'macro with several parts' : k} with no single result to show`, 'Show a node that runs, a tally, or a refine/map_reduce/debate with a synthesizer.');
      }
      return;
    }
    if (n.kind === 'join') return;
    if (n.kind === 'split') {
      const over = n.split!.over;
      const input = 'from' in over ? graphInputOf(over.from) : null;
      if (input !== null) {
        const v = spec.inputs[input];
        if (!v || !('ref' in v)) add(i, `map.over.from names $inputs.${input}, which is ${v ? 'a text input' : 'no graph input'}`, 'Give the items as a graph input that is a ref of a JSONL or JSON-array file ({ ref: ref_… }).');
        return;
      }
      const k = 'from' in over ? kindOf.get(over.from) : undefined;
      if (k === 'tally' || k === 'gate' || k === 'split' || ('from' in over && partSuffix(over.from) !== null)) add(i, `map.over.from names ${'from' in over ? over.from : ''}, a ${k} with no single committed out/`, 'Read the items from a node that writes them (out/items.jsonl).');
      return;
    }
    const s = n.spawn;
    if (n.kind === 'command' && (!s.argv || s.script !== undefined)) add(i, 'a command node needs spawn.argv and no spawn.script');
    if (n.kind === 'script' && (!s.script || s.argv !== undefined)) add(i, 'a script node needs spawn.script and no spawn.argv');
    if (n.kind === 'agent' && (s.script !== undefined || s.argv !== undefined)) add(i, 'an agent node takes no spawn.script or spawn.argv');
    if (n.kind !== 'agent' && (s.model !== undefined || s.max_steps !== undefined)) add(i, `a ${n.kind} node takes no spawn.model or spawn.max_steps`);
    for (const m of s.task.matchAll(PLACEHOLDER)) {
      const inner = m[1]!;
      const name = /^inputs\.([a-z][a-z0-9_-]{0,47})$/.exec(inner)?.[1];
      if (inner === 'item' && n.item) continue;
      if (!name) add(i, `task placeholder {{${inner.slice(0, 40)}}} is not {{inputs.<name>}}`, 'Only graph text inputs are interpolated; upstream outputs are files under /artifacts.');
      else if (!spec.inputs[name]) add(i, `task placeholder {{inputs.${name}}} names no graph input`, `Known inputs: ${Object.keys(spec.inputs).join(', ') || 'none'}`);
      else if ('ref' in spec.inputs[name]) add(i, `task placeholder {{inputs.${name}}} names a ref input: a ref is never spliced into a task`, `Declare it as an input ({ from: $inputs.${name}, as: ${name} }): it is mounted at /artifacts/${name}.`);
    }
    for (const text of leaseProblems(spec, n)) add(i, text.text, text.hint);
  });
  for (const s of spec.sinks) if (!first.has(s)) problems.push({ text: `${source}: sinks names unknown node ${s}` });
  for (const b of budgetProblems(spec, nodes, o)) {
    if (b.at === null) problems.push({ text: `${source}: ${b.text}`, ...(b.hint ? { hint: b.hint } : {}) });
    else add(b.at, b.text, b.hint);
  }
  if (problems.length > 0) return err(specError(source, problems));

  const { order, cycle } = topoOrder(nodes);
  if (cycle) {
    const i = first.get(cycle[0]!)!;
    return err(specError(source, [{ text: `${lineOfNode(i)}: cycle ${cycle.join(' → ')}`, hint: 'A graph has no cycles: unroll repeated work into separate nodes.' }]));
  }
  const callerDepth = o.callerDepth ?? 0;
  const maxDepth = o.maxDepth ?? 3;
  if (callerDepth + 1 > maxDepth) {
    return err(new BrigError('depth_exceeded', `graph nodes would sit at depth ${callerDepth + 1}, over maxSpawnDepth ${maxDepth}`, { data: { limit: maxDepth, current: callerDepth + 1 } }));
  }

  // Levels and the critical path (longest chain of timeouts × attempts), in topological order.
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const level = new Map<string, number>();
  const finish = new Map<string, number>();
  const dflt = o.defaultTimeoutMs ?? 600_000;
  for (const id of order) {
    const n = byId.get(id)!;
    level.set(id, Math.max(0, ...n.depends_on.map((d) => level.get(d)! + 1)));
    finish.set(id, Math.max(0, ...n.depends_on.map((d) => finish.get(d)!)) + (n.kind === 'tally' || n.kind === 'split' || n.kind === 'join' ? 0 : n.kind === 'gate' ? n.gate!.timeout_ms : timeoutOf(n, dflt, spec.lease?.timeout_ms) * (n.retry.max + 1)));
  }
  const criticalPathMs = Math.max(...finish.values());
  if (spec.budget.wall_ms !== undefined && criticalPathMs > spec.budget.wall_ms) {
    return err(specError(source, [{
      text: `${source}: the critical path needs up to ${criticalPathMs} ms (node timeouts × attempts along the longest chain); budget.wall_ms is ${spec.budget.wall_ms}`,
      hint: `Raise budget.wall_ms to at least ${criticalPathMs}, or give the nodes on the chain shorter timeout_ms.`,
    }]));
  }
  return ok({
    spec,
    specHash: createHash('sha256').update(JSON.stringify(spec)).digest('hex'),
    order,
    nodes: order.map((id) => {
      const n = byId.get(id)!;
      return { id, kind: n.kind, ...(n.macro_of ? { macro_of: n.macro_of } : {}), depends_on: [...n.depends_on], depth: level.get(id)! };
    }),
    expanded: nodes,
    sinks: spec.sinks.length > 0 ? [...spec.sinks] : leaves(nodes),
    criticalPathMs,
  });
}

/** Text (YAML or JSON) → a definition: the schema, then the graph's own checks. */
export function defineGraphText(text: string, o: DefineOptions = {}): Result<GraphDefinition, BrigError> {
  const parsed = parseGraphSpec(text, o.source);
  if (!parsed.ok) return parsed;
  return defineGraph(parsed.value.spec, parsed.value.lines, o);
}

/** A node's task with its `{{inputs.<name>}}` placeholders filled (define checked every one). */
export function taskOf(spec: Pick<GraphSpec, 'inputs'>, n: Pick<GraphNodeSpec, 'spawn'>, item?: string): string {
  return n.spawn.task.replace(PLACEHOLDER, (_m, inner: string) => {
    if (inner === 'item' && item !== undefined) return item;
    const v = spec.inputs[inner.slice('inputs.'.length)];
    return v && 'text' in v ? v.text : '';
  });
}
