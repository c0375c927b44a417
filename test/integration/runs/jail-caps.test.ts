import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { shippedPoliciesDir } from '../../../src/lease/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, supervisorAt } from './fixture.js';

/** Every ledger line of this home (segments are JSON lines). */
async function ledgerLines(home: string): Promise<Record<string, unknown>[]> {
  const dir = path.join(home, 'ledger');
  const out: Record<string, unknown>[] = [];
  for (const f of (await fs.promises.readdir(dir)).sort()) {
    const text = await fs.promises.readFile(path.join(dir, f), 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      try {
        const v = JSON.parse(line) as Record<string, unknown>;
        out.push((v.event as Record<string, unknown> | undefined) ?? v);
      } catch {
        // an anchor or a partial line: not an event
      }
    }
  }
  return out;
}

// req: lease:enforced
test('[INV-1] capabilities bind at the jail: no `exec`, no command or script child; no `artifacts.read`, no artifacts (each with a control)', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  // The artifact lives outside brig's home: brig refuses its own state as an artifact.
  const artifact = path.join(await freshHome(t), 'input.txt');
  await fs.promises.writeFile(artifact, 'artifact-bytes\n');
  const shipped = fs.readFileSync(path.join(shippedPoliciesDir(), 'default.yaml'), 'utf8');
  const sealed = `  sealed:
    description: runs its own code, sees no artifacts
    groups: [workspace]
    limits: { cpu: 1, memoryMb: 512, pids: 128, timeoutMs: 300000, maxSteps: 60, tokens: 0, costUsd: 0, resultBytes: 67108864, maxChildren: 0, maxDepth: 3 }
`;
  fs.writeFileSync(path.join(home, 'policy.yaml'), shipped.replace('  worker:\n', `${sealed}  worker:\n`));
  const c = await supervisorAt(home);
  try {
    // The coordinator profile has no exec: its command never runs.
    const denied = await c.supervisor.spawn({ task: 'id', profile: 'coordinator', kind: 'command', argv: ['sh', '-c', 'id; echo ran'] });
    assert.ok(denied.ok, denied.ok ? '' : denied.error.message);
    assert.deepEqual([denied.value.endReason, denied.value.error?.code], ['failed', 'capability_denied']);
    assert.match(denied.value.error?.message ?? '', /needs `exec`/);
    assert.doesNotMatch(denied.value.stdoutTail ?? '', /ran/, 'no process of the child ran');
    assert.equal(denied.value.startedAt ?? null, null, 'the run never reached a started jail');

    const script = await c.supervisor.spawn({ task: 'script', profile: 'coordinator', script: 'export default async () => ({ ran: true })' });
    assert.ok(script.ok);
    assert.deepEqual([script.value.endReason, script.value.error?.code], ['failed', 'capability_denied']);

    // Control: the same command under a profile with exec runs.
    const control = await c.supervisor.spawn({ task: 'id', profile: 'worker', kind: 'command', argv: ['sh', '-c', 'id; echo ran'] });
    assert.ok(control.ok);
    assert.equal(control.value.endReason, 'completed');
    assert.match(control.value.stdoutTail ?? '', /ran/);

    // A profile without artifacts.read (the shipped policy plus one): its artifact is not
    // handed over. Asking for the artifact asks for artifacts.read, bounded by the profile.
    const noArt = await c.supervisor.spawn({ task: 'cat', profile: 'sealed', kind: 'command', argv: ['cat', '/artifacts/input.txt'], artifact_refs: [artifact] });
    assert.ok(noArt.ok);
    assert.deepEqual([noArt.value.endReason, noArt.value.error?.code], ['failed', 'capability_denied']);
    assert.match(noArt.value.error?.message ?? '', /artifacts\.read/);
    assert.doesNotMatch(noArt.value.stdoutTail ?? '', /artifact-bytes/);

    // Control: the worker profile grants it; a caps list naming only exec still gets the artifact it hands over.
    const withArt = await c.supervisor.spawn({ task: 'cat', profile: 'worker', caps: ['exec'], kind: 'command', argv: ['cat', '/artifacts/input.txt'], artifact_refs: [artifact] });
    assert.ok(withArt.ok);
    assert.equal(withArt.value.endReason, 'completed', JSON.stringify(withArt.value.error));
    assert.match(withArt.value.stdoutTail ?? '', /artifact-bytes/);

    // A script asking only for spawn still runs: its kind asks for exec.
    const scripted = await c.supervisor.spawn({ task: 'script', caps: ['spawn'], script: 'export default async () => ({ ran: true })' });
    assert.ok(scripted.ok);
    assert.equal(scripted.value.endReason, 'completed', JSON.stringify(scripted.value.error));

    // Each refusal is in the ledger with its code.
    await c.ledger.flush();
    const failed = (await ledgerLines(home)).filter((e) => e.type === 'run.failed' && e.code === 'capability_denied').map((e) => e.runId);
    assert.deepEqual(new Set(failed), new Set([denied.value.id, script.value.id, noArt.value.id]));
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
