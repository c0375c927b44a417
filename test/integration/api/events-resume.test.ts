/**
 * brig's own event client resumes with Last-Event-ID (issue 27 item 5), through the project's
 * one SSE parser (util/sse.ts): over a real unix socket, a real HTTP server that tears the
 * stream after two events gets a reconnect carrying `Last-Event-ID: 2` and the client yields
 * the replayed third; a `gap` event and a graph's event (`graph.*`) are no run events; a stream that ends again with nothing
 * delivered is the daemon's end (daemon_unavailable), not a reconnect loop.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ApiClient } from '../../../src/client/index.js';

const ev = (runId: string) => ({ type: 'started', runId, rootRunId: runId, path: [runId], depth: 0, timestamp: '2026-01-01T00:00:00.000Z' });

test('the event client reconnects a torn stream with Last-Event-ID and yields what the daemon replays', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-sse-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const sock = path.join(dir, 'brig.sock');
  const seen: (string | undefined)[] = [];
  const server = http.createServer((req, res) => {
    assert.equal(req.url, '/v1/events');
    const last = req.headers['last-event-id'] as string | undefined;
    seen.push(last);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (seen.length === 1) {
      // CRLF line ends and an event split across writes: the WHATWG rules, not a hand parser's.
      res.write(': brig events v1\r\n\r\n');
      res.write(`id: 1\r\nevent: started\r\ndata: ${JSON.stringify(ev('r-a'))}\r\n\r\nid: 2\r\nevent: star`);
      res.write(`ted\r\ndata: ${JSON.stringify(ev('r-b'))}\r\n\r\n`);
      setTimeout(() => res.destroy(), 50); // torn, as the daemon drops a reader that lags
    } else if (seen.length === 2) {
      // A graph's event shares the stream and its ids; the runs' events client moves past it.
      const graphEv = { type: 'graph.node', graphId: 'g-aaaaaaaa', node: 'a', state: 'running', attempt: 1, runId: 'r-c', timestamp: '2026-01-01T00:00:00.000Z' };
      res.write(`event: gap\ndata: {"reason":"test"}\n\nid: 3\nevent: graph.node\ndata: ${JSON.stringify(graphEv)}\n\nid: 4\nevent: started\ndata: ${JSON.stringify(ev('r-c'))}\n\n`);
      setTimeout(() => res.destroy(), 50);
    } else res.end(); // the daemon's end: nothing more
  });
  await new Promise<void>((r) => server.listen(sock, r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));

  const got: string[] = [];
  let ended: unknown;
  try {
    for await (const e of new ApiClient(sock, 'cli').events()) got.push(e.runId);
  } catch (e) {
    ended = e;
  }
  assert.deepEqual(got, ['r-a', 'r-b', 'r-c'], 'the replayed event after the tear, the gap and the graph event no run events');
  assert.deepEqual(seen, [undefined, '2', '4'], 'each reconnect names the last event it saw');
  assert.equal((ended as { code?: string }).code, 'daemon_unavailable');
});
