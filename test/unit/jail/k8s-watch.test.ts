/**
 * The driver's pod watch (src/jail/k8s/pod-watch.ts) against a fake API server on loopback
 * (real HTTP, the real watch wire: one JSON event a line): a list, then a watch from its
 * version; a 410 Gone — as an ERROR event or as the watch's HTTP status — answered by a fresh
 * list; events applied to the cache and waking the pod's waiters; a bookmark moving the version;
 * a stalled stream delaying a waiter no longer than its bound.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeApi } from '../../../src/jail/k8s/kube-api.js';
import { PodWatch } from '../../../src/jail/k8s/pod-watch.js';

const pod = (name: string, rv: string, phase: string) => ({ metadata: { name, resourceVersion: rv }, status: { phase } });

interface Fake {
  api: KubeApi;
  lists: string[];
  watches: string[];
  /** Sends one event line on the open watch stream. */
  send(ev: unknown): void;
  /** Writes raw bytes on the open watch stream. */
  raw(b: Buffer): void;
  close(): Promise<void>;
}

/** A fake API server: lists answer from `listing()`, a watch from `watching(rv)` (an HTTP status, or a stream kept open). */
async function fake(o: { listing: (n: number) => { rv: string; items: unknown[] }; watching: (rv: string, res: http.ServerResponse) => void }): Promise<Fake> {
  const lists: string[] = [];
  const watches: string[] = [];
  let open: http.ServerResponse | undefined;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    assert.equal(url.pathname, '/api/v1/namespaces/ns/pods');
    assert.equal(url.searchParams.get('labelSelector'), 'brig.dev/owner=me');
    if (url.searchParams.get('watch') === '1') {
      const rv = url.searchParams.get('resourceVersion')!;
      watches.push(rv);
      open = res;
      return o.watching(rv, res);
    }
    const l = o.listing(lists.length);
    lists.push(l.rv);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ kind: 'PodList', metadata: { resourceVersion: l.rv }, items: l.items }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const api = new KubeApi({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, 'ns');
  return {
    api,
    lists,
    watches,
    send: (ev) => open!.write(`${JSON.stringify(ev)}\n`),
    raw: (b) => open!.write(b),
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await api.close();
    },
  };
}

const until = async (f: () => boolean, what: string) => {
  for (let i = 0; !f(); i++) {
    assert.ok(i < 200, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

test('a 410 as an ERROR event is answered by a fresh list; events update the cache, a DELETED pod reads null, a bookmark moves the version, a character split across chunks is read whole', async (t) => {
  const f = await fake({
    listing: (n) => (n === 0 ? { rv: '10', items: [pod('a', '10', 'Pending')] } : { rv: '20', items: [pod('a', '19', 'Running'), pod('b', '20', 'Running')] }),
    watching: (rv, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (rv === '10') {
        res.write(`${JSON.stringify({ type: 'MODIFIED', object: pod('a', '11', 'Running') })}\n`);
        res.end(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 10 (15)' } })}\n`);
      } else res.write(''); // kept open: events come through send()
    },
  });
  const w = new PodWatch(f.api, 'brig.dev/owner=me', { retryMs: 10 }).start();
  t.after(async () => {
    await w.close();
    await f.close();
  });
  assert.equal(w.get('a'), undefined, 'not known before the first list');
  await until(() => f.watches.includes('20'), 'the watch from the fresh list');
  assert.deepEqual(f.lists, ['10', '20'], 'listed again after the 410');
  assert.deepEqual(f.watches, ['10', '20']);
  assert.equal((w.get('a')!.status as { phase: string }).phase, 'Running');
  assert.equal(w.get('nope'), null, 'a pod the synced cache does not hold: gone');
  const since = w.version('b');
  const woke = w.changed('b', since, 10_000);
  f.send({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '25' } } });
  f.send({ type: 'DELETED', object: pod('b', '26', 'Running') });
  const t0 = Date.now();
  await woke;
  assert.ok(Date.now() - t0 < 5_000, 'woken by the event, not the bound');
  assert.equal(w.get('b'), null, 'deleted: gone');
  assert.equal(w.events, 2, 'the MODIFIED and the DELETED (a bookmark is no event of a pod)');
  // A character split across two writes (the stream's chunks) is read whole.
  const line = Buffer.from(`${JSON.stringify({ type: 'ADDED', object: { ...pod('c', '27', 'Pending'), status: { phase: 'Pending', message: 'naïve ✓ done' } } })}\n`);
  const cut = line.indexOf(Buffer.from('✓')) + 1;
  const seen = w.changed('c', w.version('c'), 10_000);
  f.raw(line.subarray(0, cut));
  await new Promise((r) => setTimeout(r, 50));
  f.raw(line.subarray(cut));
  await seen;
  assert.equal((w.get('c')!.status as { message: string }).message, 'naïve ✓ done');
});

test('a 410 as the watch\'s HTTP status is answered by a fresh list too; a watch that stalls delays a waiter only to its bound', async (t) => {
  const f = await fake({
    listing: (n) => ({ rv: String(100 + n), items: [pod('a', String(100 + n), 'Running')] }),
    watching: (rv, res) => {
      if (rv === '100') {
        res.writeHead(410, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired' }));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(''); // stalls: never a line
    },
  });
  const w = new PodWatch(f.api, 'brig.dev/owner=me', { retryMs: 10 }).start();
  t.after(async () => {
    await w.close();
    await f.close();
  });
  await until(() => f.watches.length === 2, 'the second watch');
  assert.deepEqual(f.lists, ['100', '101'], 'listed again after the HTTP 410');
  assert.ok(w.synced);
  const t0 = Date.now();
  await w.changed('a', w.version('a'), 150);
  assert.ok(Date.now() - t0 >= 140, 'nothing happened: woken by the bound');
});
