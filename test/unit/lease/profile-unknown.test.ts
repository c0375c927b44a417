import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { leasePort } from '../../../src/daemon/adapters.js';
import { loadAgentCatalog } from '../../../src/agents/index.js';
import { LeaseStore, loadPolicyFile } from '../../../src/lease/index.js';
import { MemoryLedger } from '../../helpers/fakes/memory-ledger.js';
import { tempDir } from '../../helpers/temp-dir.js';

const POLICY = (extra = '') => `version: 1
groups:
  models: { caps: [llm], tools: [llm_complete] }
profiles:
  root:
    groups: [models]
    limits: { cpu: 1, memoryMb: 256, pids: 32, timeoutMs: 1000, maxSteps: 1, tokens: 1, costUsd: 1, resultBytes: 1, maxChildren: 1, maxDepth: 1 }
    posture: { network: none, runtime: docker-hardened, user: nonroot }
  worker:
    groups: [models]
    limits: { memoryMb: 128 }
${extra}`;

test('a spawn naming an unknown profile is refused before any run: the name, the profiles there are; one added to the file since the start is named as such, with the restart that loads it', () => {
  const dir = tempDir('brig-prof-');
  const file = path.join(dir, 'policy.yaml');
  fs.writeFileSync(file, POLICY());
  const pol = loadPolicyFile(file);
  assert.ok(pol.ok);
  const port = leasePort(new LeaseStore({ dir: path.join(dir, 'leases'), policy: pol.value, ledger: new MemoryLedger() }), pol.value, () => file);
  assert.ok(port.checkProfile!('worker').ok);
  const miss = port.checkProfile!('reviewer');
  assert.equal(miss.ok, false);
  if (!miss.ok) {
    assert.equal(miss.error.code, 'invalid_input');
    assert.match(miss.error.message, /unknown profile "reviewer"/);
    assert.deepEqual(miss.error.data, { field: 'profile', profile: 'reviewer', known: ['root', 'worker'] });
    assert.match(miss.error.hint, /Profiles: root, worker\./);
  }
  fs.writeFileSync(file, POLICY('  reviewer:\n    groups: [models]\n'));
  const added = port.checkProfile!('reviewer');
  assert.equal(added.ok, false, 'the policy in force is the one loaded at start: never half-loaded');
  if (!added.ok) {
    assert.match(added.error.message, /profile "reviewer" was added to .*policy\.yaml after this supervisor loaded it/);
    assert.match(added.error.hint, /Restart `brig serve`/);
  }
});

test('a spawn naming an unknown agent spec is refused with the name and the specs there are; one written since is found without a restart', () => {
  const dir = tempDir('brig-spec-');
  fs.writeFileSync(path.join(dir, 'scout.md'), '---\nname: scout\ndescription: looks around\n---\nLook.\n');
  const catalog = loadAgentCatalog([dir]);
  const miss = catalog.get('reviewer');
  assert.equal(miss.ok, false);
  if (!miss.ok) {
    assert.deepEqual(miss.error.data, { field: 'agent', agent: 'reviewer', known: ['scout'] });
    assert.match(miss.error.hint, /Known: scout/);
  }
  fs.writeFileSync(path.join(dir, 'reviewer.md'), '---\nname: reviewer\ndescription: reviews\n---\nReview.\n');
  assert.equal(catalog.get('reviewer').ok, true);
});
