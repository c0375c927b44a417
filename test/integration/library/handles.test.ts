/**
 * The library with handles (src/handles.ts) against a real daemon on a real unix socket and
 * real jails: spawn answers a handle; wait, refs by path, result, kill, steer's refusal; the
 * Result/orThrow pair; `await using` kills a live run when its block is left; `events()`
 * resolves once subscribed, so a spawn made after it is seen from its first event.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { BrigError, open, type SupervisorEvent } from '../../../src/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome } from '../runs/fixture.js';

test('a handle per run: spawn, wait, refs by path, result; refusals as Results and as throws', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  t.after(() => d.close());
  await using brig = await open({ home, mode: 'daemon' });
  assert.equal(brig.mode, 'daemon');

  const run = await brig.spawn({ task: 'table', argv: ['sh', '-c', 'printf "id,n\\n1,10\\n2,20\\n" > out/t.csv'], limits: { timeoutMs: 60_000 } }).orThrow();
  assert.match(run.id, /^r-/);
  assert.notEqual(run.spawned.status, 'ended', 'spawn answers once admitted, not at the end');
  const ended = await run.wait().orThrow();
  assert.equal(ended.endReason, 'completed');

  const sum = await run.refs.sql('out/t.csv', 'SELECT sum(n) FROM ref').orThrow();
  assert.deepEqual(sum.rows, [[30]], 'a ref named by its path in the run');
  const refs = await run.refs.list().orThrow();
  const byId = await run.refs.read(refs.find((r) => r.path === 'out/t.csv')!.ref, { line: 2, lines: 1 }).orThrow();
  assert.equal(byId.text?.trim(), '1,10', 'and by its id');
  const missing = await run.refs.read('out/nope.csv', { line: 1 });
  assert.ok(!missing.ok);
  assert.equal(missing.error.code, 'ref_not_found');
  assert.match(missing.error.hint, /out\/t\.csv/, 'the hint names the refs it has');

  const result = await run.result().orThrow();
  assert.match(result.envelope, /^- out\/t\.csv — ref_[a-z2-7]{26} csv, 15 B, 2 rows \(id, n\)$/m);
  assert.equal(typeof result.condensed.ratio, 'number', 'the condensation ratio is in the JSON answer');

  const steer = await run.steer('too late');
  assert.ok(!steer.ok);
  assert.equal(steer.error.code, 'not_running');
  await assert.rejects(run.steer('too late').orThrow(), (e: unknown) => e instanceof BrigError && e.code === 'not_running');

  const bad = await brig.spawn({ task: 'two kinds', argv: ['true'], script: 'export default async () => {}' });
  assert.ok(!bad.ok);
  assert.equal(bad.error.code, 'invalid_input');
  await assert.rejects(brig.spawn({ task: 'x', argv: ['true'], limits: { timeoutMs: -5 } }).orThrow(), (e: unknown) => e instanceof BrigError && e.code === 'invalid_input' && /timeoutMs/.test(e.message));
  const again = await brig.run(run.id).orThrow();
  assert.equal((await again.status())?.endReason, 'completed');
  const unknown = await brig.run('r-0000000000000000');
  assert.ok(!unknown.ok);
  assert.equal(unknown.error.code, 'run_not_found');
});

test('`await using` a handle kills its run when the block is left; events() resolves subscribed and sees the spawn from its first event', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  t.after(() => d.close());
  await using brig = await open({ home, mode: 'daemon' });

  await using events = await brig.events();
  let id: string;
  {
    await using run = await brig.spawn({ task: 'long', argv: ['sleep', '300'] }).orThrow();
    id = run.id;
    const now = await run.wait({ timeoutMs: 300 }).orThrow();
    assert.notEqual(now.status, 'ended', 'a bounded wait answers the live record');
  }
  const after = await brig.brig.get(id);
  assert.equal(after?.status, 'ended', 'leaving the block ended the run');
  assert.equal(after?.endReason, 'killed');

  const seen: SupervisorEvent[] = [];
  for await (const ev of events) {
    if (ev.runId !== id) continue;
    seen.push(ev);
    if (ev.type === 'lifecycle_ended') break;
  }
  assert.ok(seen.length >= 2, `events of the run: ${seen.map((e) => e.type).join(', ')}`);
  assert.equal(seen[0]!.type, 'spawned', 'the run\'s first event is there: the subscription came before the spawn');
  assert.equal(seen.at(-1)!.type, 'lifecycle_ended');
});
