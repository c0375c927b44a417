import { test } from 'node:test';
import assert from 'node:assert/strict';
import { microCompact } from '../../../src/runs/micro-compact.js';
import type { ConversationMessage } from '../../../src/runs/model-port.js';

const turn = (i: number, name: string, input: unknown, size = 1000): ConversationMessage[] => [
  { role: 'assistant', content: '', toolCalls: [{ id: `c${i}`, name, input }] },
  { role: 'tool', toolCallId: `c${i}`, content: `${name}-${i}:`.padEnd(size, 'x') },
];

test('tier-0 micro-compaction: re-readable results older than the last K become stable placeholders naming the tool and what to re-read', () => {
  const msgs: ConversationMessage[] = [{ role: 'user', content: 'task' }];
  for (let i = 0; i < 30; i++) msgs.push(...turn(i, i % 2 ? 'ref_sql' : 'read_file', i % 2 ? { ref: `ref_${i}`, sql: 'SELECT 1' } : { path: `/workspace/f${i}` }));
  msgs.push(...turn(99, 'write_file', { path: '/workspace/out/w', content: 'x' }));
  const out = microCompact(msgs, 25);
  assert.equal(out.length, msgs.length, 'nothing is dropped: every call keeps its one result');
  const tools = out.filter((m) => m.role === 'tool') as { content: string; toolCallId: string }[];
  const elided = tools.filter((m) => m.content.startsWith('[older result elided'));
  assert.equal(elided.length, 5, 'the oldest 5 of 30 re-readable results');
  assert.match(elided[0]!.content, /read_file\(path="\/workspace\/f0"\)/);
  assert.match(elided[1]!.content, /ref_sql\(ref="ref_1", sql="SELECT 1"\)/);
  assert.ok(tools.find((m) => m.toolCallId === 'c99')!.content.startsWith('write_file'), 'a write is never elided');
  assert.deepEqual(microCompact(msgs, 25), out, 'stable: the same input gives the same bytes');
  assert.deepEqual(microCompact(msgs, 100), msgs, 'under K nothing changes');
  const short = [{ role: 'user' as const, content: 't' }, ...turn(1, 'read_file', { path: 'a' }, 50), ...turn(2, 'read_file', { path: 'b' }, 50)];
  assert.deepEqual(microCompact(short, 0), short, 'a result smaller than its placeholder is kept');
});
