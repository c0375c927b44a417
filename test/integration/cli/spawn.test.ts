import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { runCli } from '../../helpers/cli.js';
import { DockerJailDriver, LABELS } from '../../../src/jail/index.js';

/** Containers and volumes of a run, whoever owns them. */
async function leftovers(runId: string): Promise<string[]> {
  const docker = new DockerJailDriver().docker;
  const filters = { label: [`${LABELS.runId}=${runId}`] };
  const cs = await docker.listContainers({ all: true, filters });
  const vs = await docker.listVolumes({ filters });
  return [...cs.map((c) => c.Id), ...(vs.Volumes ?? []).map((v) => v.Name)];
}

async function brig(args: string[], home: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const r = await runCli(args, { home, env });
  return { code: r.code, stdout: r.out, stderr: r.err };
}

async function home(t: { after: (fn: () => void) => void }): Promise<string> {
  const d = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-home-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

// req: end:released
test('[INV-8] brig spawn runs a command in a fresh jail, collects out/ as refs, and leaves no container or volume', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await home(t);
  const r = await brig(['spawn', '--json', '--memory', '64', '--', 'sh', '-c', 'mkdir -p out/d && echo -n abc > out/d/x.txt && echo to-stdout'], h);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const env = JSON.parse(r.stdout) as { runId: string; endReason: string; exitCode: number; files: { path: string; bytes: number }[]; resultDir: string; stdoutPreview: string; refs: { ref: string; path: string; bytes: number }[] };
  assert.equal(env.endReason, 'completed');
  assert.deepEqual(env.files, [{ path: 'd/x.txt', bytes: 3 }]);
  assert.equal(env.resultDir, path.join(h, 'results', env.runId, env.runId, 'out'));
  // out/ files, and the bounded stdout as its own ref (issue 5: stdio becomes ResultRefs too).
  assert.deepEqual(env.refs.map((r) => [r.path, r.bytes]), [['out/d/x.txt', 3], ['stdout.txt', 10]]);
  const read = await brig(['ref', 'read', env.refs[0]!.ref], h);
  assert.equal(read.code, 0, read.stderr);
  assert.match(read.stdout, /abc/);
  assert.equal(fs.readFileSync(path.join(env.resultDir, 'd/x.txt'), 'utf8'), 'abc');
  assert.equal(env.stdoutPreview, 'to-stdout\n');
  assert.deepEqual(await leftovers(env.runId), []);
});

test('brig spawn ends a run past its timeout as watchdog_timeout and exits non-zero', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await home(t);
  const r = await brig(['spawn', '--json', '--timeout', '0.5', '--', 'sleep', '30'], h);
  assert.equal(r.code, 1);
  const env = JSON.parse(r.stdout) as { runId: string; endReason: string };
  assert.equal(env.endReason, 'watchdog_timeout');
  assert.deepEqual(await leftovers(env.runId), []);
});

test('brig spawn refuses a missing artifact before creating anything', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await home(t);
  const r = await brig(['spawn', '--artifact', path.join(h, 'nope.txt'), '--', 'true'], h);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /artifact_missing/);
  assert.equal(fs.existsSync(path.join(h, 'results')), false, 'nothing was written for a refused spawn');
});

test('brig doctor passes every check on this host and reports them as JSON', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await home(t);
  const r = await brig(['doctor', '--json', '--build'], h);
  const rep = JSON.parse(r.stdout) as { ok: boolean; checks: { name: string; ok: boolean; detail: string }[] };
  const failed = rep.checks.filter((c) => !c.ok && c.name !== 'child runtime in image');
  assert.deepEqual(failed, []);
  assert.ok(rep.checks.some((c) => c.name === 'jail: no effective capabilities' && c.ok));
  // Egress, proven from inside a probe jail with its own gate socket: the allowed host answers, another is refused before any DNS, no resolver.
  const egress = Object.fromEntries(rep.checks.filter((c) => c.name.startsWith('egress: ')).map((c) => [c.name, [c.ok, c.detail]]));
  assert.deepEqual(egress['egress: allowed host through the gate'], [true, '200']);
  assert.deepEqual(egress['egress: other host refused'], [true, '403 host_not_allowed']);
  assert.equal(egress['egress: no resolver in the jail']?.[0], true, JSON.stringify(egress));
});

test('brig spawn --json prints exactly one object with the issue-2 envelope; outputs are the materialized files', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await home(t);
  const js = "const fs=require('fs'); fs.writeFileSync('out/report.json', JSON.stringify({ok:true})); fs.writeFileSync('out/rows.csv', 'a,b\\n1,2\\n'); console.log('said'); console.error('warned')";
  const r = await brig(['spawn', '--json', '--memory', '128', '--timeout', '60', '--', 'node', '-e', js], h);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.equal(r.stdout.trim().split('\n').length, 1, 'one line of JSON');
  const env = JSON.parse(r.stdout) as Record<string, unknown>;
  for (const k of ['runId', 'exitCode', 'endReason', 'stdoutTail', 'stderrTail', 'outputs', 'outputDir']) assert.ok(k in env, `missing ${k}`);
  assert.equal(env.exitCode, 0);
  assert.equal(env.endReason, 'completed');
  assert.equal(env.stdoutTail, 'said\n');
  assert.equal(env.stderrTail, 'warned\n');
  const outputs = env.outputs as { path: string; bytes: number }[];
  assert.deepEqual([...outputs].sort((a, b) => a.path.localeCompare(b.path)), [{ path: 'report.json', bytes: 11 }, { path: 'rows.csv', bytes: 8 }]);
  const dir = env.outputDir as string;
  assert.ok(dir.startsWith(h), 'outputDir is under BRIG_HOME');
  assert.equal(fs.readFileSync(path.join(dir, 'report.json'), 'utf8'), '{"ok":true}');
  assert.equal(fs.readFileSync(path.join(dir, 'rows.csv'), 'utf8'), 'a,b\n1,2\n');
  assert.deepEqual(await leftovers(env.runId as string), []);
});

test('brig spawn mounts --artifact read-only at /artifacts/<basename>; human output by default', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await home(t);
  // The artifact lives outside brig's home: brig refuses its own state as an artifact.
  const art = path.join(await home(t), 'notes.txt');
  fs.writeFileSync(art, 'artifact says hi');
  const r = await brig(['spawn', '--artifact', art, '--', 'sh', '-c', 'cat /artifacts/notes.txt; echo x > /artifacts/notes.txt || echo read-only; pwd'], h);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.throws(() => JSON.parse(r.stdout), 'human output is not JSON');
  assert.match(r.stdout, /^run \S+ completed \(exit 0\)/);
  assert.match(r.stdout, /artifact says hi/);
  assert.match(r.stdout, /read-only/);
  assert.match(r.stdout, /\/workspace/);
  assert.equal(fs.readFileSync(art, 'utf8'), 'artifact says hi');
});

test('brig spawn without ARGV is a clear error and a non-zero exit', async (t) => {
  const h = await home(t);
  for (const args of [['spawn'], ['spawn', '--json', '--'], ['spawn', '--memory', '64', '--']]) {
    const r = await brig(args, h);
    assert.notEqual(r.code, 0, args.join(' '));
    assert.match(r.stderr, /command after `--`/);
    assert.match(r.stderr, /invalid_input/);
  }
});

test('brig spawn with the engine down is a clear error and a non-zero exit; brig doctor fails naming the fix', async (t) => {
  const h = await home(t);
  const down = { DOCKER_HOST: 'unix:///nonexistent/brig-test/docker.sock' };
  const r = await brig(['spawn', '--', 'true'], h, down);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /engine_unavailable/);
  assert.match(r.stderr, /make engine/);
  const d = await brig(['doctor', '--json'], h, down);
  assert.notEqual(d.code, 0);
  const rep = JSON.parse(d.stdout) as { ok: boolean; checks: { name: string; ok: boolean; hint?: string }[] };
  assert.equal(rep.ok, false);
  assert.deepEqual(rep.checks.filter((c) => !c.ok).map((c) => c.name), ['engine answers']);
  assert.match(rep.checks[0]!.hint ?? '', /make engine/);
  const human = await brig(['doctor'], h, down);
  assert.notEqual(human.code, 0);
  assert.match(human.stdout, /FAIL\s+engine answers/);
  assert.match(human.stdout, /make engine/);
});

test('brig spawn --expect: a path with `..` or an absolute one is refused before any run; a present one exits 0', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await home(t);
  for (const bad of ['../x', '/etc/passwd', 'a/../../b']) {
    const r = await brig(['spawn', '--expect', bad, '--', 'true'], h);
    assert.equal(r.code, 2, `${bad}: ${r.stderr}`);
    assert.match(r.stderr, /relative to \/workspace\/out/);
  }
  assert.equal(fs.existsSync(path.join(h, 'runs')) ? fs.readdirSync(path.join(h, 'runs')).filter((n) => n.startsWith('r-')).length : 0, 0, 'no run was created');
  const ok = await brig(['spawn', '--expect', 'r.txt', '--', 'sh', '-c', 'echo x > out/r.txt'], h);
  assert.equal(ok.code, 0, ok.stderr);
  const missing = await brig(['spawn', '--expect', 'nope.txt', '--', 'true'], h);
  assert.equal(missing.code, 9, 'docs/cli.md: expected outputs missing');
  assert.match(missing.stderr, /missing expected output: nope\.txt/);
});
