import fs from 'node:fs';
import os from 'node:os';
import { BrigError } from '../../util/errors.js';
import type { Brig, GraphRecord, GraphSurface } from '../../index.js';
import { JSON_FLAG, parseArgs, writeJson, type CliIO, type Command } from '../command.js';
import { openBrig } from '../connect.js';

/** A spec file's text (`-` reads stdin). */
export function readSpec(file: string | undefined, usage: string): { text: string; source: string } {
  if (!file) throw new BrigError('invalid_input', 'missing the graph spec FILE', { hint: `Usage: ${usage}` });
  try {
    return { text: fs.readFileSync(file === '-' ? 0 : file, 'utf8'), source: file === '-' ? 'stdin' : file };
  } catch (e) {
    throw new BrigError('invalid_input', `cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { hint: 'Name a YAML or JSON file with `graph: brig/v1`.' });
  }
}

export function needGraph(p: { positionals: string[] }, usage: string): string {
  if (p.positionals.length !== 1) throw new BrigError('invalid_input', 'name exactly one GRAPH', { hint: `Usage: ${usage}` });
  return p.positionals[0]!;
}

/**
 * The graphs this command talks to: the daemon's when one answers; else the home's graph
 * records read-only (a graph run without a daemon lives in the `brig graph run` that started it).
 */
export async function withGraphs<T>(io: CliIO, fn: (g: GraphSurface, where: 'daemon' | 'local' | 'read') => Promise<T>): Promise<T> {
  const brig: Brig = await openBrig(io);
  try {
    if (brig.graphs) return await fn(brig.graphs, brig.mode);
    const { GraphStore, brigPaths, loadConfig } = await import('../../index.js');
    const store = new GraphStore(brigPaths(loadConfig(io.env).home).graphs);
    return await fn(readOnlyGraphs(store), 'read');
  } finally {
    await brig.close();
  }
}

/** The graph records on disk, read-only: status and a polling wait; define and run need a supervisor, cancel its owner. */
function readOnlyGraphs(store: InstanceType<typeof import('../../index.js').GraphStore>): GraphSurface {
  const status: GraphSurface['status'] = async (id) => {
    const rec = await store.load(id);
    return rec ? { ok: true, value: rec } : { ok: false, error: new BrigError('graph_not_found', `no graph ${id}`, { data: { graphId: id } }) };
  };
  const elsewhere = () => new BrigError('daemon_unavailable', 'no daemon answers: a graph runs in the `brig graph run` that started it', { hint: 'Cancel it there (Ctrl-C), or run graphs through `brig serve`.' });
  return {
    define: async () => ({ ok: false, error: elsewhere() }),
    run: async () => ({ ok: false, error: elsewhere() }),
    status,
    async wait(id, o = {}) {
      const deadline = o.timeoutMs !== undefined ? Date.now() + o.timeoutMs : Infinity;
      for (;;) {
        const s = await status(id);
        if (!s.ok || s.value.state !== 'running' || Date.now() >= deadline || o.signal?.aborted) return s;
        await new Promise((r) => setTimeout(r, 500));
      }
    },
    cancel: async () => ({ ok: false, error: elsewhere() }),
    decide: async () => ({ ok: false, error: elsewhere() }),
    // From the record and the spec kept with it; the leases are the daemon's to read (null here).
    async explain(id) {
      const s = await status(id);
      if (!s.ok) return s;
      const { definitionOf, explainGraph } = await import('../../index.js');
      const def = await definitionOf(store, id);
      return def.ok ? { ok: true, value: explainGraph(s.value, def.value) } : def;
    },
    async list() {
      const out: GraphRecord[] = [];
      for (const id of await store.ids()) {
        const r = await store.load(id).catch(() => undefined);
        if (r) out.push(r);
      }
      return out;
    },
  };
}

/** One line per node: id, kind, state, attempts, the last attempt's run. */
export function graphLines(rec: GraphRecord): string {
  const w = Math.max(4, ...rec.nodes.map((n) => n.id.length));
  const head = `${rec.id}  ${rec.state}${rec.endReason && rec.endReason !== rec.state ? ` (${rec.endReason})` : ''}  ${rec.label ?? ''}`.trimEnd();
  const lines = rec.nodes.map((n) => {
    const a = n.attempts.at(-1);
    return [n.id.padEnd(w), n.kind.padEnd(7), n.state.padEnd(9), `a${n.attempts.length}`, a?.runId ?? (n.skipReason ? `(${n.skipReason})` : a?.errorCode ?? '')].join('  ').trimEnd();
  });
  return [head, ...lines].join('\n') + '\n';
}

/** The operator deciding or submitting, as this machine names them. */
export function operatorName(): string {
  try {
    return os.userInfo().username || 'operator';
  } catch {
    return 'operator';
  }
}

/** `brig graph approve|reject GRAPH NODE [--note]`: one command each, the decision their only difference. */
export function decisionCommand(decision: 'approve' | 'reject'): Command {
  const Verb = decision === 'approve' ? 'Approve' : 'Reject';
  const command: Command = {
    name: `graph ${decision}`,
    summary: `${Verb} a waiting gate of a running graph (an operator decision, ledgered with who, when and the note's hash).`,
    usage: `brig graph ${decision} GRAPH NODE [--note TEXT] [--json]`,
    flags: [{ name: 'note', value: 'TEXT', description: 'why (≤ 4096 characters; only its hash is kept)' }, JSON_FLAG],
    examples: [`brig graph ${decision} g-mabc123def456789a go --note "checked the panel"`],
    async run(args, io) {
      const p = parseArgs(args, command.flags);
      if (p.positionals.length !== 2) throw new BrigError('invalid_input', `${decision} takes GRAPH and NODE`, { hint: `Usage: ${command.usage}` });
      const [graph, node] = p.positionals as [string, string];
      const note = p.flags.get('note')?.[0];
      return withGraphs(io, async (g) => {
        const r = await g.decide(graph, node, { decision, by: operatorName(), ...(note !== undefined ? { note } : {}) });
        if (!r.ok) throw r.error;
        if (p.bools.has('json')) writeJson(io, { graph: r.value });
        else io.stdout.write(graphLines(r.value));
        return 0;
      });
    },
  };
  return command;
}
