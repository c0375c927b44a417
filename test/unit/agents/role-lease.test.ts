import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { toolSurface, type AgentSpec } from '../../../src/agents/index.js';
import type { LeaseIssue } from '../../../src/runs/index.js';
import { createSupervisor } from '../../../src/runs/supervisor.js';
import { ok } from '../../../src/util/errors.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { FakeJailDriver } from '../../helpers/fakes/fake-jail.js';
import { MemoryLeases, NullBroker } from '../../helpers/fakes/memory-leases.js';

/** A lease port that records exactly what the supervisor asked for; `firstAsk` resolves at the first. */
class RecordingLeases extends MemoryLeases {
  readonly asked: LeaseIssue[] = [];
  #asked!: () => void;
  readonly firstAsk = new Promise<void>((r) => (this.#asked = r));
  override async issue(req: LeaseIssue) {
    this.asked.push(req);
    this.#asked();
    return super.issue(req);
  }
}

const spec = (role: 'worker' | 'coordinator', extra: Partial<AgentSpec> = {}): AgentSpec => ({
  name: 'x', description: 'x', instructions: 'do it', source: 'test', workspaceAware: false, role, ...extra,
});

test('[INV-1] property: the coordinator role never touches the lease — what is asked of the lease is byte-identical with and without it', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.record({ maxSteps: fc.option(fc.integer({ min: 1, max: 500 }), { nil: undefined }), timeout: fc.option(fc.integer({ min: 1, max: 3000 }), { nil: undefined }), profile: fc.option(fc.constantFrom('root', 'worker', 'coordinator'), { nil: undefined }) }),
      async (s) => {
        const asked: string[] = [];
        for (const role of ['worker', 'coordinator'] as const) {
          const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-role-'));
          const leases = new RecordingLeases();
          const the = spec(role, { ...(s.maxSteps ? { maxSteps: s.maxSteps } : {}), ...(s.timeout ? { timeout: s.timeout } : {}), ...(s.profile ? { profile: s.profile } : {}) });
          const sup = createSupervisor({
            jail: new FakeJailDriver(), leases, broker: new NullBroker(), ledger: new MemoryLedger(), tickMs: 50,
            paths: { runs: path.join(home, 'runs'), brokers: path.join(home, 'brokers') },
            agents: { spec: () => ok(the), tools: (sp, caps) => toolSurface({ caps, role: sp.role }) },
            models: { resolve: () => ok({ alias: 'm', contextWindow: 1000, maxOutputTokens: 100 }), complete: async () => { throw new Error('not called'); } },
          });
          await sup.start();
          const r = await sup.spawn({ task: 'same task', kind: 'agent', agent: 'x', async: true });
          assert.ok(r.ok);
          await sup.idle();
          await leases.firstAsk;
          const { runId: _r, rootRunId: _root, ...req } = leases.asked[0]!;
          asked.push(JSON.stringify(req));
          await sup.close();
          await fs.rm(home, { recursive: true, force: true });
        }
        assert.equal(asked[0], asked[1]);
      },
    ),
    { numRuns: 15 },
  );
});
