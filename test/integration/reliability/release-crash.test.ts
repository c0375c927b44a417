/**
 * The release after the envelope (issue 26): a run's envelope is returned once its end is
 * durable and its lease revoked; the container, volume and disk go after. A SIGKILL of the
 * daemon between the two leaves what the next start releases — nothing leaked, nothing
 * released or announced twice. A real `brig serve` talks to the real engine through a proxy
 * this test controls (test/helpers/engine-proxy.ts), which holds the container's removal so the
 * crash falls exactly in that window, with no timing. dist/ must be built.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ApiClient } from '../../../src/client/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startEngineProxy } from '../../helpers/engine-proxy.js';
import { leftovers, until } from '../runs/fixture.js';
import { daemonHome, recordOnDisk, type DaemonHome } from '../daemon/serve-proc.js';

/** The home's ledger lines of one type about one run (every segment). */
function ledgered(h: DaemonHome, type: string, runId: string): Record<string, unknown>[] {
  const dir = h.paths.ledger;
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n'))
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.type === type && e.runId === runId);
}

// req: end:released end:one-reason
test('[INV-8] SIGKILL after the envelope and before the release: the end and the revoked lease are on disk, the next start releases the jail once and announces nothing twice', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const proxy = await startEngineProxy(t);
  const serve = await h.serve([], { DOCKER_HOST: proxy.dockerHost });
  const api = new ApiClient(serve.socket);
  // The daemon's removal of the run's container waits in the proxy: the release cannot finish.
  proxy.hold(/^DELETE \S*\/containers\//);
  const r = await api.spawn({ task: 'quick', kind: 'command', argv: ['sh', '-c', 'echo kept > /workspace/out/q.txt'] });
  assert.ok(r.ok, JSON.stringify(r));
  const id = r.value.id;
  assert.deepEqual([r.value.status, r.value.endReason], ['ended', 'completed'], 'the envelope came back while the removal was held');
  assert.deepEqual(r.value.outputs, [{ path: 'q.txt', bytes: 5 }]);
  await until(() => proxy.held().some((l) => l.startsWith('DELETE ')), 'the release reached the container removal');
  const before = recordOnDisk(h.home, id);
  assert.deepEqual([before?.status, before?.endReason, before?.unreleased], ['ended', 'completed', true], 'the end is durable and says unreleased');
  assert.equal(ledgered(h, 'lease.revoked', id).length, 1, 'the lease was revoked before the envelope');
  assert.equal(ledgered(h, 'run.lifecycle_ended', id).length, 1);
  assert.ok((await leftovers(h.home)).some((l) => l === `container:${id}`), 'the container is still there');

  await serve.signal('SIGKILL');
  await proxy.close(); // the held removal dies with its connection: never forwarded

  const again = await h.serve();
  const api2 = new ApiClient(again.socket);
  assert.deepEqual(await leftovers(h.home, { released: true }), [], 'the next start released the container, volume and disk');
  await until(() => recordOnDisk(h.home, id)?.unreleased === undefined, 'the record no longer says unreleased');
  const w = await api2.wait(id, { timeoutMs: 10_000 });
  assert.ok(w.ok);
  assert.deepEqual([w.value.endReason, w.value.exitCode], ['completed', 0], 'the end is the one saved before the crash');
  assert.equal(ledgered(h, 'run.lifecycle_ended', id).length, 1, 'announced once across the crash');
  assert.equal(ledgered(h, 'lease.revoked', id).length, 1, 'the lease revoked once across the crash');
  assert.equal(ledgered(h, 'run.release_failed', id).length, 0, 'nothing of the redo failed (a release is idempotent)');
  await again.signal('SIGTERM');
});
