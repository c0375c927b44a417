/**
 * [INV-9] The slice scheduler's rules with calls it holds open itself: lanes, caps, order,
 * deadlines (the integration test, test/integration/slice/fairness.test.ts, runs the real helpers).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SliceScheduler, type SliceCaller } from '../../../src/slice/index.js';

const child = (runId: string, treeId = `t-${runId}`): SliceCaller => ({ lane: 'child', runId, treeId });
const operator: SliceCaller = { lane: 'operator' };
const far = () => Date.now() + 60_000;

/** A call that holds its slot until released; `started` says whether it got one. */
function held(s: SliceScheduler, c: SliceCaller, resource: 'helper' | 'tool' = 'helper', deadline = far()) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const h = { started: false, release, done: undefined as Promise<string> | undefined };
  h.done = s.run(c, resource, deadline, async () => {
    h.started = true;
    await gate;
    return 'ran';
  }).catch((e: { code: string; data?: { scope?: string } }) => `${e.code}${e.data?.scope ? `:${e.data.scope}` : ''}`);
  return h;
}
const settle = () => new Promise((r) => setImmediate(r));

test('[INV-9] scheduler: the operator\'s lane is its own — a child holding every child slot does not delay it', async () => {
  const s = new SliceScheduler({ child: { helpers: 1 }, operator: { helpers: 1 } });
  const a = held(s, child('a'));
  const b = held(s, child('a'));
  const op = held(s, operator);
  await settle();
  assert.equal(a.started, true);
  assert.equal(b.started, false, 'the child\'s second call waits for its lane');
  assert.equal(op.started, true, 'the operator\'s call runs at once');
  op.release();
  assert.equal(await op.done, 'ran');
  assert.equal(b.started, false, 'an operator slot never goes to a child');
  a.release();
  await a.done;
  await settle();
  assert.equal(b.started, true);
  b.release();
  await b.done;
});

test('[INV-9] scheduler: perRun, perTree and the queue refuse at once with their scope', async () => {
  const s = new SliceScheduler({ perRun: 2, perTree: 3, queue: 2, child: { helpers: 1 } });
  const calls = [held(s, child('a', 'T')), held(s, child('a', 'T')), held(s, child('a', 'T')), held(s, child('b', 'T')), held(s, child('b', 'T'))];
  await settle();
  assert.equal(await calls[2]!.done, 'rate_limited:run');
  assert.equal(await calls[4]!.done, 'rate_limited:tree');
  // Two waiting already (a's second, b's first): the queue is full for anyone.
  const q = held(s, child('c', 'U'));
  assert.equal(await q.done, 'rate_limited:queue');
  for (const c of calls) c.release();
  assert.deepEqual(await Promise.all(calls.map((c) => c.done)), ['ran', 'ran', 'rate_limited:run', 'ran', 'rate_limited:tree']);
  // Everything returned: the counts are back to nothing, the same caller is admitted again.
  const again = held(s, child('a', 'T'));
  await settle();
  assert.equal(again.started, true);
  again.release();
  await again.done;
});

test('[INV-9] scheduler: a freed slot goes to the tree served longest ago, not to the one that queued first', async () => {
  const s = new SliceScheduler({ perRun: 10, perTree: 10, child: { helpers: 1 } });
  const first = held(s, child('a1', 'A'));
  const queuedA = [held(s, child('a2', 'A')), held(s, child('a3', 'A'))];
  const queuedB = held(s, child('b1', 'B'));
  await settle();
  first.release();
  await first.done;
  await settle();
  assert.equal(queuedB.started, true, 'B was never served: it goes before A\'s earlier-queued calls');
  assert.equal(queuedA[0]!.started, false);
  queuedB.release();
  await queuedB.done;
  await settle();
  assert.equal(queuedA[0]!.started, true, 'then A, in its own order');
  queuedA[0]!.release();
  await queuedA[0]!.done;
  await settle();
  queuedA[1]!.release();
  await queuedA[1]!.done;
});

test('[INV-9] scheduler: a waiting call whose deadline passes fails timeout and never runs; a granted one gets only what is left', async () => {
  const s = new SliceScheduler({ child: { tools: 1 } });
  const hog = held(s, child('a'), 'tool');
  await settle();
  const late = held(s, child('b'), 'tool', Date.now() + 50);
  assert.equal(await late.done, 'timeout');
  assert.equal(late.started, false);
  hog.release();
  await hog.done;
  assert.equal(late.started, false, 'not run once the slot was free either');
  let given = 0;
  await s.run(child('c'), 'tool', Date.now() + 5000, async ({ remainingMs }) => void (given = remainingMs));
  assert.ok(given > 0 && given <= 5000, `remaining ${given}`);
  assert.deepEqual(s.stats().child, { running: { helper: 0, tool: 0 }, waiting: 0 });
});

test('scheduler: capacities must be positive integers', () => {
  assert.throws(() => new SliceScheduler({ perRun: 0 }), /perRun/);
  assert.throws(() => new SliceScheduler({ child: { tools: 1.5 } }), /tools/);
});
