import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { exchange, parseReply, WireError } from '../../../src/client/wire.js';

const reply = (s: string) => Buffer.from(s, 'latin1');

test('parseReply: content-length, chunked, and each malformed reply refused', () => {
  assert.deepEqual(parseReply(reply('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}extra')), { status: 200, body: '{}' });
  assert.deepEqual(parseReply(reply('HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"a\r\n4\r\n":1}\r\n0\r\n\r\n')), { status: 404, body: '{"a":1}' });
  assert.deepEqual(parseReply(Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n"é"')), { status: 200, body: '"é"' }, 'the length is in bytes');
  for (const [bad, why] of [
    ['HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{}', /cut short/],
    ['HTTP/1.1 200 OK\r\ncontent-length: 2\r\n', /no complete HTTP head/],
    ['SSH-2.0-OpenSSH\r\n\r\n', /no HTTP status line/],
    ['HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n', /bad content-length/],
    ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab', /cut short/],
    ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n', /bad chunk size/],
  ] as const) {
    assert.throws(() => parseReply(reply(bad)), (e: unknown) => e instanceof WireError && e.reason === 'malformed' && why.test(e.message), bad);
  }
});

test('exchange over a real unix socket: GET and POST with a body, a slow reply is not cut, abort, timeout and the byte bound', async (t) => {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-wire-'));
  const socketPath = path.join(dir, 's.sock');
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      if (req.url === '/slow') return setTimeout(() => res.end(JSON.stringify({ late: true })), 400);
      if (req.url === '/hang') return; // never answers
      if (req.url === '/big') return res.end('x'.repeat(100_000));
      if (req.url === '/chunked') {
        res.write('{"parts":');
        return setTimeout(() => res.end('[1,2]}'), 20);
      }
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, url: req.url, type: req.headers['content-type'] ?? null, body }));
    });
  });
  await new Promise<void>((r) => server.listen(socketPath, r));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await fs.promises.rm(dir, { recursive: true, force: true });
  });

  const get = await exchange({ socketPath, method: 'GET', path: '/v1/runs?limit=2' });
  assert.equal(get.status, 200);
  assert.deepEqual(JSON.parse(get.body), { method: 'GET', url: '/v1/runs?limit=2', type: null, body: '' });
  const post = await exchange({ socketPath, method: 'POST', path: '/x', body: JSON.stringify({ text: 'héllo' }) });
  assert.equal(post.status, 201);
  assert.deepEqual(JSON.parse(post.body), { method: 'POST', url: '/x', type: 'application/json', body: '{"text":"héllo"}' });
  // The client never half-closes: Node's server would abort a request whose client sent FIN.
  assert.deepEqual(JSON.parse((await exchange({ socketPath, method: 'POST', path: '/slow', body: '{}' })).body), { late: true });
  assert.deepEqual(JSON.parse((await exchange({ socketPath, method: 'GET', path: '/chunked' })).body), { parts: [1, 2] });

  const ac = new AbortController();
  setTimeout(() => ac.abort(), 50);
  await assert.rejects(exchange({ socketPath, method: 'GET', path: '/hang', signal: ac.signal }), (e: unknown) => e instanceof WireError && e.reason === 'aborted');
  await assert.rejects(exchange({ socketPath, method: 'GET', path: '/hang', timeoutMs: 100 }), (e: unknown) => e instanceof WireError && e.reason === 'timeout');
  await assert.rejects(exchange({ socketPath, method: 'GET', path: '/big', maxBytes: 10_000 }), (e: unknown) => e instanceof WireError && e.reason === 'too_large');
  await assert.rejects(exchange({ socketPath: path.join(dir, 'none.sock'), method: 'GET', path: '/' }), (e: unknown) => e instanceof WireError && e.reason === 'transport');
});
