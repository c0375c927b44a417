import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { EventHub } from '../../../src/api/event-hub.js';
import { listenApi } from '../../../src/api/server.js';
import { followEvents } from '../../helpers/sse-follow.js';
import type { Brig, Supervisor, SupervisorEvent } from '../../../src/protocol/index.js';

/**
 * A supervisor that only has events, pushed by the test (the API layer is what is tested).
 * `taken()` resolves once the hub has taken every event pushed so far and asks for the next:
 * what it does with an event (number it, write it to each client, cut a slow one) is done by
 * then, so the tests wait for that instead of for a guessed number of milliseconds.
 */
function eventSource(): { sup: Supervisor; push(runId: string, type?: string): void; taken(): Promise<void> } {
  const waiting: ((ev: SupervisorEvent) => void)[] = [];
  const queued: SupervisorEvent[] = [];
  const sup = {
    events: ({ signal }: { signal?: AbortSignal } = {}) =>
      (async function* () {
        while (!signal?.aborted) yield queued.shift() ?? (await new Promise<SupervisorEvent>((r) => waiting.push(r)));
      })(),
  } as unknown as Supervisor;
  return {
    sup,
    push(runId, type = 'progress') {
      const ev = { type, runId, rootRunId: runId, path: [runId], depth: 1, timestamp: new Date().toISOString() } as unknown as SupervisorEvent;
      const w = waiting.shift();
      if (w) w(ev);
      else queued.push(ev);
    },
    async taken() {
      while (queued.length > 0 || waiting.length === 0) await new Promise((r) => setImmediate(r));
    },
  };
}

/** Fails when `p` has not settled within `ms`; the guard's timer never outlives it. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(what)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

test('the event hub numbers events and tells a resuming client what it missed, or that it cannot', async () => {
  const src = eventSource();
  const hub = new EventHub(src.sup, 5);
  try {
    for (const id of ['r-a', 'r-b', 'r-a']) src.push(id);
    await src.taken();
    const all = hub.resume(`${hub.boot}-0`);
    assert.equal(all.kind, 'replay');
    if (all.kind !== 'replay') return;
    assert.deepEqual(all.events.map((n) => [n.id, (n.ev as SupervisorEvent).runId]), [[`${hub.boot}-1`, 'r-a'], [`${hub.boot}-2`, 'r-b'], [`${hub.boot}-3`, 'r-a']]);
    const onlyA = hub.resume(`${hub.boot}-1`, { runId: 'r-a' });
    assert.deepEqual(onlyA.kind === 'replay' && onlyA.events.map((n) => n.seq), [3], 'after 1, filtered');
    assert.deepEqual(hub.resume(`${hub.boot}-3`), { kind: 'replay', events: [] }, 'up to date');
    assert.deepEqual(hub.resume(undefined), { kind: 'fresh' });
    assert.deepEqual(hub.resume('deadbeef-2'), { kind: 'gap', reason: 'restarted' });
    assert.deepEqual(hub.resume('nonsense'), { kind: 'gap', reason: 'malformed' });
    for (let i = 0; i < 6; i++) src.push('r-c'); // the ring holds 5: seq 5..9
    await src.taken();
    assert.deepEqual(hub.resume(`${hub.boot}-2`), { kind: 'gap', reason: 'too_old' });
    const edge = hub.resume(`${hub.boot}-4`);
    assert.deepEqual(edge.kind === 'replay' && edge.events.map((n) => n.seq), [5, 6, 7, 8, 9], 'just inside the ring');
  } finally {
    hub.close();
  }
});

type Followed = Promise<{ id: string; type: string; runId: string }[]> & { connected: Promise<void> };

/** Reads the event stream until `want` events arrived (test/helpers/sse-follow.ts), as id, type and run id. */
function follow(socketPath: string, headers: Record<string, string>, want: number): Followed {
  const f = followEvents(socketPath, '', headers);
  const events = f.first(want).then((es) => es.map((e) => ({ id: e.id, type: e.event, runId: typeof e.data.runId === 'string' ? e.data.runId : '' })));
  return Object.assign(events, { connected: f.connected.then(() => undefined) });
}

/** The real API on a unix socket over a supervisor whose events the test pushes; gone after the test. */
async function served(t: { after(fn: () => Promise<void>): void }): Promise<{ socketPath: string; src: ReturnType<typeof eventSource> }> {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-ev-'));
  const socketPath = path.join(dir, 'brig.sock');
  const src = eventSource();
  const api = await listenApi(src.sup as unknown as Brig, socketPath);
  t.after(async () => {
    await api.close();
    await fs.promises.rm(dir, { recursive: true, force: true });
  });
  return { socketPath, src };
}

test('GET /v1/events: every event has an id; reconnecting with Last-Event-ID replays exactly what was missed; another boot gets a gap event', async (t) => {
  const { socketPath, src } = await served(t);
  const first = follow(socketPath, {}, 2);
  await first.connected;
  src.push('r-1');
  src.push('r-2');
  const seen = await first;
  assert.deepEqual(seen.map((e) => e.runId), ['r-1', 'r-2']);
  assert.match(seen[1]!.id, /^[0-9a-f]{8}-2$/);
  // Disconnected: three more happen; the client comes back with the last id it saw.
  src.push('r-3');
  src.push('r-4');
  src.push('r-5');
  await src.taken();
  const back = follow(socketPath, { 'last-event-id': seen[1]!.id }, 4);
  await back.connected;
  src.push('r-6');
  assert.deepEqual((await back).map((e) => e.runId), ['r-3', 'r-4', 'r-5', 'r-6'], 'the missed ones in order, then live, none twice');
  const other = await follow(socketPath, { 'last-event-id': 'deadbeef-9' }, 1);
  assert.deepEqual(other.map((e) => e.type), ['gap']);
});

test('a client that stops reading is cut once it is 1 MiB behind; the others keep their stream', async (t) => {
  const { socketPath, src } = await served(t);
  const stuck = net.connect(socketPath);
  let got = 0;
  const cut = new Promise<void>((resolve) => stuck.on('close', () => resolve()));
  // Its response's head (the server subscribes it in that tick), then it reads nothing while the events pile up.
  const subscribed = new Promise<void>((resolve) => stuck.once('data', (d: Buffer) => ((got += d.length), stuck.pause(), resolve())));
  stuck.write('GET /v1/events HTTP/1.1\r\nHost: brig\r\n\r\n');
  await subscribed;
  const N = 30_000;
  for (let i = 0; i < N; i++) src.push(`r-${'x'.repeat(100)}-${i}`);
  await src.taken(); // every event written to it (or refused it) by now: the cut is decided
  // Now it reads: what was sent before the cut, then the end.
  stuck.on('data', (d: Buffer) => (got += d.length));
  stuck.resume();
  await within(cut, 10_000, 'the stuck client was never cut');
  assert.ok(got < N * 150, `it was cut short of the whole stream (${got} bytes of ~${N * 250})`);
  // The daemon is still there for everyone else.
  const next = follow(socketPath, {}, 1);
  await next.connected;
  src.push('r-after');
  assert.deepEqual((await next).map((e) => e.runId), ['r-after']);
});
