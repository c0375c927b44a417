import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BrigError, err, ok } from '../../../src/util/errors.js';
import { grantAllows, type LeaseRecord } from '../../../src/lease/index.js';
import { dispatchLine, type DispatchDeps, type RunState } from '../../../src/broker/dispatch.js';
import { METHOD_NAMES, requiredCapability } from '../../../src/broker/protocol.js';
import { StrikeCounter, TokenBucket } from '../../../src/broker/rate-limit.js';
import { RefusalLog } from '../../../src/ledger/index.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { capsArb } from '../lease/arbitraries.js';

function lease(caps: LeaseRecord['caps']): LeaseRecord {
  return {
    id: 'ls_00000000000000000001', parentLeaseId: null, runId: 'r1', rootRunId: 'r1', depth: 1, profile: 'root', caps,
    limits: { cpu: 1, memoryMb: 1, pids: 1, diskMb: 1024, timeoutMs: 1, maxSteps: 0, tokens: 0, costUsd: 0, resultBytes: 0, maxChildren: 0, maxDepth: 1 },
    posture: { network: 'none', runtime: 'docker-hardened', user: 'nonroot' }, requested: {}, refused: [], tokenHash: 'x',
    issuedAt: '2026-01-01T00:00:00Z', expiresAt: '2027-01-01T00:00:00Z', revoked: null,
  };
}

function run(ledger = new MemoryLedger()): RunState {
  const refusals = new RefusalLog({ type: 'broker.denied', ids: { runId: 'r1', leaseId: 'ls_00000000000000000001' }, write: (ev) => ledger.append(ev), windowMs: 1000, now: () => 0 });
  return { runId: 'r1', leaseId: 'ls_00000000000000000001', packet: { p: 1 }, bucket: new TokenBucket(1e9, 1e9, 0), strikes: new StrikeCounter(1e9, 1000, 0), abused: false, inflight: 0, calls: 0, denied: 0, rateLimited: 0, refusals, logs: [] };
}

function deps(rec: LeaseRecord, ledger = new MemoryLedger()): DispatchDeps {
  const every = Object.fromEntries(METHOD_NAMES.map((m) => [m, () => ({ served: m })]));
  return {
    leases: { verify: (t, runId) => (t === 'good' && runId === 'r1' ? ok(rec) : err(new BrigError('unauthenticated', 'bad bearer'))) },
    ledger, handlers: every, now: () => 0, maxInflight: 4, logTail: 10, abuse: () => {},
  };
}

// req: lease:enforced
test('[INV-1] one predicate, two users: a call is served iff grantAllows(lease, METHODS[method].cap)', async () => {
  await fc.assert(
    fc.asyncProperty(capsArb, fc.constantFrom(...METHOD_NAMES), async (caps, method) => {
      const rec = lease(caps);
      const ledger = new MemoryLedger();
      const line = JSON.stringify({ v: 1, id: 1, method, token: 'good', params: {} });
      const reply = JSON.parse((await dispatchLine(line, run(ledger), deps(rec, ledger))).line);
      const allowed = grantAllows(rec, requiredCapability(method));
      if (allowed) assert.notEqual(reply.error?.code, 'capability_denied');
      else {
        assert.equal(reply.error.code, 'capability_denied');
        assert.deepEqual(ledger.events.map((e) => [e.type, e.method, e.code]), [['broker.denied', method, 'capability_denied']]);
      }
    }),
    { numRuns: 2000 },
  );
});

test('the bearer is checked before the capability; a foreign run id in params never reaches the handler', async () => {
  const rec = lease(['spawn']);
  const seen: unknown[] = [];
  const d = deps(rec);
  d.handlers = { spawn: (call) => { seen.push(call.params, call.runId); return null; } };
  const bad = JSON.parse((await dispatchLine(JSON.stringify({ v: 1, id: 'a', method: 'spawn', token: 'nope', params: { request: {} } }), run(), d)).line);
  assert.equal(bad.error.code, 'unauthenticated');
  const good = JSON.parse((await dispatchLine(JSON.stringify({ v: 1, id: 'b', method: 'spawn', token: 'good', params: { runId: 'r9', request: { task: 't', parentRunId: 'r9' } } }), run(), d)).line);
  assert.equal(good.ok, true);
  assert.deepEqual(seen, [{ request: { task: 't' } }, 'r1']);
});

test('dispatch never rejects, whatever the line', async () => {
  await fc.assert(
    fc.asyncProperty(fc.oneof(fc.string(), fc.json(), fc.jsonValue().map((v) => JSON.stringify({ v: 1, id: 1, method: 'hello', token: 'good', params: v }))), async (line) => {
      const r = await dispatchLine(line, run(), deps(lease([])));
      assert.equal(typeof JSON.parse(r.line).ok, 'boolean');
    }),
    { numRuns: 3000 },
  );
});

test('a verifier that throws is an internal error for that call, never a rejection', async () => {
  const d = deps(lease([]));
  d.leases = { verify: () => { throw new Error('ENOENT /home/secret/leases'); } };
  const r = await dispatchLine(JSON.stringify({ v: 1, id: 1, method: 'hello', token: 'good' }), run(), d);
  const reply = JSON.parse(r.line);
  assert.equal(reply.error.code, 'internal');
  assert.doesNotMatch(r.line, /secret/);
});

// req: lease:tool-surface-binds
test('[INV-1] a run opened with a method surface: a method off it is refused tool_not_offered after the capability check, on it the lease decides; hello lists the surface', async () => {
  const all = lease(['spawn', 'refs.read', 'llm', 'steer', 'kill', 'exec', 'graph']);
  await fc.assert(
    fc.asyncProperty(fc.subarray([...METHOD_NAMES]), fc.constantFrom(...METHOD_NAMES), async (surface, method) => {
      const ledger = new MemoryLedger();
      const r = { ...run(ledger), surface: new Set<string>(['hello', ...surface]) };
      const d = deps(all, ledger);
      delete d.handlers.hello; // the broker's own
      const reply = JSON.parse((await dispatchLine(JSON.stringify({ v: 1, id: 1, method, token: 'good', params: {} }), r, d)).line);
      if (method === 'hello') assert.deepEqual(reply.result.methods, METHOD_NAMES.filter((m) => r.surface.has(m)));
      else if (r.surface.has(method)) assert.notEqual(reply.error?.code, 'tool_not_offered');
      else {
        assert.equal(reply.error.code, 'tool_not_offered');
        assert.deepEqual(ledger.events.map((e) => [e.type, e.method, e.code]), [['broker.denied', method, 'tool_not_offered']]);
      }
    }),
    { numRuns: 500 },
  );
  // The lease still says no first: a surface never widens it.
  const narrow = { ...run(), surface: new Set<string>(METHOD_NAMES) };
  const denied = JSON.parse((await dispatchLine(JSON.stringify({ v: 1, id: 2, method: 'spawn', token: 'good', params: {} }), narrow, deps(lease(['llm'])))).line);
  assert.equal(denied.error.code, 'capability_denied');
});
