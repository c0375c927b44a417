import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BROKER_METHODS } from '../../../src/protocol/index.js';
import { RUN_METHODS } from '../../../src/runs/child-calls.js';
import { CHILD_REF_METHODS } from '../../../src/refs/index.js';
import { GRAPH_METHODS } from '../../../src/daemon/graphs.js';

test('every method of the broker table has exactly one handler: the broker\'s own (hello, log), the supervisor\'s childCalls, ChildRefs\' or the graphs\' (graph.run)', () => {
  const handled = ['hello', 'log', ...RUN_METHODS, ...CHILD_REF_METHODS, ...GRAPH_METHODS];
  assert.equal(new Set(handled).size, handled.length, 'no method is handled twice');
  assert.deepEqual([...handled].sort(), Object.keys(BROKER_METHODS).sort());
});
