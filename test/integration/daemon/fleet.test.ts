/**
 * `brig fleet` over real runs, through a real daemon and then with no daemon (the records and
 * the ledger on disk): the same roll-up both ways, content-free.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { FleetReport } from '../../../src/index.js';
import { exchange } from '../../../src/client/wire.js';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome } from './serve-proc.js';

test('brig fleet: ends by reason and killedBy, refusals by code, what stayed out of context, top trees — via the daemon and from disk alike', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve();
  assert.equal((await h.run(['spawn', '--json', '--task', 'SECRET-TASK', '--', 'sh', '-c', 'seq 1 20000 > out/n.txt'])).code, 0);
  assert.equal((await h.run(['spawn', '--json', '--', 'sh', '-c', 'exit 3'])).code, 1);
  const script = path.join(h.home, 'refused.mjs');
  fs.writeFileSync(script, "export default async function (brig) { try { await brig.refs('r-0000000000000000'); } catch (e) { return e.code; } }");
  assert.equal((await h.run(['spawn', '--json', '--cap', 'exec', '--script', script])).code, 0);
  const long = JSON.parse((await h.run(['spawn', '--async', '--json', '--', 'sleep', '60'])).stdout) as { runId: string };
  for (let i = 0; i < 100; i++) {
    const l = JSON.parse((await h.run(['list', '--json'])).stdout) as { runs: { id: string; status: string }[] };
    if (l.runs.find((x) => x.id === long.runId)?.status === 'running') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal((await h.run(['kill', long.runId, '--confirm'])).code, 0);
  await h.run(['wait', long.runId]);

  const viaDaemon = JSON.parse((await h.run(['fleet', '--json', '--since', '1h'])).stdout) as { fleet: FleetReport };
  const f = viaDaemon.fleet;
  assert.equal(f.runs, 4);
  assert.equal(f.live, 0);
  assert.deepEqual(f.byEndReason, { completed: 2, failed: 1, killed: 1 });
  assert.deepEqual(f.byKilledBy, { operator: 1 });
  assert.equal(f.stuckKills, 0);
  assert.equal(f.refusals.byCode.capability_denied, 1);
  assert.equal(f.refusals.byKind.broker, 1);
  assert.equal(f.keptOutOfContext.runs, 4, 'every ended run has an envelope');
  assert.ok(f.keptOutOfContext.materializedBytes > 100_000 && f.keptOutOfContext.estSavedTokens > 20_000, JSON.stringify(f.keptOutOfContext));
  assert.equal(f.topTrees.length, 4);
  const human = await h.run(['fleet']);
  assert.match(human.stdout, /runs +4 \(0 live\): completed 2, failed 1, killed 1/);
  assert.match(human.stdout, /refusals +1 \(broker 1\): capability_denied 1/);
  assert.match(human.stdout, /^egress +none$/m, 'no run had egress');
  assert.match(human.stdout, /^spawn latency p50 [\d,]+ ms, p95 [\d,]+ ms \(request → child started, 4 run\(s\)\)$/m);
  assert.deepEqual(f.egress, { connections: 0, bytesUp: 0, bytesDown: 0, byRule: {}, refusals: 0, refusalsByReason: {} });
  assert.doesNotMatch(human.stdout + JSON.stringify(f), /SECRET-TASK/);
  const bad = await exchange({ socketPath: serve.socket, method: 'GET', path: '/v1/fleet?since=soon' });
  assert.equal(bad.status, 400);

  await serve.signal('SIGTERM');
  const fromDisk = JSON.parse((await h.run(['fleet', '--json', '--since', '1h'])).stdout) as { fleet: FleetReport };
  const strip = (x: FleetReport) => ({ ...x, since: '', until: '' });
  assert.deepEqual(strip(fromDisk.fleet), strip(f), 'with no daemon, the same roll-up from the records and the ledger on disk');
  const badFlag = await h.run(['fleet', '--since', 'yesterday']);
  assert.equal(badFlag.code, 2);
  assert.match(badFlag.stderr, /30m, 24h, 7d/);
});
