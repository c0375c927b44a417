/**
 * Graph events on the daemon's event stream, end to end: a real daemon (its API on a unix
 * socket, real HTTP), graphs of command nodes on the real engine, a gate decided over HTTP.
 * A client following `?graph=<id>` sees that graph's events in order — started, each node
 * running then succeeded with its run id, the gate's decision, ended — stamped and content-free
 * (INV-7), none of the graph run beside it and no run event; a client resuming with
 * Last-Event-ID from the middle gets exactly the rest; the run and graph events share one ring
 * (one id sequence), so an unfiltered resume holds both, interleaved.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiClient } from '../../../src/client/index.js';
import { exchange } from '../../../src/client/wire.js';
import { loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import type { GraphRecord, GraphStarted } from '../../../src/protocol/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { followEvents } from '../../helpers/sse-follow.js';
import { freshHome, until } from '../runs/fixture.js';

interface Seen {
  id: string;
  seq: number;
  event: string;
  data: Record<string, unknown> & { type: string; graphId?: string; node?: string; state?: string; runId?: string | null; timestamp: string };
}

/** The daemon's event stream (test/helpers/sse-follow.ts); `until(pred)` resolves once an event matches. */
function listen(socketPath: string, query: string, headers: Record<string, string> = {}) {
  const f = followEvents<Seen['data']>(socketPath, query, headers);
  return {
    got: f.got,
    connected: f.connected.then((status) => assert.equal(status, 200)),
    until: (pred: (e: Seen) => boolean, what: string) => until(() => f.got.some(pred), what),
    close: () => f.close(),
  };
}

const spec = (label: string, gate: boolean) =>
  JSON.stringify({
    graph: 'brig/v1',
    label,
    nodes: [
      { id: 'a', kind: 'command', spawn: { task: 'a', argv: ['true'] } },
      ...(gate ? [{ id: 'go', kind: 'gate', depends_on: ['a'], gate: { prompt: 'Go on?', timeout_ms: 120_000 } }] : []),
      { id: 'b', kind: 'command', depends_on: [gate ? 'go' : 'a'], spawn: { task: 'b', argv: ['true'] } },
    ],
  });

test('GET /v1/events?graph=: one graph\'s events in order with their run ids, a gate decided over HTTP, a resume from the middle gets exactly the rest', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  const clients: { close(): void }[] = [];
  try {
    const call = async (method: 'GET' | 'POST', p: string, body?: unknown) => {
      const r = await exchange({ socketPath: d.socketPath, method, path: p, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), timeoutMs: 60_000 });
      assert.ok(r.status < 300, `${method} ${p}: ${r.status} ${r.body}`);
      return JSON.parse(r.body) as Record<string, unknown>;
    };
    const runGraph = async (text: string) => ((await call('POST', '/v1/graphs', { spec: text, by: 'submitter' })).graph as GraphStarted).graphId;

    // Another graph, started first and running beside it: none of its events may reach the client of G.
    const other = await runGraph(spec('other', false));
    const G = await runGraph(spec('gated', true));
    // G's id is known only once it started: the stream for it begins with what the ring holds of it.
    const one = listen(d.socketPath, `?graph=${G}`);
    clients.push(one);
    await one.connected;
    await one.until((e) => e.event === 'graph.node' && e.data.node === 'go' && e.data.state === 'running', 'the gate waits');
    await call('POST', `/v1/graphs/${G}/decide`, { node: 'go', decision: 'approve', by: 'tester', note: 'fine by me' });
    await one.until((e) => e.event === 'graph.ended', 'G ended');
    const rec = (await call('GET', `/v1/graphs/${G}`)).graph as GraphRecord;
    assert.equal(rec.state, 'completed');
    const runOf = (n: string) => rec.nodes.find((x) => x.id === n)!.attempts[0]!.runId;

    const got = one.got;
    assert.ok(got.every((e) => e.event.startsWith('graph.') && e.event === e.data.type), `graph events only: ${got.map((e) => e.event).join(', ')}`);
    assert.ok(got.every((e) => e.data.graphId === G), 'none of the other graph');
    assert.ok(got.every((e) => !Number.isNaN(Date.parse(e.data.timestamp))), 'each stamped');
    assert.ok(got.every((e, i) => i === 0 || e.seq > got[i - 1]!.seq), 'ids in order');
    const line = (e: Seen) => [e.event, e.data.node ?? null, e.data.state ?? e.data.decision ?? null, e.data.runId ?? null].join(' ');
    // As the ledger has them: an attempt is `running` once written (no run yet), again once its run is spawned (its id).
    assert.deepEqual(got.map(line), [
      'graph.started   ',
      'graph.node a running ',
      `graph.node a running ${runOf('a')}`,
      `graph.node a succeeded ${runOf('a')}`,
      'graph.node go running ',
      'graph.node go running ',
      'graph.gate_decided go approved ',
      'graph.node go succeeded ',
      'graph.node b running ',
      `graph.node b running ${runOf('b')}`,
      `graph.node b succeeded ${runOf('b')}`,
      'graph.ended  completed ',
    ]);
    assert.match(runOf('a') ?? '', /^r-/);
    // Content-free, as the ledger holds it: the decider's name and the note's hash, never the note.
    const decided = got.find((e) => e.event === 'graph.gate_decided')!.data;
    assert.equal(decided.by, 'tester');
    assert.match(String(decided.noteHash), /^[0-9a-f]{64}$/);
    assert.ok(!got.some((e) => JSON.stringify(e.data).includes('fine by me')), 'the note is nowhere on the stream');

    // A second client resuming from the middle (the gate's decision): exactly the rest, nothing more.
    const mid = got.findIndex((e) => e.event === 'graph.gate_decided');
    const two = listen(d.socketPath, `?graph=${G}`, { 'last-event-id': got[mid]!.id });
    clients.push(two);
    await two.until((e) => e.event === 'graph.ended', 'the resumed client reaches the end');
    await new Promise((r) => setTimeout(r, 300)); // the replay is written at once: anything more would be here
    assert.deepEqual(two.got.map((e) => e.id), got.slice(mid + 1).map((e) => e.id));

    // One ring for runs and graphs: an unfiltered resume from the start holds both, interleaved.
    await until(async () => ((await call('GET', `/v1/graphs/${other}`)).graph as GraphRecord).state !== 'running', 'the other graph ended');
    const boot = got[0]!.id.split('-')[0]!;
    const all = listen(d.socketPath, '', { 'last-event-id': `${boot}-0` });
    clients.push(all);
    await all.until((e) => e.seq === got.at(-1)!.seq, 'the unfiltered replay reaches G\'s end');
    const seqs = all.got.map((e) => e.seq);
    assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y));
    for (const e of got) assert.ok(all.got.some((x) => x.id === e.id && x.event === e.event), `${e.id} ${e.event} in the one ring`);
    const spawnedA = all.got.find((e) => e.event === 'spawned' && e.data.runId === runOf('a'));
    const runningA = all.got.find((e) => e.event === 'graph.node' && e.data.runId === runOf('a'));
    assert.ok(spawnedA && runningA && spawnedA.seq < runningA.seq, 'node a\'s run was spawned before the graph said it runs');
    assert.ok(all.got.some((e) => e.event.startsWith('graph.') && e.data.graphId === other), 'the other graph is on the unfiltered stream');

    // A run's filter: that run's events and the graph event naming it; never another graph's.
    const byRun = listen(d.socketPath, `?runId=${runOf('b')}`, { 'last-event-id': `${boot}-0` });
    clients.push(byRun);
    await byRun.until((e) => e.event === 'lifecycle_ended', 'b\'s run ended, replayed');
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(byRun.got.every((e) => e.data.runId === runOf('b')), byRun.got.map(line).join('\n'));
    assert.deepEqual(byRun.got.filter((e) => e.event.startsWith('graph.')).map(line), [`graph.node b running ${runOf('b')}`, `graph.node b succeeded ${runOf('b')}`]);

    // brig's own runs' client follows the same stream and yields run events only.
    const api = new ApiClient(d.socketPath);
    const ac = new AbortController();
    const types: string[] = [];
    let subscribed!: () => void;
    const ready = new Promise<void>((r) => (subscribed = r));
    const following = (async () => {
      for await (const ev of api.events({ signal: ac.signal, onSubscribed: subscribed })) {
        types.push(ev.type);
        if (ev.type === 'lifecycle_ended') break;
      }
    })();
    await ready;
    const H = await runGraph(spec('third', false));
    await following;
    ac.abort();
    assert.ok(types.length > 0 && types.every((x) => !x.startsWith('graph.')), types.join(', '));
    await call('POST', `/v1/graphs/${H}/wait`, { timeoutMs: 60_000 });

    // A graph id that cannot be one is refused at the edge.
    const bad = await exchange({ socketPath: d.socketPath, method: 'GET', path: '/v1/events?graph=G1', timeoutMs: 10_000 });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /query: graph/);
  } finally {
    for (const c of clients) c.close();
    await d.close();
  }
});
