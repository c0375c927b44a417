/**
 * A repository in, a patch out, on a real jail and the host's real git: `repo` clones the host
 * repository at REF into /workspace/repo (the host repository only read), a command child
 * edits it with busybox, and brig computes the change on the host from the collected files —
 * a binary-safe `changes.patch` ref, a `changes.stat` ref, the envelope's Changes line. The
 * child's tree is data: its .git config, hooks and a .gitattributes filter never run on the
 * host, its symlink is a blob. `applyRun` (brig apply) writes a new branch and nothing else;
 * an existing branch and a moved base are refused, `rebase` applies onto the moved ref.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { applyRun } from '../../../src/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, supervisorAt } from './fixture.js';

const gitEnv = { PATH: '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' });
const gitBuf = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv });

/** A host repository: text with a typo, a binary file, an executable, a symlink, a file to delete. */
async function hostRepo(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-repo-'));
  t.after(() => fs.promises.rm(dir, { recursive: true, force: true }));
  git(dir, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(dir, 'README.md'), 'This is teh project.\nIt has teh typo twice.\n');
  fs.writeFileSync(path.join(dir, 'blob.bin'), Buffer.from([0, 1, 2, 255, 254, 0, 10, 13]));
  fs.writeFileSync(path.join(dir, 'run.sh'), '#!/bin/sh\necho run\n', { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'old.txt'), 'to be deleted\n');
  fs.symlinkSync('README.md', path.join(dir, 'link'));
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'base');
  return dir;
}

/** What must not change in the host repository until apply: refs, HEAD, index, working tree, object count. */
function snapshot(dir: string): string {
  return [git(dir, 'for-each-ref'), git(dir, 'rev-parse', 'HEAD'), git(dir, 'status', '--porcelain', '--ignored'), git(dir, 'count-objects', '-v'), git(dir, 'stash', 'list')].join('\n--\n');
}

const PWNED = path.join(os.tmpdir(), `brig-pwned-${crypto.randomBytes(4).toString('hex')}`);

/** The child: fixes the typo, replaces the binary, deletes, adds, flips modes, repoints the link, and plants hostile git data. */
const EDIT = [
  'set -e; cd /workspace/repo',
  'test -d .git && test "$(cat .git/HEAD)" = "ref: refs/heads/work"',
  "! grep -q origin .git/config",
  'sed -i s/teh/the/g README.md',
  "printf '\\000\\377binary\\000new' > blob.bin",
  'rm old.txt',
  'mkdir -p src && echo "print(1)" > src/new.py',
  'chmod -x run.sh && chmod +x src/new.py',
  'rm link && ln -s src/new.py link',
  // Hostile data: a hook, a config with an fsmonitor and a filter, a .gitattributes naming them.
  `printf '#!/bin/sh\\ntouch ${PWNED}\\n' > .git/hooks/post-commit && chmod +x .git/hooks/post-commit`,
  `printf '[core]\\n\\tfsmonitor = touch ${PWNED}\\n[filter "evil"]\\n\\tclean = touch ${PWNED}\\n[diff "evil"]\\n\\ttextconv = touch ${PWNED}\\n' >> .git/config`,
  "printf '* filter=evil diff=evil\\n' > .gitattributes",
  'echo done > /workspace/out/done.txt',
].join('\n');

// req: jail:no-host-paths
test('[INV-2] [INV-4] --repo: a clean clone in, the change out as a binary-safe patch computed on the host; the host repository only read; hostile git data never runs', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const repo = await hostRepo(t);
  const before = snapshot(repo);
  const base = git(repo, 'rev-parse', 'HEAD').trim();
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'fix the typo', kind: 'command', argv: ['sh', '-c', EDIT], repo: `${repo}@main` });
    assert.ok(r.ok, !r.ok ? r.error.message : '');
    assert.equal(r.value.endReason, 'completed', `${r.value.error?.message} ${r.value.stderrTail}`);
    assert.deepEqual(r.value.repo, { path: fs.realpathSync(repo), ref: 'main', base });
    assert.equal(snapshot(repo), before, 'the host repository is as it was: only read');
    assert.equal(fs.existsSync(PWNED), false, 'no hook, fsmonitor, filter or textconv of the child ran on the host');
    assert.equal(r.value.changes?.filesChanged, 7, JSON.stringify(r.value.changes));
    assert.equal(r.value.changes?.error, undefined);

    const refs = await c.refs.list(r.value.id);
    assert.ok(refs.ok);
    const patchRef = refs.value.find((x) => x.path === 'changes.patch');
    const statRef = refs.value.find((x) => x.path === 'changes.stat');
    assert.ok(patchRef && statRef, refs.value.map((x) => x.path).join(','));
    assert.equal(patchRef.source, 'changes');
    const stat = JSON.parse(fs.readFileSync(path.join(path.dirname(r.value.resultDir!), 'changes.stat'), 'utf8')) as { files: { path: string }[]; base: string; commits: unknown[] };
    assert.equal(stat.base, base);
    assert.deepEqual(stat.files.map((f) => f.path).sort(), ['.gitattributes', 'README.md', 'blob.bin', 'link', 'old.txt', 'run.sh', 'src/new.py']);
    assert.deepEqual(stat.commits, []);
    const env = await c.refs.result(r.value.id);
    assert.ok(env.ok);
    assert.match(env.value.envelope, new RegExp(`^Changes: 7 files changed, \\+\\d+ -\\d+ against main \\(${base.slice(0, 12)}\\): patch ${patchRef.ref}, stat ${statRef.ref}`, 'm'));
    // Nothing of the clone or its collection is left in the run's directory.
    assert.deepEqual(fs.readdirSync(path.join(home, 'runs', r.value.id)).filter((n) => n.startsWith('repo-')), []);

    // The patch applies with plain git to a fresh clone at the base, and gives the child's tree exactly.
    const check = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-check-'));
    t.after(() => fs.promises.rm(check, { recursive: true, force: true }));
    git(check, 'clone', '-q', repo, '.');
    git(check, 'checkout', '-q', base);
    git(check, 'apply', '--binary', path.join(path.dirname(r.value.resultDir!), 'changes.patch'));
    assert.equal(fs.readFileSync(path.join(check, 'README.md'), 'utf8'), 'This is the project.\nIt has the typo twice.\n');
    assert.deepEqual(fs.readFileSync(path.join(check, 'blob.bin')), Buffer.from('\0\xffbinary\0new', 'latin1'));
    assert.equal(fs.readlinkSync(path.join(check, 'link')), 'src/new.py');
    assert.equal(fs.existsSync(path.join(check, 'old.txt')), false);

    // apply: a new branch, nothing else touched.
    const brig = { get: (id: string) => c.supervisor.get(id), refs: c.refs };
    const applied = await applyRun(brig, r.value.id, { branch: 'fix-typo' });
    assert.equal(applied.branch, 'fix-typo');
    assert.equal(applied.onto, base);
    assert.equal(git(repo, 'rev-parse', 'HEAD').trim(), base, 'HEAD did not move');
    assert.equal(git(repo, 'status', '--porcelain'), '', 'working tree and index untouched');
    assert.equal(git(repo, 'show', 'fix-typo:README.md'), 'This is the project.\nIt has the typo twice.\n');
    assert.deepEqual(gitBuf(repo, 'show', 'fix-typo:blob.bin'), Buffer.from('\0\xffbinary\0new', 'latin1'));
    assert.match(git(repo, 'ls-tree', 'fix-typo', 'link', 'run.sh', 'src/new.py'), /^120000 blob \S+\tlink\n100644 blob \S+\trun.sh\n100755 blob \S+\tsrc\/new.py\n$/);
    assert.match(git(repo, 'log', '-1', '--format=%B', 'fix-typo'), new RegExp(`brig-run: ${r.value.id}`));
    assert.equal(fs.existsSync(PWNED), false);

    // An existing branch is refused, never moved.
    await assert.rejects(applyRun(brig, r.value.id, { branch: 'fix-typo' }), (e: { code?: string }) => e.code === 'repo_conflict');
    await assert.rejects(applyRun(brig, r.value.id, { branch: 'main' }), (e: { code?: string }) => e.code === 'repo_conflict');
    // The base moved: refused unless rebase, which applies onto the new commit.
    fs.writeFileSync(path.join(repo, 'OTHER.md'), 'unrelated\n');
    git(repo, 'add', 'OTHER.md');
    git(repo, 'commit', '-q', '-m', 'moved on');
    const moved = git(repo, 'rev-parse', 'HEAD').trim();
    await assert.rejects(applyRun(brig, r.value.id, { branch: 'stale' }), (e: { code?: string; message?: string }) => e.code === 'repo_conflict' && /moved/.test(e.message ?? ''));
    assert.equal(git(repo, 'branch', '--list', 'stale'), '');
    const rebased = await applyRun(brig, r.value.id, { branch: 'rebased', rebase: true });
    assert.equal(rebased.onto, moved);
    assert.equal(rebased.rebased, true);
    assert.equal(git(repo, 'show', 'rebased:OTHER.md'), 'unrelated\n');
    assert.equal(git(repo, 'show', 'rebased:README.md'), 'This is the project.\nIt has the typo twice.\n');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

// req: jail:no-host-paths
test('[INV-2] --repo refusals: not absolute, not a repository, an unknown ref, `inherit` from an operator, brig\'s own home', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const repo = await hostRepo(t);
  const c = await supervisorAt(home);
  try {
    const cases: [string, string][] = [
      ['relative/path', 'repo_invalid'],
      [os.tmpdir(), 'repo_invalid'],
      [`${repo}@no-such-branch`, 'repo_invalid'],
      [`${repo}@--upload-pack=touch`, 'repo_invalid'],
      ['inherit', 'repo_invalid'],
      [home, 'repo_invalid'],
    ];
    for (const [spec, code] of cases) {
      const r = await c.supervisor.spawn({ task: 'x', kind: 'command', argv: ['true'], repo: spec });
      assert.equal(r.ok ? 'admitted' : r.error.code, code, spec);
    }
    // A child may not name a host repository for a grandchild; inherit passes its own on.
    const LEAD = `export default async function (brig) {
      const tryIt = async (req) => { try { const r = await brig.spawn(req); return { code: 'allowed', end: r.endReason, result: r.result }; } catch (e) { return { code: e.code }; } };
      const host = await tryIt({ task: 'x', kind: 'command', argv: ['true'], repo: ${JSON.stringify(repo)} });
      const own = await tryIt({ task: 'y', kind: 'command', argv: ['sh', '-c', 'cat /workspace/repo/README.md > /workspace/out/r.txt'], repo: 'inherit' });
      return { host, own };
    }`;
    const lead = await c.supervisor.spawn({ task: 'lead', script: LEAD, caps: ['exec', 'spawn'], repo, timeout: 120_000 });
    assert.ok(lead.ok);
    assert.equal(lead.value.endReason, 'completed', `${lead.value.error?.message} ${lead.value.stderrTail}`);
    const out = lead.value.result as { host: { code: string }; own: { code: string; end: string } };
    assert.equal(out.host.code, 'capability_denied');
    assert.equal(out.own.code, 'allowed');
    assert.equal(out.own.end, 'completed');
  } finally {
    await c.close();
  }
});
