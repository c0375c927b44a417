import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runAgent } from '../../../src/child/agent/loop.js';
import { chooseKept, groupTurns, OBJECTIVE_PREFIX, runIdsIn, SUMMARY_PREFIX } from '../../../src/child/agent/compact.js';
import type { LlmMessage } from '../../../src/child/agent/types.js';
import { call, FakeBroker, loopOptions, packet, tempRoots } from './fake-broker.js';

const CHILD = 'r-aaaaaaaaaaaaaaaa';
const MENTIONED = 'r-bbbbbbbbbbbbbbbb';

test('compaction at the threshold: summary, [Objective Reinforcement] right after it, recent turns kept whole, child run ids listed', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const big = `echo ${MENTIONED}; i=0; while [ $i -lt 1200 ]; do printf '0123456789'; i=$((i+1)); done`;
  const b = new FakeBroker(
    [
      () => ({ toolCalls: [call('spawn', { task: 'count words', async: true }), call('shell', { command: big })], contextUsed: 3000 }),
      () => ({ toolCalls: [call('list_files', {})], contextUsed: 8000 }), // 0.8 × 10 000: compact before step 3
      (p) => {
        assert.equal(p.purpose, 'compact');
        assert.equal(p.tools, undefined);
        assert.match(b.conversation.at(-1)!.content, /summary of the work so far/);
        return { content: 'Spawned a counter and ran a shell.' };
      },
      (p) => {
        assert.equal(p.purpose, 'step');
        assert.equal(p.step, 3);
        return { toolCalls: [call('finish', { answer: 'done' })] };
      },
    ],
    { spawn: () => ({ runId: CHILD, status: 'running', endReason: null, result: null, error: null, missingOutputs: [] }) },
  );
  const out = await runAgent(loopOptions(b, packet({ contextWindow: 10_000, tools: ['shell', 'list_files', 'spawn'] }, { objective: 'know the word count' }), r));
  assert.equal(out.finished, true);
  assert.deepEqual(b.violations, [], 'no unpaired call, no line over 64 KiB');
  const resets = b.of('llm.reset');
  assert.equal(resets.length, 1);
  const msgs = resets[0]!.params.messages as LlmMessage[];
  assert.ok(msgs[0]!.role === 'user' && msgs[0]!.content.startsWith(SUMMARY_PREFIX));
  assert.match(msgs[0]!.content, /Spawned a counter and ran a shell\./);
  assert.ok(msgs[0]!.content.includes(CHILD), 'the spawned child survives');
  assert.ok(msgs[0]!.content.includes(MENTIONED), 'a run id named in a dropped turn survives');
  assert.ok(msgs[1]!.role === 'user' && msgs[1]!.content.startsWith(OBJECTIVE_PREFIX));
  assert.match(msgs[1]!.content, /know the word count/);
  // Step 2 (a list_files call and its result) is kept whole; step 1's big output is dropped.
  assert.deepEqual(msgs.slice(2).map((m) => m.role), ['assistant', 'tool']);
  assert.equal((msgs[2] as { toolCalls: { name: string }[] }).toolCalls[0]!.name, 'list_files');
  assert.ok(!JSON.stringify(msgs).includes('0123456789'.repeat(10)));
  // The spawn went out as an agent request.
  assert.deepEqual(b.of('spawn')[0]!.params, { request: { kind: 'agent', task: 'count words', async: true } });
});

test('compaction uses the task when the packet has no objective', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([
    () => ({ toolCalls: [call('list_files', {})], contextUsed: 9500 }),
    () => ({ content: 'listed' }),
    () => ({ toolCalls: [call('finish', { answer: 'x' })] }),
  ]);
  await runAgent(loopOptions(b, packet({ contextWindow: 10_000 }, { objective: null, task: 'list the files' }), r));
  const msgs = b.of('llm.reset')[0]!.params.messages as LlmMessage[];
  assert.match(msgs[1]!.content, /^\[Objective Reinforcement\] .*list the files/);
});

test('the window the supervisor reports for the model counts when it is smaller than the packet’s', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([
    () => ({ toolCalls: [call('list_files', {})], contextUsed: 8500, contextWindow: 10_000 }),
    (p) => (assert.equal(p.purpose, 'compact'), { content: 'listed' }),
    () => ({ toolCalls: [call('finish', { answer: 'x' })] }),
  ]);
  await runAgent(loopOptions(b, packet({ contextWindow: 200_000 }), r));
  assert.equal(b.of('llm.reset').length, 1);
});

test('below the threshold nothing is compacted', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([() => ({ toolCalls: [call('list_files', {})], contextUsed: 7999 }), () => ({ toolCalls: [call('finish', { answer: 'x' })] })]);
  await runAgent(loopOptions(b, packet({ contextWindow: 10_000 }), r));
  assert.equal(b.of('llm.reset').length, 0);
});

test('chooseKept never splits a tool call from its results and keeps the newest turns within the budget', () => {
  const a = (id: string, n = 1): LlmMessage => ({ role: 'assistant', content: '', toolCalls: Array.from({ length: n }, (_, i) => ({ id: `${id}${i}`, name: 'shell', input: {} })) });
  const res = (id: string, size = 10): LlmMessage => ({ role: 'tool', toolCallId: id, content: 'z'.repeat(size) });
  const conv: LlmMessage[] = [{ role: 'user', content: 'start' }, a('x', 2), res('x0', 4000), res('x1', 10), { role: 'user', content: 'steer' }, a('y'), res('y0', 400)];
  assert.deepEqual(groupTurns(conv).map((g) => g.length), [1, 3, 1, 2]);
  for (const budget of [0, 50, 130, 300, 1200, 5000]) {
    const { kept, dropped } = chooseKept(conv, budget, 12);
    assert.deepEqual([...dropped, ...kept], conv);
    assert.notEqual(kept[0]?.role, 'tool', `budget ${budget}: kept opens with a result`);
  }
  assert.deepEqual(chooseKept(conv, 300, 12).kept.map((m) => m.role), ['user', 'assistant', 'tool']);
  assert.deepEqual(chooseKept(conv, 1e9, 1).kept.map((m) => m.role), ['assistant', 'tool']);
});

test('runIdsIn finds brig run ids in texts and in tool-call inputs', () => {
  const ids = runIdsIn([
    { role: 'tool', toolCallId: 'c', content: `{"runId":"${CHILD}"}` },
    { role: 'assistant', content: 'x', toolCalls: [{ id: 'c', name: 'wait_children', input: { runIds: [MENTIONED] } }] },
    { role: 'user', content: 'r-123 is not one, nor r-zzzzzzzzzzzzzzzz' },
  ]);
  assert.deepEqual(ids, [CHILD, MENTIONED]);
});
