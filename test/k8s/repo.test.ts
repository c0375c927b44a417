/**
 * A repository in, a patch out, on the Kubernetes driver: the run's clean clone goes into the
 * pod by exec (a tar made on the host, owned by the jail user, into /workspace/repo) before the
 * program starts; at the end /workspace/repo is collected through the relay container like
 * out/, and the host's git makes the change from those files — the same envelope as on Docker
 * (test/integration/runs/repo-patch.test.ts). The host repository is only read.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../src/config/index.js';
import { compose } from '../../src/daemon/compose.js';
import { driverEnv, requireCluster } from '../helpers/k8s.js';

const gitEnv = { PATH: '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' });

const EDIT = [
  'set -e; cd /workspace/repo',
  'test -d .git',
  // The clone's modes and links arrive as they are: an executable runs, a link points where it did.
  'test -x run.sh && ./run.sh > /workspace/out/ran.txt',
  'test "$(readlink link)" = README.md',
  'test "$(stat -c %u README.md)" = 65534',
  'sed -i s/teh/the/g README.md',
  'rm old.txt',
  'mkdir -p src && echo "print(1)" > src/new.py',
].join('\n');

test('--repo on the kubernetes driver: the clean clone in by exec (modes, links, owner kept), the change out as a patch made on the host; the host repository only read', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-k8s-repo-'));
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-k8s-hostrepo-'));
  t.after(() => {
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(repo, { recursive: true, force: true });
  });
  git(repo, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(repo, 'README.md'), 'This is teh project.\n');
  fs.writeFileSync(path.join(repo, 'run.sh'), '#!/bin/sh\necho ran-in-pod\n', { mode: 0o755 });
  fs.writeFileSync(path.join(repo, 'old.txt'), 'to be deleted\n');
  fs.symlinkSync('README.md', path.join(repo, 'link'));
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'base');
  const head = git(repo, 'rev-parse', 'HEAD').trim();
  const status = git(repo, 'status', '--porcelain');

  const sup = await compose(loadConfig({ BRIG_HOME: home, ...driverEnv(c) }), { tickMs: 200, reconcile: false });
  t.after(() => sup.brig.close());
  await sup.supervisor.start();
  const r = await sup.supervisor.spawn({ task: 'fix the typo', kind: 'command', argv: ['sh', '-c', EDIT], repo: `${repo}@main` });
  assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
  const run = r.value;
  assert.equal(run.endReason, 'completed', `${run.error?.message} ${run.stdoutTail} ${run.stderrTail}`);
  assert.match(run.jail?.containerId ?? '', /^pod\//, 'it ran in a pod');
  assert.deepEqual(run.repo, { path: fs.realpathSync(repo), ref: 'main', base: head });
  assert.equal(run.changes?.filesChanged, 3, JSON.stringify(run.changes));
  const refs = await sup.refs.list(run.id);
  assert.ok(refs.ok);
  const patchRef = refs.value.find((x) => x.path === 'changes.patch');
  assert.ok(patchRef, `a patch ref: ${refs.value.map((x) => x.path).join(', ')}`);
  const patch = fs.readFileSync(path.join(path.dirname(run.resultDir!), 'changes.patch'), 'utf8');
  assert.match(patch, /-This is teh project\.\n\+This is the project\./);
  assert.match(patch, /deleted file mode 100644\n[^]*old\.txt/);
  assert.match(patch, /new file mode 100644\n[^]*src\/new\.py/);
  assert.ok(refs.value.some((x) => x.path === 'ran.txt' || x.path === 'out/ran.txt'), `out/ran.txt collected: ${refs.value.map((x) => x.path).join(', ')}`);
  assert.equal(fs.readFileSync(path.join(run.resultDir!, 'ran.txt'), 'utf8'), 'ran-in-pod\n', 'the executable ran inside the pod');
  assert.equal(git(repo, 'rev-parse', 'HEAD').trim(), head, 'the host repository is only read');
  assert.equal(git(repo, 'status', '--porcelain'), status);
});
