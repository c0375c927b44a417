/**
 * The graphs' ports over this home's parts: the supervisor spawns every node attempt, the
 * graph store keeps the records under $BRIG_HOME/graphs, the result store keeps each graph's
 * manifest as a ResultRef (under the graph's id, never in a directory a child can write), the
 * ledger hears the graphs' content-free events, and the graphs' live feed hands them on (the
 * API's event stream numbers them beside the run events).
 */
import { promises as fs } from 'node:fs';
import { Readable } from 'node:stream';
import { GraphService, GraphStore } from '../graphs/index.js';
import type { Ledger } from '../ledger/index.js';
import type { FsResultStore } from '../results/index.js';
import { EventBus, type SupervisorCore } from '../runs/index.js';
import type { GraphCallReply, GraphEventsOptions, GraphRecord, GraphStreamEvent, GraphSurface, OperatorSurface } from '../protocol/index.js';
import type { Handler } from '../broker/index.js';
import { isGraphId } from '../protocol/index.js';
import { grantAllows } from '../lease/index.js';
import { BrigError } from '../util/errors.js';
import { headBytes } from '../util/utf8.js';

/** The broker methods the graphs answer (the composition root installs their handlers beside the supervisor's). */
export const GRAPH_METHODS = ['graph.run', 'graph.wait', 'graph.cancel'] as const;

/** The longest one `graph_run` call blocks by default (under the agent loop's per-tool timeout); the graph goes on after it. */
export const GRAPH_RUN_WAIT_MS = 50_000;

/** How long `graph.cancel` waits for the kills of the graph's running nodes to go through before it answers. */
export const GRAPH_CANCEL_WAIT_MS = 20_000;

/**
 * `graph.run`, the broker method behind an agent's `graph_run` tool: the calling run (the
 * broker verified its bearer and that its lease grants `graph`) starts a graph as one child of
 * its own — nodes spawned with it as parent, so each node's lease is attenuated from the
 * caller's lease (caller ∩ the node's request: never the operator's, never wider than the
 * caller), at its depth + 1 under its maxDepth, running nodes ≤ min(max_parallel, its
 * maxChildren). It blocks (its slot freed) until the graph ends or the wait passes, and answers
 * the bounded envelope (≤ 4 KiB) and the manifest ref, which the caller may slice (ChildRefs:
 * a manifest of a graph it started is its descendant's ref). Gates wait for an operator: the
 * broker has no method that decides one.
 */
export function graphRunHandler(graphs: GraphService, sup: Pick<SupervisorCore, 'get' | 'whileBlocked'>): Handler<'graph.run'> {
  return async (call) => {
    await callerMayAsk(sup, call);
    const l = call.lease;
    const started = await graphs.run(call.params.spec, {
      source: 'graph_run',
      by: `run:${call.runId}`,
      caller: { runId: call.runId, depth: l.depth, maxChildren: l.limits.maxChildren, maxDepth: l.limits.maxDepth, tokens: l.limits.tokens, costUsd: l.limits.costUsd },
    });
    if (!started.ok) throw started.error;
    const { graphId, order } = started.value;
    return { ...(await waitFor(graphs, sup, call.runId, graphId, call.params.timeoutMs ?? GRAPH_RUN_WAIT_MS)), order };
  };
}

/**
 * `graph.wait`, behind the agent tool `graph_wait` (capability `graph`): a graph the calling run
 * started with graph_run — its state now (timeoutMs 0), or once it ends, waiting at most
 * timeoutMs (its slot freed meanwhile). Any other graph (another run's, the operator's) is
 * `graph_not_found` to it, as one that does not exist.
 */
export function graphWaitHandler(graphs: GraphService, sup: Pick<SupervisorCore, 'get' | 'whileBlocked'>): Handler<'graph.wait'> {
  return async (call) => {
    await callerMayAsk(sup, call);
    await ownGraph(graphs, call.runId, call.params.graphId);
    return waitFor(graphs, sup, call.runId, call.params.graphId, call.params.timeoutMs ?? GRAPH_RUN_WAIT_MS);
  };
}

/**
 * `graph.cancel`, behind the agent tool `graph_cancel` (capability `graph`): a graph the calling
 * run started, cancelled as `brig graph cancel` does — its running nodes killed, the rest
 * skipped — then answered as graph.wait answers it once the kills went through (bounded by
 * GRAPH_CANCEL_WAIT_MS). One that already ended is answered as it ended. Any other graph is
 * `graph_not_found`, as for graph.wait.
 */
export function graphCancelHandler(graphs: GraphService, sup: Pick<SupervisorCore, 'get' | 'whileBlocked'>): Handler<'graph.cancel'> {
  return async (call) => {
    await callerMayAsk(sup, call);
    const { graphId } = call.params;
    if ((await ownGraph(graphs, call.runId, graphId)).state !== 'running') return waitFor(graphs, sup, call.runId, graphId, 0);
    // The call is the confirmation, as the MCP tool's `confirm: true` is.
    const c = await graphs.cancel(graphId, { confirm: true, by: 'parent' });
    // Ended between the look and the cancel: its end is the answer.
    if (!c.ok && (await ownGraph(graphs, call.runId, graphId)).state === 'running') throw c.error;
    const r = await waitFor(graphs, sup, call.runId, graphId, c.ok ? GRAPH_CANCEL_WAIT_MS : 0);
    return r.state === 'running' ? { ...r, hint: 'cancelled: its nodes are still being killed; graph_wait with its graphId answers its end' } : r;
  };
}

/** The graph, when the calling run started it; any other (another run's, the operator's, none) is `graph_not_found` alike. */
async function ownGraph(graphs: GraphService, runId: string, graphId: string): Promise<GraphRecord> {
  const s = await graphs.status(graphId);
  if (!s.ok || s.value.callerRunId !== runId) {
    throw new BrigError('graph_not_found', `no graph ${graphId} of yours`, { data: { graphId }, hint: 'graph_wait and graph_cancel take the graphId a graph_run of yours answered.' });
  }
  return s.value;
}

async function callerMayAsk(sup: Pick<SupervisorCore, 'get'>, call: { runId: string; lease: Parameters<typeof grantAllows>[0] }): Promise<void> {
  const run = await sup.get(call.runId);
  if (!run || run.status !== 'running') throw new BrigError('not_running', `run ${call.runId} is not running`, { data: { status: run?.status ?? 'unknown' } });
  // The broker checked it with the same predicate; a handler reached another way still refuses.
  if (!grantAllows(call.lease, 'graph')) throw new BrigError('capability_denied', 'the lease does not grant `graph`', { data: { what: 'graph' } });
}

/** Waits (the caller's slot freed; not at all for 0) and answers the graph as its caller sees it. */
async function waitFor(graphs: GraphService, sup: Pick<SupervisorCore, 'whileBlocked'>, runId: string, graphId: string, timeoutMs: number): Promise<GraphCallReply> {
  const waited = timeoutMs > 0 ? await sup.whileBlocked(runId, () => graphs.wait(graphId, { timeoutMs })) : await graphs.status(graphId);
  if (!waited.ok) throw waited.error;
  const g = waited.value;
  const counts: Record<string, number> = {};
  for (const n of g.nodes) counts[n.state] = (counts[n.state] ?? 0) + 1;
  const running = g.nodes.filter((n) => n.state === 'running').map((n) => n.id);
  const base = { graphId, state: g.state, endReason: g.endReason, counts, running: running.slice(0, 20) };
  if (g.state === 'running') return { ...base, envelope: null, manifestRef: null, hint: 'the graph goes on: call graph_wait with its graphId (timeoutMs 0 looks without waiting)' };
  return { ...base, envelope: g.envelope ?? '', manifestRef: g.manifestRef };
}

/** May `callerRunId` slice the manifest of the graph that owns a ref (its id)? Only the run that started it. */
export function graphManifestReader(store: GraphStore): (owner: string, callerRunId: string) => Promise<boolean> {
  return async (owner, callerRunId) => {
    if (!isGraphId(owner)) return false;
    const rec = await store.load(owner).catch(() => null);
    return rec !== null && rec !== undefined && rec.callerRunId === callerRunId;
  };
}

/** A ballot over this is unreadable (counted invalid), never cut. */
const BALLOT_MAX_BYTES = 64 * 1024;

/** The graphs' live events: each subscriber's own bounded buffer, one graph's or all. */
export type GraphFeed = EventBus<GraphStreamEvent, GraphEventsOptions>;

export function graphFeed(): GraphFeed {
  return new EventBus<GraphStreamEvent, GraphEventsOptions>((ev, o) => !o.graphId || ev.graphId === o.graphId);
}

/** The graphs as the faces see them: the service's verbs, and its events live from the feed. */
export function graphSurfaceOf(g: GraphService, feed: GraphFeed): GraphSurface {
  return {
    define: (text, o) => g.define(text, o),
    run: (text, o) => g.run(text, o),
    decide: (id, node, d) => g.decide(id, node, d),
    status: (id) => g.status(id),
    wait: (id, o) => g.wait(id, o),
    cancel: (id, o) => g.cancel(id, o),
    list: () => g.list(),
    explain: (id) => g.explain(id),
    events: (o) => feed.subscribe(o),
  };
}

export function graphServiceFor(o: { dir: string; supervisor: SupervisorCore; results: FsResultStore; ledger: Ledger; leases?: OperatorSurface['leases']; feed?: GraphFeed }): GraphService {
  const s = o.supervisor.settings;
  return new GraphService({
    supervisor: o.supervisor,
    store: new GraphStore(o.dir),
    limits: { maxChildren: s.maxChildrenPerAgent, maxDepth: s.maxSpawnDepth, defaultTimeoutMs: s.maxRunTimeoutMs },
    holdSlot: (callerRunId, graphId) => o.supervisor.holdChildSlot(callerRunId, graphId),
    async putManifest(graphId, jsonl) {
      const ref = await o.results.writeStream(graphId, graphId, 'manifest.jsonl', Readable.from([Buffer.from(jsonl, 'utf8')]), {}, 'value');
      return ref.ref;
    },
    async refOf(runId) {
      const refs = await o.results.list(runId).catch(() => []);
      return (refs.find((r) => r.source === 'value') ?? refs.find((r) => r.source === 'out') ?? refs[0])?.ref ?? null;
    },
    // explain: the lease the attempt's run got (the one its record names), as granted and refused.
    async leaseOf(runId) {
      const run = await o.supervisor.get(runId);
      if (!run?.leaseId || !o.leases) return null;
      const shown = await o.leases.show(run.leaseId);
      if (!shown.ok) return null;
      const l = shown.value.lease;
      return { id: l.id, profile: l.profile, depth: l.depth, caps: [...l.caps], refused: l.refused.map((r) => `${r.what}: ${r.code}`), revokedBy: l.revoked?.by ?? null };
    },
    // A ballot is small: one bounded read of a committed ref (never a file a child can still write).
    async readBallot(runId, ballot) {
      const refs = await o.results.list(runId);
      const ref = ballot === 'result' ? refs.find((r) => r.source === 'value') : refs.find((r) => r.path === ballot);
      if (!ref) throw new Error('no ballot');
      if (ref.bytes > BALLOT_MAX_BYTES) throw new Error('ballot too large');
      const text = await fs.readFile(o.results.resolvePath(ref), 'utf8');
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return undefined;
      }
    },
    // A graph input's items: one bounded read of the ref's stored file; over the bound is refused, never cut.
    async readRefText(ref, maxBytes) {
      const found = await o.results.get(ref);
      if (found.bytes > maxBytes) throw new Error('items file too large');
      return fs.readFile(o.results.resolvePath(found), 'utf8');
    },
    checkRef: (ref, callerRunId) => o.supervisor.mayHandRef(ref, callerRunId),
    // A node's summary: the head of its committed result value (an agent's answer.txt), else of
    // its first text output, named — the store's own preview of it (≤ 2 KiB, a character never cut), no read.
    async summaryOf(runId, maxBytes) {
      const refs = await o.results.list(runId);
      const value = refs.find((r) => r.source === 'value' && r.path === 'answer.txt') ?? refs.find((r) => r.source === 'value');
      const ref = value ?? refs.find((r) => r.source === 'out' && r.preview !== '');
      if (!ref) {
        const out = refs.filter((r) => r.source === 'out').slice(0, 8);
        return out.length > 0 ? `(no result value; out/: ${out.map((r) => `${r.path} (${r.bytes} B)`).join(', ')})` : null;
      }
      const label = value ? '' : `${ref.path}: `;
      const room = maxBytes - Buffer.byteLength(label);
      if (ref.bytes <= room && Buffer.byteLength(ref.preview) === ref.bytes) return label + ref.preview;
      const marker = ` …[cut at ${room} of ${ref.bytes} bytes; the whole is ${ref.ref}]`;
      return label + headBytes(ref.preview, room - Buffer.byteLength(marker)) + marker;
    },
    // A map's items: one bounded read of a committed out/ file; over the bound is refused, never cut.
    async readText(runId, file, maxBytes) {
      const ref = (await o.results.list(runId)).find((r) => r.path === file);
      if (!ref) throw new Error('no such file');
      if (ref.bytes > maxBytes) throw new Error('items file too large');
      return fs.readFile(o.results.resolvePath(ref), 'utf8');
    },
    // Content-free: ids, states, counts (INV-7); a node's run id is its own field. The feed
    // gets the same fields (a gate's `by` is the operator name the ledger holds too), stamped.
    onEvent: (e) => {
      const { runId, ...rest } = e as typeof e & { runId?: string | null };
      o.ledger.append({ ...rest, ...(runId ? { runId } : {}) });
      o.feed?.publish({ ...e, timestamp: new Date().toISOString() });
    },
  });
}
