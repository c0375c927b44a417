/**
 * [INV-2] [INV-4] A graph's nodes share nothing writable, proven from inside real jails: a
 * dependent sees exactly the inputs it declared, read-only, at /artifacts/<as> (the upstream
 * attempt's committed out/, bound by its checked identity); an undeclared sibling's output is
 * nowhere in its jail; it cannot write its inputs (EROFS, files and the directory); a symlink
 * planted in an upstream's out/ reaches no one (collect kept regular files only). Every node
 * is an ordinary run (its own lease, jail, ledger, ResultRefs).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { outOf, read } from './committed.js';
import { freshHome, leftovers, supervisorAt } from '../runs/fixture.js';

const sh = (script: string) => ['sh', '-c', script];

const SPEC = JSON.stringify({
  graph: 'brig/v1',
  label: 'isolation',
  concurrency: { max_parallel: 2 },
  nodes: [
    {
      id: 'a',
      kind: 'command',
      spawn: {
        task: 'write an output and plant links',
        argv: sh('echo from-a > /workspace/out/a.txt; mkdir -p /workspace/out/sub; echo deep > /workspace/out/sub/d.txt; ln -s /etc/passwd /workspace/out/link; ln -s / /workspace/out/rootlink; ln -s ../../.. /workspace/out/sub/up'),
      },
    },
    { id: 'b', kind: 'command', spawn: { task: 'a sibling with a secret', argv: sh('echo secret-of-b > /workspace/out/b-secret.txt') } },
    {
      id: 'c',
      kind: 'command',
      depends_on: ['a', 'b'],
      inputs: [{ from: 'a', as: 'up' }],
      spawn: {
        task: 'look around from inside',
        argv: sh([
          'cd /workspace/out',
          'ls -A /artifacts > artifacts.txt',
          'ls -A /artifacts/up > up.txt',
          'ls -A /artifacts/up/sub > sub.txt',
          'cat /artifacts/up/a.txt > read.txt',
          '(echo x > /artifacts/up/a.txt) 2> write-existing.txt; echo $? >> write-existing.txt',
          '(echo x > /artifacts/up/new.txt) 2> write-new.txt; echo $? >> write-new.txt',
          '(rm -f /artifacts/up/a.txt) 2> rm.txt; echo $? >> rm.txt',
          '(mkdir /artifacts/extra) 2> mkdir.txt; echo $? >> mkdir.txt',
          'find / -name b-secret.txt -not -path "/proc/*" 2>/dev/null > find-b.txt',
          'grep -rl secret-of-b /artifacts /workspace/out /tmp 2>/dev/null | grep -v find-b > grep-b.txt',
          'grep " /artifacts" /proc/self/mountinfo > mounts.txt',
          'grep -o "\\"graphSharedDir\\": *\\"[^\\"]*\\"" /workspace/.brig/packet.json > shared.txt',
          'true',
        ].join('; ')),
      },
    },
  ],
});


// req: jail:no-host-paths
// req: results:no-symlink
test('[INV-2] [INV-4] from inside a dependent: only its declared input, read-only; no undeclared sibling output; planted links reach no one', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const started = await c.graphs.run(SPEC, { source: 'isolation.json' });
    assert.ok(started.ok, started.ok ? '' : started.error.message);
    assert.deepEqual(started.value.order, ['a', 'b', 'c']);
    const w = await c.graphs.wait(started.value.graphId, { timeoutMs: 180_000 });
    assert.ok(w.ok);
    const rec = w.value;
    assert.equal(rec.state, 'completed', JSON.stringify(rec.nodes.map((n) => [n.id, n.state, n.attempts.map((a) => a.errorCode)])));

    // The negative control: the sibling's secret and a's links exist where they were made.
    assert.equal(read(outOf(home, rec, 'b'), 'b-secret.txt'), 'secret-of-b\n');
    const aOut = outOf(home, rec, 'a');
    assert.deepEqual(fs.readdirSync(aOut).sort(), ['a.txt', 'sub'], 'collect committed regular files only: no link, no rootlink');
    assert.deepEqual(fs.readdirSync(path.join(aOut, 'sub')), ['d.txt']);

    const cOut = outOf(home, rec, 'c');
    assert.equal(read(cOut, 'artifacts.txt'), 'up\n', 'only the declared input is under /artifacts');
    assert.equal(read(cOut, 'up.txt'), 'a.txt\nsub\n', 'the planted links reached no one');
    assert.equal(read(cOut, 'sub.txt'), 'd.txt\n');
    assert.equal(read(cOut, 'read.txt'), 'from-a\n', 'the input is readable');
    for (const f of ['write-existing.txt', 'write-new.txt', 'rm.txt', 'mkdir.txt']) {
      const text = read(cOut, f);
      assert.match(text, /Read-only file system/, `${f}: ${text}`);
      assert.match(text, /\n1\n$|^1\n$/m, `${f} failed: ${text}`);
    }
    assert.equal(read(cOut, 'find-b.txt'), '', 'the undeclared sibling\'s output is nowhere in the jail');
    assert.equal(read(cOut, 'grep-b.txt'), '');
    const mounts = read(cOut, 'mounts.txt').trim().split('\n');
    assert.equal(mounts.length, 1, mounts.join('\n'));
    assert.match(mounts[0]!, /^\S+ \S+ \S+ \S+ \/artifacts\/up ro[, ]/, 'bound read-only');
    // The packet names that read-only directory as the graph's shared one (graphSharedDir: nothing writable is shared).
    assert.match(read(cOut, 'shared.txt'), /^"graphSharedDir": *"\/artifacts"\n$/);
    // What a's dependent read is still a's, untouched.
    assert.equal(read(aOut, 'a.txt'), 'from-a\n');
    assert.equal(fs.existsSync(path.join(aOut, 'new.txt')), false);

    // Each node is an ordinary run, ended once, its jail gone.
    for (const n of rec.nodes) {
      const run = await c.supervisor.get(n.attempts[0]!.runId!);
      assert.equal(run?.endReason, 'completed');
      assert.equal(run?.label, `${rec.id}/${n.id}`);
    }
    assert.deepEqual(await leftovers(home, { released: true }), []);
  } finally {
    await c.close();
  }
});

test('a node handed an input that did not complete is refused before any jail (artifact_missing); the graph says so', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const spec = JSON.stringify({
      graph: 'brig/v1',
      on_failure: { policy: 'continue' },
      nodes: [
        { id: 'bad', kind: 'command', spawn: { task: 'fail', argv: sh('echo partial > /workspace/out/p.txt; exit 3') } },
        { id: 'after', kind: 'command', depends_on: ['bad'], when: 'all_done', inputs: [{ from: 'bad', as: 'up' }], spawn: { task: 'read it', argv: sh('ls /artifacts') } },
      ],
    });
    const started = await c.graphs.run(spec);
    assert.ok(started.ok, started.ok ? '' : started.error.message);
    const w = await c.graphs.wait(started.value.graphId, { timeoutMs: 120_000 });
    assert.ok(w.ok);
    const after = w.value.nodes.find((n) => n.id === 'after')!;
    assert.equal(w.value.nodes.find((n) => n.id === 'bad')!.state, 'failed');
    assert.equal(after.state, 'failed');
    assert.equal(after.attempts[0]!.errorCode, 'artifact_missing', 'a failed attempt never feeds a dependent');
    assert.equal(after.attempts[0]!.runId, null, 'no run was made');
  } finally {
    await c.close();
  }
});
