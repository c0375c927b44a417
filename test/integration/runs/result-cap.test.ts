/**
 * The lease's resultBytes bounds what a real jailed run may materialize (INV-1, INV-4):
 * a file over it is not collected and the run says `ref_too_large`, nothing is truncated or
 * half-kept; under it the files arrive intact.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { shippedPoliciesDir } from '../../../src/lease/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, supervisorAt } from './fixture.js';

const WRITE = (bytes: number) => ['node', '-e', `require('node:fs').writeFileSync('out/blob.bin', Buffer.alloc(${bytes}, 7))`];

// req: results:caps-refuse
test('[INV-4] [INV-1] a run over its lease resultBytes is refused with ref_too_large; under it the output arrives whole', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const shipped = fs.readFileSync(path.join(shippedPoliciesDir(), 'default.yaml'), 'utf8');
  const tight = shipped.replaceAll('resultBytes: 67108864', 'resultBytes: 4096');
  assert.notEqual(tight, shipped, 'the root profile names its resultBytes');
  fs.writeFileSync(path.join(home, 'policy.yaml'), tight);
  const c = await supervisorAt(home);
  try {
    const over = await c.supervisor.spawn({ task: 'too much', kind: 'command', argv: WRITE(10_000) });
    assert.ok(over.ok, over.ok ? '' : over.error.message);
    assert.equal(over.value.error?.code, 'ref_too_large', JSON.stringify(over.value));
    assert.notEqual(over.value.endReason, 'completed');
    assert.equal(fs.existsSync(path.join(home, 'results', over.value.id, over.value.id, 'out', 'blob.bin')), false, 'nothing half-kept');

    const under = await c.supervisor.spawn({ task: 'fits', kind: 'command', argv: WRITE(3000) });
    assert.ok(under.ok, under.ok ? '' : under.error.message);
    assert.equal(under.value.endReason, 'completed', JSON.stringify(under.value.error));
    assert.deepEqual(under.value.outputs, [{ path: 'blob.bin', bytes: 3000 }]);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
