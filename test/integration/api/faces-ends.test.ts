/**
 * The faces at their edges, on a real daemon over its real unix socket: the event stream
 * when the daemon stops under it, and a bad or unknown run id on every run route.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { Client } from 'undici';
import { ApiClient } from '../../../src/client/index.js';
import { main } from '../../../src/cli/cli.js';
import { loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { isBrigError } from '../../../src/util/errors.js';
import { runCli } from '../../helpers/cli.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, until } from '../runs/fixture.js';

/** The CLI in-process, with its stdout readable while it still runs (`brig events` follows). */
function startCli(argv: string[], home: string): { out: () => string; err: () => string; done: Promise<number> } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  const done = main(argv, { stdout, stderr, env: { BRIG_HOME: home }, isTTY: false });
  return { out: () => out, err: () => err, done };
}

test('brig events: the daemon stopping mid-stream ends it with daemon_unavailable (exit 7), not internal; an aborted stream ends quietly', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  let stopped = false;
  const api = new ApiClient(d.socketPath);
  try {
    const cli = startCli(['events', '--json'], home);
    const quiet = new AbortController();
    const aborted = (async () => {
      for await (const _ of api.events({ signal: quiet.signal }));
    })();
    // Settled into a value at once: its rejection arrives while the CLI is still awaited.
    const followed = (async () => {
      for await (const _ of api.events());
    })().then(() => undefined, (e: unknown) => e);
    // A run's `spawned` on the CLI's stdout proves its stream is live before the daemon stops.
    await until(async () => {
      if (cli.out().includes('"spawned"')) return true;
      const r = await api.spawn({ task: 'a blip on the stream', kind: 'command', argv: ['true'] });
      assert.ok(r.ok, r.ok ? '' : r.error.message);
      return cli.out().includes('"spawned"');
    }, 'brig events saw a spawn', 20);
    quiet.abort();
    await aborted; // the caller's abort: no error
    await d.close();
    stopped = true;

    const code = await cli.done;
    const last = cli.out().trim().split('\n').at(-1)!;
    const { error } = JSON.parse(last) as { error: { code: string; message: string; hint: string } };
    assert.equal(error.code, 'daemon_unavailable', cli.err());
    assert.equal(error.message, 'the daemon stopped; the event stream ended');
    assert.equal(error.hint, 'Start `brig serve` again and rerun `brig events`.');
    assert.equal(code, 7, 'exit code of kind unavailable');
    assert.match(cli.err(), /the daemon stopped; the event stream ended \[daemon_unavailable\]/);
    assert.doesNotMatch(cli.err(), /internal|other side closed|bug in brig/);

    const ended = await followed;
    assert.ok(isBrigError(ended, 'daemon_unavailable') && /daemon stopped/.test(ended.message), `the library stream too: ${String(ended)}`);
  } finally {
    await api.close();
    if (!stopped) await d.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('a bad or unknown run id through the daemon answers 404 run_not_found on every run route; the CLI prints run_not_found', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  const http = new Client('http://brig', { socketPath: d.socketPath });
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const r = await http.request({ method, path, ...(body ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}) });
    return { status: r.statusCode, json: (await r.body.json()) as { error?: { code: string; message: string; hint: string } } };
  };
  try {
    const ids = ['BADID', 'r-doesnotexist', 'r-UPPER-CASE', '..%2F..%2Fetc', 'r-' + 'a'.repeat(300), '%E0%A4%A'];
    const routes: [('GET' | 'POST'), string, unknown?][] = [
      ['GET', ''],
      ['POST', ''],
      ['GET', '/refs'],
      ['GET', '/result'],
      ['POST', '/wait', { timeoutMs: 100 }],
      ['POST', '/kill', { confirm: true }],
      ['POST', '/steer', { message: 'hello' }],
      ['POST', '/resume'],
      ['GET', '/no-such-verb'],
      ['POST', '/deeper/still'],
    ];
    for (const id of ids) {
      for (const [method, sub, body] of routes) {
        const r = await call(method, `/v1/runs/${id}${sub}`, body);
        const what = `${method} /v1/runs/${id.slice(0, 20)}${sub}`;
        assert.equal(r.status, 404, `${what}: ${JSON.stringify(r.json)}`);
        assert.equal(r.json.error?.code, 'run_not_found', what);
        assert.match(r.json.error!.hint, /GET \/v1\/runs/, `${what}: an HTTP client is shown the route, not a CLI command`);
        assert.ok(r.json.error!.message.length < 200, `${what}: the message does not echo a long id whole`);
      }
    }
    // A path that names no resource at all is 404 route_not_found, naming the API.
    const nowhere = await call('GET', '/v1/nowhere');
    assert.equal(nowhere.status, 404);
    assert.equal(nowhere.json.error?.code, 'route_not_found');
    assert.match(nowhere.json.error!.hint, /\/v1/);

    for (const id of ['BADID', 'r-doesnotexist']) {
      for (const argv of [['result', id], ['kill', id, '--confirm'], ['wait', id], ['steer', id, 'hello'], ['resume', id]]) {
        const r = await runCli([...argv, '--json'], { home });
        const what = `brig ${argv.join(' ')}`;
        assert.equal(JSON.parse(r.out).error.code, 'run_not_found', `${what}: ${r.out}${r.err}`);
        assert.equal(r.code, 4, `${what}: exit code of kind not_found`);
        assert.match(r.err, /\[run_not_found\]\n {2}→ .*brig list/, what);
      }
    }
  } finally {
    await http.close();
    await d.close();
  }
});
