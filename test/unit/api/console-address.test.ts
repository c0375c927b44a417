import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { STALE_TOKEN_PAGE, consoleAddress, listenConsole } from '../../../src/console/console.js';
import { isBrigError } from '../../../src/util/errors.js';

test('the console address: loopback only, a free port by default, anything else refused with a hint', () => {
  assert.deepEqual(consoleAddress(undefined), { host: '127.0.0.1', port: 0 });
  assert.deepEqual(consoleAddress(''), { host: '127.0.0.1', port: 0 });
  assert.deepEqual(consoleAddress('127.0.0.1:8080'), { host: '127.0.0.1', port: 8080 });
  assert.deepEqual(consoleAddress(':9000'), { host: '127.0.0.1', port: 9000 });
  assert.deepEqual(consoleAddress('[::1]:0'), { host: '::1', port: 0 });
  assert.deepEqual(consoleAddress('localhost:1234'), { host: 'localhost', port: 1234 });
  for (const bad of ['0.0.0.0:80', '10.0.0.1:80', 'example.com:80', '[::]:80', '127.0.0.1:99999', 'a:b:c']) {
    assert.throws(() => consoleAddress(bad), (e: unknown) => isBrigError(e) && e.code === 'invalid_input', bad);
  }
});

test('the console hands the API a request without its token, whether it came as a query or a header; without the token: 401', async (t) => {
  const seen: { url?: string; headers: Record<string, unknown>; raw: string[] }[] = [];
  const ui = await listenConsole((req, res) => {
    seen.push({ url: req.url, headers: { ...req.headers }, raw: [...req.rawHeaders] });
    res.writeHead(200, { 'content-length': 0 });
    res.end();
  });
  t.after(() => ui.close());
  const token = new URL(ui.url).searchParams.get('token')!;
  const base = new URL('/', ui.url).toString();
  assert.equal((await fetch(`${base}api/v1/runs?limit=2&token=${token}`)).status, 200);
  assert.equal((await fetch(`${base}api/v1/runs`, { headers: { authorization: `Bearer ${token}`, 'x-other': 'kept' } })).status, 200);
  assert.equal((await fetch(`${base}api/v1/runs`, { headers: { authorization: 'Bearer wrong' } })).status, 401);
  assert.equal(seen.length, 2, 'the refused request never reached the API');
  assert.equal(seen[0]!.url, '/v1/runs?limit=2');
  assert.equal(seen[1]!.headers.authorization, undefined);
  assert.equal(seen[1]!.headers['x-other'], 'kept');
  for (const s of seen) assert.ok(!JSON.stringify(s).includes(token), 'the API saw no trace of the token');
});

/** One request over the real socket with the Host header we choose (fetch cannot set it). */
function get(url: string, host: string | undefined, token: string): Promise<{ status: number; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'GET', headers, setHost: host !== undefined }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    if (host !== undefined) req.setHeader('host', host);
    req.on('error', reject);
    req.end();
  });
}

test('the console refuses a request whose Host is not a loopback name (DNS rebinding) with an empty 421, token or not; the API never sees it', async (t) => {
  const seen: string[] = [];
  const ui = await listenConsole((req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(200, { 'content-length': 0 });
    res.end();
  });
  t.after(() => ui.close());
  const token = new URL(ui.url).searchParams.get('token')!;
  const { port } = new URL(ui.url);
  const api = new URL('/api/v1/runs', ui.url).toString();
  const page = new URL('/', ui.url).toString();
  for (const host of [`rebound.example:${port}`, 'rebound.example', `127.0.0.1.nip.io:${port}`, `[::2]:${port}`, '']) {
    for (const url of [api, page]) {
      const r = await get(url, host, token);
      assert.equal(r.status, 421, `Host ${JSON.stringify(host)} on ${url}`);
      assert.equal(r.body, '');
    }
  }
  assert.deepEqual(seen, [], 'nothing reached the API');
  // The listen address itself, and the loopback names an SSH tunnel's local end may use.
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost:9000', '127.0.0.1:9000']) {
    assert.equal((await get(api, host, token)).status, 200, host);
  }
  assert.equal((await get(page, `127.0.0.1:${port}`, token)).status, 200);
});

test('a person opening the page with a missing, wrong or stale token gets one constant page saying what to do; the API an empty 401', async (t) => {
  const ui = await listenConsole((_req, res) => {
    res.writeHead(200, { 'content-length': 0 });
    res.end();
  });
  t.after(() => ui.close());
  const token = new URL(ui.url).searchParams.get('token')!;
  const base = new URL('/', ui.url).toString();
  const pages = [];
  for (const q of ['', '?token=', `?token=${'x'.repeat(token.length)}`, `?token=${token.slice(0, -1)}`]) {
    const r = await fetch(base + q);
    assert.equal(r.status, 401, q);
    assert.match(r.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    pages.push(await r.text());
  }
  assert.deepEqual(new Set(pages), new Set([STALE_TOKEN_PAGE]), 'the same page whatever the guess');
  assert.doesNotMatch(STALE_TOKEN_PAGE, /<script|r-[0-9a-f]{16}/);
  const head = await fetch(base, { method: 'HEAD' });
  assert.equal(head.status, 401);
  for (const p of ['api/v1/runs', 'api/v1/events', 'nope']) {
    const r = await fetch(base + p);
    assert.equal(r.status, 401, p);
    assert.equal(await r.text(), '', p);
  }
});
