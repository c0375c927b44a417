import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CAPABILITIES } from '../../../src/lease/index.js';
import { METHODS, METHOD_NAMES, jsonNesting, requiredCapability, resolveMethod, stripParams } from '../../../src/broker/protocol.js';
import { TokenBucket, StrikeCounter } from '../../../src/broker/rate-limit.js';

test('the method table: audience-bound capabilities, closed set', () => {
  assert.deepEqual(
    Object.fromEntries(METHOD_NAMES.map((m) => [m, requiredCapability(m)])),
    {
      hello: null, progress: null, log: null, checkpoint: null, resume: null, result: null, 'steer.poll': null,
      spawn: 'spawn', wait: 'spawn',
      'refs.list': 'refs.read', 'refs.read': 'refs.read', 'refs.grep': 'refs.read', 'refs.jq': 'refs.read', 'refs.sql': 'refs.read', 'refs.jsonpath': 'refs.read',
      'llm.append': 'llm', 'llm.reset': 'llm', 'llm.complete': 'llm', 'child.kill': 'kill', 'child.steer': 'steer', 'child.send': 'steer', 'child.status': 'spawn', 'child.explain': 'spawn', 'child.history': 'spawn',
      'session.status': null, 'session.search': null, 'session.expand': null,
      'graph.run': 'graph', 'graph.wait': 'graph', 'graph.cancel': 'graph',
    },
  );
  for (const m of METHOD_NAMES) {
    const c = requiredCapability(m);
    assert.ok(c === null || (CAPABILITIES as readonly string[]).includes(c));
  }
  assert.equal(resolveMethod('run.progress'), 'progress');
  assert.equal(resolveMethod('constructor'), undefined);
  assert.equal(resolveMethod('__proto__'), undefined);
});

test('identity fields are stripped from params and from a spawn request', () => {
  const a = stripParams('progress', { line: 'x', runId: 'other', leaseId: 'l', depth: 0 });
  assert.deepEqual(a.params, { line: 'x' });
  assert.deepEqual(a.stripped.sort(), ['depth', 'leaseId', 'runId']);
  const b = stripParams('spawn', { request: { task: 't', parentRunId: 'root', depth: 0, caps: ['llm'] }, runId: 'x' });
  assert.deepEqual(b.params, { request: { task: 't', caps: ['llm'] } });
  const c = stripParams('progress', JSON.parse('{"__proto__": {"polluted": true}, "line": "y"}'));
  assert.deepEqual(c.params, { line: 'y' });
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('stripped params never carry a forbidden field, whatever the input', () => {
  fc.assert(
    fc.property(fc.constantFrom(...METHOD_NAMES), fc.dictionary(fc.constantFrom('runId', 'leaseId', 'depth', 'token', 'line', 'request', 'x'), fc.jsonValue()), (m, p) => {
      const { params } = stripParams(m, p);
      for (const k of ['runId', 'leaseId', 'depth', 'token']) assert.ok(!(k in (params as object)));
    }),
    { numRuns: 2000 },
  );
});

test('params schemas are strict', () => {
  assert.equal(METHODS.progress.params.safeParse({ line: 'a', extra: 1 }).success, false);
  assert.equal(METHODS.log.params.safeParse({ message: 'x'.repeat(2001) }).success, false);
  assert.equal(METHODS['child.kill'].params.safeParse({ child: 'r1' }).success, true);
});

test('nesting is measured without parsing; strings are skipped', () => {
  assert.equal(jsonNesting('{"a":[1,{"b":2}]}'), 3);
  assert.equal(jsonNesting('{"a":"[[[[[[\\"[[["}'), 1);
  assert.equal(jsonNesting('['.repeat(10_000)), 10_000);
});

test('token bucket and strike window', () => {
  const b = new TokenBucket(3, 1, 0);
  assert.deepEqual([b.take(0), b.take(0), b.take(0), b.take(0)], [true, true, true, false]);
  assert.equal(b.take(1000), true);
  const s = new StrikeCounter(3, 1000, 0);
  assert.deepEqual([s.strike(0), s.strike(10), s.strike(20)], [false, false, true]);
  const t = new StrikeCounter(3, 1000, 0);
  t.strike(0);
  t.strike(0);
  assert.equal(t.strike(5000), false, 'old strikes leave the window');
});
