import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ApiClient } from '../../../src/client/index.js';
import { brigPaths, loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { shippedPoliciesDir } from '../../../src/lease/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers } from '../runs/fixture.js';

const REVIEWER = `  reviewer:
    description: added while the daemon served
    groups: [workspace, models, artifacts]
    limits: { cpu: 1, memoryMb: 256, pids: 64, diskMb: 256, timeoutMs: 60000, maxSteps: 10, maxChildren: 0 }
`;

const nothingOnRecord = (home: string) => {
  for (const dir of [brigPaths(home).runs, brigPaths(home).leases]) assert.deepEqual(fs.existsSync(dir) ? fs.readdirSync(dir) : [], [], `nothing under ${path.basename(dir)}/`);
};

test('over the real daemon, a spawn naming an unknown agent spec or profile is refused at once with the names there are — never a run that then fails; a profile added to policy.yaml is named as needing the restart, and after it runs', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  let d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  let api = new ApiClient(d.socketPath);
  try {
    const spec = await api.spawn({ task: 'review', kind: 'agent', agent: 'reviewer', async: true });
    assert.equal(spec.ok, false);
    if (!spec.ok) {
      assert.equal(spec.error.code, 'invalid_input');
      assert.match(spec.error.message, /no agent spec "reviewer"/);
      assert.ok(((spec.error.data as { known?: string[] }).known ?? []).includes('general'), JSON.stringify(spec.error.data));
      assert.match(spec.error.hint, /Known: .*general/);
    }
    const prof = await api.spawn({ task: 'review', kind: 'command', argv: ['true'], profile: 'reviewer', async: true });
    assert.equal(prof.ok, false);
    if (!prof.ok) {
      assert.match(prof.error.message, /unknown profile "reviewer"/);
      assert.deepEqual((prof.error.data as { known?: string[] }).known, ['coordinator', 'researcher', 'root', 'worker']);
    }
    // The operator adds the profile to this home's policy while the daemon serves.
    fs.writeFileSync(path.join(home, 'policy.yaml'), fs.readFileSync(path.join(shippedPoliciesDir(), 'default.yaml'), 'utf8') + REVIEWER, { mode: 0o600 });
    const added = await api.spawn({ task: 'review', kind: 'command', argv: ['true'], profile: 'reviewer', async: true });
    assert.equal(added.ok, false);
    if (!added.ok) {
      assert.match(added.error.message, /profile "reviewer" was added to .*policy\.yaml after this supervisor loaded it/);
      assert.match(added.error.hint, /Restart `brig serve`/);
    }
    assert.deepEqual(await api.list({}), []);
    nothingOnRecord(home);
  } finally {
    await api.close();
    await d.close();
  }
  d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  api = new ApiClient(d.socketPath);
  try {
    const r = await api.spawn({ task: 'review', kind: 'command', argv: ['true'], profile: 'reviewer' });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed');
  } finally {
    await api.close();
    await d.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
