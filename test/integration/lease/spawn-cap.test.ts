import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { DockerJailDriver, ownerForHome } from '../../../src/jail/index.js';
import { brig } from '../../unit/lease/cli-io.js';

async function home(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const d = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-scap-'));
  t.after(async () => {
    await new DockerJailDriver({ owner: ownerForHome(d) }).sweep(() => false).catch(() => {});
    await fs.promises.rm(d, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  });
  return d;
}

test('[INV-1] brig spawn --profile/--cap: the lease is the profile ∩ the asked caps; the rest is refused with reasons', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await home(t);
  const r = await brig(h, 'spawn', '--json', '--profile', 'worker', '--cap', 'spawn', '--cap', 'exec', '--cap', 'net.egress', '--', 'true');
  assert.equal(r.code, 0, r.err);
  const leaseId = JSON.parse(r.out).run.leaseId as string;
  const show = await brig(h, 'lease', 'show', leaseId, '--json');
  assert.equal(show.code, 0, show.err);
  const l = JSON.parse(show.out).lease;
  assert.equal(l.profile, 'worker');
  assert.deepEqual(l.requested.caps, ['spawn', 'exec', 'net.egress'], 'what was asked is kept, in order');
  assert.deepEqual(l.caps, ['exec'], 'granted = asked ∩ worker profile − denylist');
  assert.deepEqual(
    l.refused.map((x: { what: string; code: string }) => `${x.what}:${x.code}`),
    ['spawn:capability_denied', 'net.egress:denylisted'],
  );
  assert.equal(l.limits.maxChildren, 0, "the worker profile's limits, not root's");
  assert.ok(!('tokenHash' in l));
});

test('brig spawn refuses an unknown --cap or --profile with the nearest name, before any run or lease exists', async () => {
  const h = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-scap-'));
  try {
    const cap = await brig(h, 'spawn', '--cap', 'exce', '--', 'true');
    assert.notEqual(cap.code, 0);
    assert.match(cap.err, /unknown capability exce/);
    assert.match(cap.err, /Did you mean "exec"\?/);
    const prof = await brig(h, 'spawn', '--profile', 'wroker', '--', 'true');
    assert.notEqual(prof.code, 0);
    assert.match(prof.err, /unknown profile "wroker"/);
    assert.match(prof.err, /Did you mean "worker"\?/);
    for (const sub of ['leases', 'runs']) {
      const d = path.join(h, sub);
      assert.deepEqual(fs.existsSync(d) ? fs.readdirSync(d) : [], [], `nothing under ${sub}/`);
    }
  } finally {
    await fs.promises.rm(h, { recursive: true, force: true });
  }
});
