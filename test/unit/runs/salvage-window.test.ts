/**
 * An agent being stopped (its end saved, `materializing` with a pending end, SIGTERM and a grace)
 * may make its one salvage call and send its partial result — and nothing else: not a step, not a
 * spawn, not a steer of a child. The handlers are the broker's own (childCallHandlers) over a real
 * run table and store; the model service and the actions are stand-ins that record what reached them.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { childCallHandlers } from '../../../src/runs/child-calls.js';
import { createRunRecord } from '../../../src/runs/record.js';
import { RunStore } from '../../../src/runs/run-store.js';
import { RunTable, type RunPorts } from '../../../src/runs/run-table.js';
import { DEFAULT_SETTINGS } from '../../../src/runs/settings.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';

test('an agent in its stop grace: llm.append, the salvage llm.complete and result are answered; a step, a spawn and a child steer are not_running', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-salvage-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const table = new RunTable(new RunStore(dir), new MemoryLedger(), { now: () => new Date() });
  const rec = createRunRecord({
    id: 'r-00000000000000a1', parent: null, callerId: 'operator', agent: 'general', kind: 'agent', label: null, task: 'stopping',
    requestHash: 'h', now: new Date(), timeoutMs: 60_000, maxSteps: 40, async: false, expectedOutputs: [], resumeOf: null,
  });
  table.runs.set(rec.id, { ...rec, status: 'materializing', pendingEnd: { reason: 'killed', killedBy: 'operator' }, partial: true });
  table.live.set(rec.id, { jail: {} as never, caps: ['spawn', 'llm'] as never, steers: [] });
  const reached: string[] = [];
  const ports: RunPorts = {
    table,
    settings: DEFAULT_SETTINGS,
    actions: new Proxy({}, { get: (_t, k) => () => { reached.push(`action ${String(k)}`); throw new Error('no action may run'); } }) as never,
    llm: {
      append: async () => (reached.push('append'), 1),
      reset: async () => (reached.push('reset'), 1),
      complete: async (_r: unknown, p: { purpose?: string }) => (reached.push(`complete ${p.purpose}`), { message: { role: 'assistant', content: 'partial report' } }),
    } as never,
  };
  const h = childCallHandlers(ports);
  const call = (method: keyof typeof h, params: unknown) => (h[method] as (c: unknown) => Promise<unknown>)({ runId: rec.id, leaseId: 'l', method, params });

  await call('llm.append', { messages: [{ role: 'user', content: 'salvage please' }] });
  await call('llm.complete', { purpose: 'salvage', system: 's' });
  assert.deepEqual(await call('result', { value: { answer: 'partial', partial: true } }), { saved: true });
  assert.deepEqual(table.get(rec.id)!.result, { answer: 'partial', partial: true });
  const notRunning = (e: { code?: string }) => e.code === 'not_running';
  await assert.rejects(call('llm.complete', { purpose: 'step', system: 's' }), notRunning, 'a step is not answered in the grace');
  await assert.rejects(call('spawn', { request: { task: 'x', kind: 'command', argv: ['true'] } }), notRunning, 'no child is spawned by a run being stopped');
  await assert.rejects(call('child.steer', { child: 'r-00000000000000b2', message: 'x' }), notRunning);
  await assert.rejects(call('llm.complete', { purpose: 'salvage', system: 's' }), (e: { code?: string }) => e.code === 'budget_exceeded', 'one salvage call only');
  assert.deepEqual(reached, ['append', 'complete salvage']);
  // The same run once it is no longer live (its jail released): nothing at all.
  table.live.delete(rec.id);
  await assert.rejects(call('result', { value: 1 }), notRunning);
});
