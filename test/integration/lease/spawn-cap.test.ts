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

// req: lease:caps-intersect
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

// The child reads its own bearer and hands it back reversed, so the test knows it without the
// plaintext being written anywhere by the child's own output.
const LEAK = `export default async function () {
  const fs = await import('node:fs');
  const t = fs.readFileSync('/workspace/.brig/token', 'utf8').trim();
  return { reversed: [...t].reverse().join(''), n: t.length };
}`;

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).filter((d) => d.isFile()).map((d) => path.join(d.parentPath, d.name));
}

test('[INV-1] a run\'s bearer token is never written under BRIG_HOME: only its sha256 is', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await home(t);
  const script = path.join(h, 'leak.mjs');
  fs.writeFileSync(script, LEAK);
  const r = await brig(h, 'spawn', '--json', '--profile', 'worker', '--script', script);
  assert.equal(r.code, 0, r.err);
  const env = JSON.parse(r.out);
  const token = [...(env.result.reversed as string)].reverse().join('');
  assert.equal(token.length, env.result.n);
  assert.ok(token.length >= 40, 'a 32-byte bearer');
  const hash = (await import('node:crypto')).createHash('sha256').update(token).digest('hex');
  const lease = JSON.parse((await brig(h, 'lease', 'show', env.run.leaseId, '--json')).out).lease;
  assert.ok(!('tokenHash' in lease), 'not even the hash is shown');
  const rec = fs.readFileSync(path.join(h, 'leases', `${env.run.leaseId}.json`), 'utf8');
  assert.ok(rec.includes(hash), 'the record holds the sha256 of the token the child had');
  const files = filesUnder(h).filter((f) => f !== script);
  assert.ok(files.length > 5, files.join('\n'));
  for (const f of files) assert.ok(!fs.readFileSync(f).includes(token), `the bearer is in ${f}`);
});

// req: lease:limits-min
test('[INV-1] a spawn narrows the token and cost budgets too: the lease is the smaller of the asked and the profile\'s; more than the profile is clamped, never granted', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await home(t);
  const small = await brig(h, 'spawn', '--json', '--profile', 'worker', '--tokens', '1000', '--cost', '0.25', '--', 'true');
  assert.equal(small.code, 0, small.err);
  const shown = async (out: string) => JSON.parse((await brig(h, 'lease', 'show', JSON.parse(out).run.leaseId as string, '--json')).out).lease as { limits: { tokens: number; costUsd: number }; refused: { what: string; code: string }[] };
  const l = await shown(small.out);
  assert.deepEqual([l.limits.tokens, l.limits.costUsd], [1000, 0.25], 'what was asked, under the profile');
  const big = await brig(h, 'spawn', '--json', '--profile', 'worker', '--tokens', '999999999', '--cost', '5000', '--', 'true');
  assert.equal(big.code, 0, big.err);
  const b = await shown(big.out);
  assert.deepEqual([b.limits.tokens, b.limits.costUsd], [200_000, 2], "the worker profile's, not more");
  assert.deepEqual(b.refused.filter((x) => x.code === 'limit_clamped').map((x) => x.what).sort(), ['costUsd', 'tokens']);
});
