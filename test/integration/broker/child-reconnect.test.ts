import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { BrokerClient, BrokerCallError, MAX_LINE_BYTES } from '../../../src/child/broker-client.js';

/**
 * The in-jail broker client over real unix sockets: its first connect waits for a supervisor
 * as long as a reconnect does (a restart under load takes over 10 s); when the supervisor
 * goes away it reconnects to the same path and re-sends what had no reply, under the same id
 * and marked `resent`; it gives up only at its deadline; a call over the line limit is
 * refused before a byte is sent.
 */

interface Seen { method: string; id: number; resent?: true }

/** A stand-in broker: answers every line except methods in `hold`. */
function broker(socketPath: string, hold: ReadonlySet<string> = new Set()) {
  const seen: Seen[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    let buf = '';
    s.on('data', (d) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const m = JSON.parse(buf.slice(0, nl)) as { id: number; method: string; resent?: true };
        buf = buf.slice(nl + 1);
        seen.push({ method: m.method, id: m.id, ...(m.resent ? { resent: m.resent } : {}) });
        if (!hold.has(m.method)) s.write(JSON.stringify({ v: 1, id: m.id, ok: true, result: { served: m.method } }) + '\n');
      }
    });
  });
  const listening = new Promise<void>((r) => server.listen(socketPath, () => r()));
  return {
    seen,
    listening,
    /** Dies like a SIGKILLed daemon: connections cut, socket file left behind. */
    async crash() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function tmpSocket(t: { after: (fn: () => void) => void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-rc-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'broker.sock');
}

test('after the supervisor dies mid-call, the client reconnects to the same path and the call is answered', async (t) => {
  const sock = tmpSocket(t);
  const first = broker(sock, new Set(['checkpoint']));
  await first.listening;
  const c = await BrokerClient.connect(sock, 'tok');
  assert.deepEqual(first.seen.map((s) => s.method), ['hello'], 'it authenticates at once');
  const pending = c.call('checkpoint', { state: { i: 1 } });
  await new Promise((r) => setTimeout(r, 100));
  await first.crash();
  await new Promise((r) => setTimeout(r, 500)); // the supervisor is down for a while
  const second = broker(sock);
  await second.listening;
  assert.deepEqual(await pending, { served: 'checkpoint' });
  assert.deepEqual(second.seen.map((s) => s.method), ['hello', 'checkpoint'], 'hello first, then the unanswered call');
  const sentFirst = first.seen.find((s) => s.method === 'checkpoint')!;
  assert.deepEqual(second.seen[1], { method: 'checkpoint', id: sentFirst.id, resent: true }, 'the same call id, marked resent');
  assert.equal(sentFirst.resent, undefined, 'the first send is not marked');
  assert.deepEqual(await c.call('progress', {}), { served: 'progress' });
  c.close();
  await second.crash();
});

test('with no supervisor back before the deadline, pending calls fail broker_closed', async (t) => {
  const sock = tmpSocket(t);
  const b = broker(sock, new Set(['progress']));
  await b.listening;
  const c = await BrokerClient.connect(sock, 'tok', { reconnectUntil: Date.now() + 800 });
  const pending = c.call('progress', {});
  await b.crash();
  await assert.rejects(pending, (e: unknown) => e instanceof BrokerCallError && e.code === 'broker_closed');
  c.close();
});

test('a call over the broker line limit is refused locally with invalid_input; nothing is sent', async (t) => {
  const sock = tmpSocket(t);
  const b = broker(sock);
  await b.listening;
  const c = await BrokerClient.connect(sock, 'tok');
  await assert.rejects(c.call('result', { value: 'x'.repeat(MAX_LINE_BYTES) }), (e: unknown) => e instanceof BrokerCallError && e.code === 'invalid_input' && /at most 65536/.test(e.message));
  assert.deepEqual(await c.call('progress', {}), { served: 'progress' }, 'the connection is intact');
  assert.deepEqual(b.seen.map((s) => s.method), ['hello', 'progress']);
  c.close();
  await b.crash();
});

test('the first connect waits for a supervisor that comes up after 10 s, as long as a reconnect would', async (t) => {
  const sock = tmpSocket(t);
  // What a SIGKILLed daemon leaves: the socket file, nobody listening.
  const dead = broker(sock);
  await dead.listening;
  await dead.crash();
  const connecting = BrokerClient.connect(sock, 'tok', { reconnectUntil: Date.now() + 60_000 });
  let settled = false;
  void connecting.then(() => (settled = true), () => (settled = true));
  await new Promise((r) => setTimeout(r, 11_000));
  assert.equal(settled, false, 'still trying after 11 s');
  fs.rmSync(sock, { force: true });
  const late = broker(sock);
  await late.listening;
  const c = await connecting;
  assert.deepEqual(late.seen.map((s) => s.method), ['hello']);
  assert.deepEqual(await c.call('progress', {}), { served: 'progress' });
  c.close();
  await late.crash();
});

test('the first connect gives up at the run\'s deadline when no supervisor comes', async (t) => {
  const sock = tmpSocket(t);
  await assert.rejects(BrokerClient.connect(sock, 'tok', { reconnectUntil: Date.now() + 600 }), (e: NodeJS.ErrnoException) => e.code === 'ENOENT' || e.code === 'ECONNREFUSED');
});
