import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { requireEngine } from '../../helpers/engine.js';
import { main } from '../../../src/cli/cli.js';
import { DockerJailDriver, LABELS } from '../../../src/jail/index.js';

/** Containers and volumes of a run, whoever owns them. */
async function leftovers(runId: string): Promise<string[]> {
  const docker = new DockerJailDriver().docker;
  const filters = { label: [`${LABELS.runId}=${runId}`] };
  const cs = await docker.listContainers({ all: true, filters });
  const vs = await docker.listVolumes({ filters });
  return [...cs.map((c) => c.Id), ...(vs.Volumes ?? []).map((v) => v.Name)];
}

async function brig(args: string[], home: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (c: Buffer) => (stdout += c.toString()));
  err.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await main(args, { stdout: out, stderr: err, env: { BRIG_HOME: home }, isTTY: false });
  return { code, stdout, stderr };
}

async function home(t: { after: (fn: () => void) => void }): Promise<string> {
  const d = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-home-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

test('[INV-8] brig spawn runs a command in a fresh jail, collects out/ as refs, and leaves no container or volume', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await home(t);
  const r = await brig(['spawn', '--json', '--memory', '64', '--', 'sh', '-c', 'mkdir -p out/d && echo -n abc > out/d/x.txt && echo to-stdout'], h);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const env = JSON.parse(r.stdout) as { runId: string; endReason: string; exitCode: number; files: { path: string; bytes: number }[]; resultDir: string; stdoutPreview: string; refs: { ref: string; path: string; bytes: number }[] };
  assert.equal(env.endReason, 'completed');
  assert.deepEqual(env.files, [{ path: 'd/x.txt', bytes: 3 }]);
  assert.equal(env.resultDir, path.join(h, 'results', env.runId, env.runId, 'out'));
  assert.deepEqual(env.refs.map((r) => [r.path, r.bytes]), [['out/d/x.txt', 3]]);
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
});
