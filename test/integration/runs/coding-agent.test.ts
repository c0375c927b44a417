/**
 * A coding child does a real task (issue 24 item 5): a small Python repository with a failing
 * test goes in with `repo`, the child fixes the code, and the change comes back as a patch the
 * host applies — in the toolbox image (Debian's python3, git, build tools, built here by
 * `brig image toolbox`) with an agent driven by a scripted model server on host loopback (a
 * stand-in, not a real model), and in a musl image with a script child. Nothing in the host
 * repository changes until `applyRun` (brig apply), and the host's own test run passes on
 * the applied branch.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { applyRun } from '../../../src/index.js';
import { DockerJailDriver, ownerForHome } from '../../../src/jail/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { mmdebstrapTool, muslImage, muslTools } from '../../helpers/foreign-images.js';
import { startModelServer, toolCallTurn } from '../../helpers/model-server.js';
import { freshHome, leftovers, supervisorAt } from './fixture.js';

const gitEnv = { PATH: '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' });

const BUGGY = 'def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n';
const FIXED = BUGGY.replace('a - b', 'a + b');
const TESTS = 'import unittest\n\nfrom calc import add, mul\n\n\nclass CalcTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n\nif __name__ == "__main__":\n    unittest.main()\n';

/** A host repository whose test fails: calc.add subtracts. Python's bytecode caches are ignored, as in any Python repository. */
async function pythonRepo(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-pyrepo-'));
  t.after(() => fs.promises.rm(dir, { recursive: true, force: true }));
  git(dir, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(dir, 'calc.py'), BUGGY);
  fs.writeFileSync(path.join(dir, 'test_calc.py'), TESTS);
  fs.writeFileSync(path.join(dir, '.gitignore'), '__pycache__/\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'calc with a failing test');
  return dir;
}

/** What must not change in the host repository until apply: refs, HEAD, index, working tree, object count. */
function snapshot(dir: string): string {
  return [git(dir, 'for-each-ref'), git(dir, 'rev-parse', 'HEAD'), git(dir, 'status', '--porcelain', '--ignored'), git(dir, 'count-objects', '-v')].join('\n--\n');
}

/** The host's own test run of `ref` in a fresh clone: its exit status and output. */
function hostTests(repo: string, ref: string): { status: number | null; out: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-pycheck-'));
  try {
    git(dir, 'clone', '-q', repo, '.');
    git(dir, 'checkout', '-q', ref);
    const r = spawnSync('python3', ['-B', '-m', 'unittest', '-q'], { cwd: dir, encoding: 'utf8' });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The patch applies with plain git to a fresh clone at `base`, and the host's tests pass there. */
function patchAppliesGreen(repo: string, base: string, patchFile: string): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-pypatch-'));
  try {
    git(dir, 'clone', '-q', repo, '.');
    git(dir, 'checkout', '-q', base);
    git(dir, 'apply', '--check', patchFile);
    git(dir, 'apply', patchFile);
    assert.equal(fs.readFileSync(path.join(dir, 'calc.py'), 'utf8'), FIXED);
    const r = spawnSync('python3', ['-B', '-m', 'unittest', '-q'], { cwd: dir, encoding: 'utf8' });
    assert.equal(r.status, 0, `the host's tests on the patched clone: ${r.stdout}${r.stderr}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The text of the tool results the model was sent, in order. */
function toolResults(requests: { body: Record<string, unknown> }[]): string[] {
  const last = requests.at(-1)!.body.messages as { role: string; content: unknown }[];
  return last.filter((m) => m.role === 'tool').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
}

// req: jail:no-host-paths
test('[INV-2] [INV-4] a coding agent in the toolbox image: runs the failing Python test, fixes the code, runs it green; the patch applies on the host and the host\'s tests pass; the host repository changes only at apply', async (t) => {
  if (!(await requireEngine(t))) return;
  const tools = mmdebstrapTool();
  if (!tools.ok) return void t.skip(tools.why);
  const home = await freshHome(t);
  // `brig image toolbox`: built once per machine and recipe (~70 s from nothing here), present at once after.
  const { tag: image } = await new DockerJailDriver({ owner: ownerForHome(home) }).buildToolbox();
  const repo = await pythonRepo(t);
  assert.notEqual(hostTests(repo, 'main').status, 0, 'the repository\'s test fails before the child');
  const before = snapshot(repo);
  const base = git(repo, 'rev-parse', 'HEAD').trim();
  const m = await startModelServer({
    script: [
      toolCallTurn('shell', { command: 'cd repo && python3 -m unittest -q; echo "exit=$?"' }),
      toolCallTurn('shell', { command: "cd repo && sed -i 's/return a - b/return a + b/' calc.py && git diff --stat" }),
      toolCallTurn('shell', { command: 'cd repo && python3 -m unittest -q; echo "exit=$?"' }),
      toolCallTurn('finish', { answer: 'calc.add subtracted; fixed, the tests pass' }),
    ],
  });
  t.after(() => m.close());
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '20000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const r = await c.supervisor.spawn({ task: 'The test in repo/ fails: fix the code so that it passes.', kind: 'agent', image, repo: `${repo}@main` });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', `${r.value.stderrTail} ${JSON.stringify(r.value.error)}`);
    const seen = toolResults(m.requests);
    assert.equal(seen.length, 3, JSON.stringify(seen));
    assert.match(seen[0]!, /FAILED \(failures=1\)[\s\S]*exit=1/, `the first test run failed in the jail: ${seen[0]}`);
    assert.match(seen[1]!, /calc\.py \| 2 \+-/, `the jail's own git saw the edit: ${seen[1]}`);
    assert.match(seen[2]!, /Ran 2 tests[\s\S]*OK[\s\S]*exit=0/, `the second test run passed in the jail: ${seen[2]}`);
    assert.equal(snapshot(repo), before, 'the host repository is as it was until apply');
    assert.equal(r.value.changes?.filesChanged, 1, `only calc.py changed (the bytecode cache is ignored): ${JSON.stringify(r.value.changes)}`);

    const refs = await c.refs.list(r.value.id);
    assert.ok(refs.ok);
    assert.ok(refs.value.some((x) => x.path === 'changes.patch'), refs.value.map((x) => x.path).join(','));
    patchAppliesGreen(repo, base, path.join(path.dirname(r.value.resultDir!), 'changes.patch'));

    const applied = await applyRun({ get: (id: string) => c.supervisor.get(id), refs: c.refs }, r.value.id, { branch: 'fix-add' });
    assert.equal(applied.onto, base);
    assert.equal(git(repo, 'rev-parse', 'HEAD').trim(), base, 'HEAD did not move');
    assert.equal(git(repo, 'status', '--porcelain'), '', 'working tree and index untouched');
    const green = hostTests(repo, 'fix-add');
    assert.equal(green.status, 0, `the host's tests on the applied branch: ${green.out}`);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

/** A script child's fix: the same edit with node's fs, no Python in the image. */
const FIX_SCRIPT = `import { readFileSync, writeFileSync } from 'node:fs';
export default async function (brig) {
  const f = '/workspace/repo/calc.py';
  const src = readFileSync(f, 'utf8');
  writeFileSync(f, src.replace('return a - b', 'return a + b'));
  await brig.progress('fixed calc.add');
  return { fixed: src.includes('return a - b') };
}`;

// req: jail:no-host-paths
test('[INV-2] [INV-4] a script child in a musl image (no glibc, no Python) fixes the same repository; the patch applies on the host and the host\'s tests pass', async (t) => {
  if (!(await requireEngine(t))) return;
  const tools = muslTools();
  if (!tools.ok) return void t.skip(tools.why);
  const image = await muslImage();
  const home = await freshHome(t);
  const repo = await pythonRepo(t);
  const before = snapshot(repo);
  const base = git(repo, 'rev-parse', 'HEAD').trim();
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'fix calc.add', script: FIX_SCRIPT, image, caps: ['exec'], repo: repo });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', `${r.value.stderrTail} ${JSON.stringify(r.value.error)}`);
    assert.deepEqual(r.value.result, { fixed: true });
    assert.equal(snapshot(repo), before, 'the host repository is as it was until apply');
    assert.equal(r.value.changes?.filesChanged, 1, JSON.stringify(r.value.changes));
    patchAppliesGreen(repo, base, path.join(path.dirname(r.value.resultDir!), 'changes.patch'));
    const applied = await applyRun({ get: (id: string) => c.supervisor.get(id), refs: c.refs }, r.value.id, { branch: 'fix-add' });
    assert.equal(applied.onto, base);
    assert.equal(hostTests(repo, 'fix-add').status, 0);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});
