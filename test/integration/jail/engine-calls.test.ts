/**
 * What an engine call costs the daemon's main thread beyond the request itself (issue 29 item 7):
 * docker-modem formats every request's options with util.inspect({ showHidden, depth: null })
 * even with debug output off, the driver's connection agent among them. With the agent's kept
 * connections walked in full, that was 21 s of a 34-s main thread at 20 live jails
 * (bench/api-stall.bench.ts); the agent now prints as its name. Real engine, real connections.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import util from 'node:util';
import { DockerJailDriver } from '../../../src/jail/index.js';
import { requireEngine } from '../../helpers/engine.js';

test('an engine call formats its request in a bounded size, however many connections the driver keeps open', async (t) => {
  if (!(await requireEngine(t))) return;
  const driver = new DockerJailDriver({ owner: `ec-${process.pid}` });
  t.after(() => driver.close());
  // Ten kept-alive connections in the driver's agent.
  await Promise.all(Array.from({ length: 10 }, () => driver.docker.listContainers({ limit: 1 })));
  const formatted: number[] = [];
  const real = util.inspect;
  const watched = ((v: unknown, o?: util.InspectOptions) => {
    const s = real(v, o);
    if (o?.showHidden === true) formatted.push(s.length);
    return s;
  }) as typeof util.inspect;
  Object.assign(watched, real);
  util.inspect = watched;
  try {
    await driver.docker.listContainers({ limit: 1 });
    await driver.docker.ping();
  } finally {
    util.inspect = real;
  }
  assert.ok(formatted.length >= 2, `the watch saw the modem format each request (${formatted.length})`);
  assert.ok(Math.max(...formatted) < 4096, `a request's options formatted to ${Math.max(...formatted)} characters`);
});
