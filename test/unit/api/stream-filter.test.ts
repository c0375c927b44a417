/**
 * The graphs' events on the API's event stream (INV-7: content-free, like the run events):
 * which events a client's filter passes (`graph`, `runId`, `rootRunId`), one ring numbering
 * run and graph events together, a client following one graph replayed what the ring holds of
 * it, and the real HTTP server validating `graph` and naming each event by its type. The
 * sources are the real parts: the supervisor's EventBus and the daemon's graph feed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { EventHub, matches, type Numbered } from '../../../src/api/event-hub.js';
import { listenApi } from '../../../src/api/server.js';
import { followEvents, type FollowedEvent } from '../../helpers/sse-follow.js';
import { graphFeed } from '../../../src/daemon/graphs.js';
import { EventBus, passesRunFilter } from '../../../src/runs/index.js';
import type { Brig, GraphStreamEvent, StreamEvent, SupervisorEvent } from '../../../src/protocol/index.js';

const T = '2026-01-01T00:00:00.000Z';
const run = (runId: string, rootRunId = runId, type = 'started'): SupervisorEvent => ({ type, runId, rootRunId, path: [rootRunId, runId], depth: 0, timestamp: T }) as SupervisorEvent;
const node = (graphId: string, n: string, state: 'running' | 'succeeded', runId: string | null): GraphStreamEvent => ({ type: 'graph.node', graphId, node: n, state, attempt: 1, runId, timestamp: T });
const started = (graphId: string, runId?: string): GraphStreamEvent => ({ type: 'graph.started', graphId, nodes: 2, parallel: 2, ...(runId ? { runId } : {}), timestamp: T });
const ended = (graphId: string): GraphStreamEvent => ({ type: 'graph.ended', graphId, state: 'completed', endReason: null, timestamp: T });

test('the stream filter: `graph` passes that graph only, `runId` a graph event naming that run, `rootRunId` run events only', () => {
  const G = 'g-aaaaaaaa', H = 'g-bbbbbbbb';
  const evs: [string, StreamEvent][] = [
    ['run r-1', run('r-1')],
    ['run r-2 in r-1', run('r-2', 'r-1')],
    ['G started by r-1', started(G, 'r-1')],
    ['G a running r-2', node(G, 'a', 'running', 'r-2')],
    ['G gate running', node(G, 'go', 'running', null)],
    ['G ended', ended(G)],
    ['H b running r-3', node(H, 'b', 'running', 'r-3')],
  ];
  const passing = (f: Parameters<typeof matches>[1]) => evs.filter(([, e]) => matches(e, f)).map(([name]) => name);
  assert.deepEqual(passing({}), evs.map(([name]) => name), 'no filter: everything');
  assert.deepEqual(passing({ graph: G }), ['G started by r-1', 'G a running r-2', 'G gate running', 'G ended'], 'one graph, never a run event');
  assert.deepEqual(passing({ runId: 'r-2' }), ['run r-2 in r-1', 'G a running r-2'], "a run's events and the node attempt it is");
  assert.deepEqual(passing({ runId: 'r-1' }), ['run r-1', 'G started by r-1'], 'the graph_run caller on graph.started');
  assert.deepEqual(passing({ rootRunId: 'r-1' }), ['run r-1', 'run r-2 in r-1'], 'a graph event carries no tree');
  assert.deepEqual(passing({ graph: G, runId: 'r-2' }), ['G a running r-2'], 'filters conjoin');
  assert.deepEqual(passing({ graph: G, rootRunId: 'r-1' }), []);
  assert.deepEqual(passing({ graph: 'g-cccccccc' }), []);
});

/** The hub over the real buses; `numbered(n)` resolves once the hub has numbered n events in all. */
function hubOver(size = 100) {
  const runs = new EventBus(passesRunFilter);
  const graphs = graphFeed();
  const hub = new EventHub({ events: (o) => runs.subscribe(o), graphs: { events: (o) => graphs.subscribe(o) } }, size);
  const seen: Numbered[] = [];
  hub.subscribe((n) => seen.push(n));
  const numbered = async (count: number) => {
    for (let i = 0; seen.length < count; i++) {
      if (i > 1000) throw new Error(`the hub numbered ${seen.length} of ${count}`);
      await new Promise((r) => setImmediate(r));
    }
    return seen;
  };
  // Both pumps subscribe in the hub's constructor, in the next ticks.
  const ready = async () => {
    while (runs.subscribers === 0 || graphs.subscribers === 0) await new Promise((r) => setImmediate(r));
  };
  return { hub, runs, graphs, numbered, ready, close: () => (hub.close(), runs.close(), graphs.close()) };
}

test('run and graph events are numbered in one ring: a resume from the middle gets exactly the rest, for one graph or for all', async () => {
  const h = hubOver();
  try {
    await h.ready();
    const G = 'g-aaaaaaaa', H = 'g-bbbbbbbb';
    h.runs.publish(run('r-0'));
    await h.numbered(1);
    h.graphs.publish(started(G));
    await h.numbered(2);
    h.graphs.publish(started(H));
    await h.numbered(3);
    h.runs.publish(run('r-1'));
    await h.numbered(4);
    h.graphs.publish(node(G, 'a', 'running', 'r-1'));
    await h.numbered(5);
    h.graphs.publish(node(H, 'b', 'running', 'r-2'));
    await h.numbered(6);
    h.graphs.publish(node(G, 'a', 'succeeded', 'r-1'));
    await h.numbered(7);
    h.graphs.publish(ended(G));
    const all = await h.numbered(8);
    assert.deepEqual(all.map((n) => n.seq), [1, 2, 3, 4, 5, 6, 7, 8], 'one counter for both sources');
    assert.ok(all.every((n) => n.id === `${h.hub.boot}-${n.seq}`));
    const kinds = (r: ReturnType<EventHub['resume']>) => (r.kind === 'replay' ? r.events.map((n) => `${n.seq} ${n.ev.type}`) : r.kind);

    // Following G afresh: what the ring holds of it (its id is known only once it started).
    assert.deepEqual(kinds(h.hub.resume(undefined, { graph: G })), ['2 graph.started', '5 graph.node', '7 graph.node', '8 graph.ended']);
    assert.equal(h.hub.resume(undefined, {}).kind, 'fresh', 'an unfiltered fresh client goes on live');
    assert.equal(h.hub.resume(undefined, { runId: 'r-1' }).kind, 'fresh');
    // Resuming after G's node started (seq 5): exactly the rest of G.
    assert.deepEqual(kinds(h.hub.resume(`${h.hub.boot}-5`, { graph: G })), ['7 graph.node', '8 graph.ended']);
    // Unfiltered, from seq 3: the run and graph events after it, in order.
    assert.deepEqual(kinds(h.hub.resume(`${h.hub.boot}-3`)), ['4 started', '5 graph.node', '6 graph.node', '7 graph.node', '8 graph.ended']);
    assert.deepEqual(kinds(h.hub.resume(`${h.hub.boot}-1`, { runId: 'r-1' })), ['4 started', '5 graph.node', '7 graph.node']);
    assert.deepEqual(kinds(h.hub.resume(`${h.hub.boot}-1`, { rootRunId: 'r-1' })), ['4 started']);
    assert.deepEqual(kinds(h.hub.resume('deadbeef-2', { graph: G })), 'gap', 'another boot is a gap, for a graph too');
  } finally {
    h.close();
  }
});

/** Reads the event stream until `want` events came (test/helpers/sse-follow.ts). */
function follow(socketPath: string, query: string, want: number): Promise<FollowedEvent[]> & { connected: Promise<void> } {
  const f = followEvents(socketPath, query);
  return Object.assign(f.first(want), { connected: f.connected.then(() => undefined) });
}

test('GET /v1/events?graph=: that graph\'s events only, each named by its type and stamped; a malformed graph id is a 400', async (t) => {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-gev-'));
  const socketPath = path.join(dir, 'brig.sock');
  const runs = new EventBus(passesRunFilter);
  const graphs = graphFeed();
  const brig = { events: (o?: object) => runs.subscribe(o), graphs: { events: (o?: object) => graphs.subscribe(o) } } as unknown as Brig;
  const api = await listenApi(brig, socketPath);
  t.after(async () => {
    await api.close();
    runs.close();
    graphs.close();
    await fs.promises.rm(dir, { recursive: true, force: true });
  });
  while (runs.subscribers === 0 || graphs.subscribers === 0) await new Promise((r) => setImmediate(r));
  const G = 'g-aaaaaaaa';
  const one = follow(socketPath, `?graph=${G}`, 3);
  await one.connected;
  runs.publish(run('r-1'));
  graphs.publish(node('g-bbbbbbbb', 'x', 'running', 'r-9'));
  graphs.publish(started(G));
  graphs.publish(node(G, 'a', 'running', 'r-1'));
  graphs.publish(ended(G));
  const got = await one;
  assert.deepEqual(got.map((e) => [e.event, e.data.type, e.data.graphId]), [['graph.started', 'graph.started', G], ['graph.node', 'graph.node', G], ['graph.ended', 'graph.ended', G]]);
  const seqs = got.map((e) => Number(/^[0-9a-f]{8}-(\d+)$/.exec(e.id)?.[1]));
  assert.ok(seqs[0]! >= 2 && seqs[0]! < seqs[1]! && seqs[1]! < seqs[2]!, `numbered in order, among the run events and the other graph's: ${seqs.join(', ')}`);
  assert.ok(got.every((e) => e.data.timestamp === T));

  const bad = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    http.get({ socketPath, path: '/v1/events?graph=not-a-graph' }, (res) => {
      let b = '';
      res.on('data', (d: Buffer) => (b += d.toString())).on('end', () => resolve({ status: res.statusCode ?? 0, body: b }));
    }).on('error', reject);
  });
  assert.equal(bad.status, 400);
  assert.match(bad.body, /query: graph: a graph id looks like g-/);
});
