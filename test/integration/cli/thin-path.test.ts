/**
 * A thin command through a daemon loads no heavy part: `brig list`, `brig ref read`,
 * `brig wait`, `brig --version` and `brig spawn -- ARGV` against a real `brig serve` load
 * neither dockerode, DuckDB, zod, undici, the YAML parser nor node:http (their answers are
 * checked too). A control proves the tracer sees such modules: `brig image build --help` loads dockerode.
 *
 * `brig` itself (package.json's bin) is dist/cli/brig.cjs, the bundle `make build` makes
 * (scripts/bundle-cli.mjs, built afresh here from dist/): through a daemon its thin commands
 * load no module of dist/ and no package at all — the one file and Node's built-ins — give the
 * full CLI's answers, and ask the daemon once for its health (the probe that chose the thin
 * path) and then what the command needs, nothing more (counted in the daemon's debug log); any
 * other command, and a thin one without a daemon, runs the full CLI.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome, recordOnDisk } from '../daemon/serve-proc.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../../..');
const MAIN = path.join(ROOT, 'dist/cli/main.js');
const TRACE = path.join(ROOT, 'test/helpers/module-trace.mjs');
const HEAVY = [/node_modules\/dockerode\//, /node_modules\/@duckdb\//, /node_modules\/zod\//, /node_modules\/undici\//, /node_modules\/yaml\//, /node_modules\/tar-stream\//, /^node:http$/];

async function traced(home: string, args: string[], entry = MAIN): Promise<{ stdout: string; modules: string[] }> {
  const file = path.join(home, `trace-${args[0]!.replace(/\W/g, '')}-${process.hrtime.bigint()}.txt`);
  const env = { ...process.env, BRIG_HOME: home, BRIG_TEST_MODULE_TRACE: file };
  const { stdout } = await run(process.execPath, ['--import', TRACE, entry, ...args], { env, cwd: ROOT });
  return { stdout, modules: fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) };
}

/** The bin bundle, made from this dist/ into `dir` (what `make build` writes to dist/cli/brig.cjs). */
async function bundle(dir: string): Promise<string> {
  const out = path.join(dir, 'brig.cjs');
  await run(process.execPath, [path.join(ROOT, 'scripts/bundle-cli.mjs'), '--out', out], { cwd: ROOT });
  return out;
}

const heavyIn = (modules: string[]) => modules.filter((m) => HEAVY.some((h) => h.test(m)));

test('a thin command through a daemon loads no dockerode, DuckDB, zod, undici, yaml or node:http (control: image build --help does)', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  // debug: the daemon logs every request it answers (route, caller), which the bundle's part counts.
  const serve = await h.serve(['--log-level', 'debug']);
  const spawned = await h.run(['spawn', '--json', '--', 'sh', '-c', 'seq 1 500 > out/n.txt']);
  assert.equal(spawned.code, 0, spawned.stderr);
  const runId = (JSON.parse(spawned.stdout) as { runId: string }).runId;
  const refs = await h.run(['ref', 'list', runId, '--json']);
  const ref = (JSON.parse(refs.stdout) as { refs: { ref: string; path?: string }[] }).refs.find((r) => r.path === 'out/n.txt')!.ref;

  const list = await traced(h.home, ['list']);
  assert.match(list.stdout, new RegExp(`${runId}\\s+ended\\s+completed`));
  const read = await traced(h.home, ['ref', 'read', ref, '--length', '8']);
  assert.match(read.stdout, /^1\n2\n3\n4/);
  const wait = await traced(h.home, ['wait', runId, '--json']);
  assert.equal((JSON.parse(wait.stdout) as { runs: { endReason: string }[] }).runs[0]!.endReason, 'completed');
  const version = await traced(h.home, ['--version']);
  assert.match(version.stdout, /\d+\.\d+\.\d+/);
  // A command child through the daemon, waited on and reported: no library entry either.
  const spawn = await traced(h.home, ['spawn', '--json', '--', 'sh', '-c', 'echo thin > out/t.txt']);
  const spawnedThin = JSON.parse(spawn.stdout) as { endReason: string; outputs: { path: string }[] };
  assert.deepEqual([spawnedThin.endReason, spawnedThin.outputs.map((o) => o.path)], ['completed', ['t.txt']]);
  for (const [name, r] of [['list', list], ['ref read', read], ['wait', wait], ['--version', version], ['spawn -- ARGV', spawn]] as const) {
    assert.ok(r.modules.some((m) => m.endsWith('/dist/cli/main.js')), `${name}: the tracer saw the CLI`);
    assert.deepEqual(heavyIn(r.modules), [], `${name} loaded nothing heavy`);
  }
  const control = await traced(h.home, ['image', 'build', '--help']);
  assert.ok(heavyIn(control.modules).some((m) => m.includes('/dockerode/')), 'the control loads dockerode, so the tracer would see it');

  /** What `fn` asked the daemon, in order (`METHOD /route`, from its debug log), once at least `least` requests are logged and no more come. */
  const apiLines = () => serve.stderr().split('\n').filter((l) => l.includes('"msg":"api"'));
  async function requestsOf<T>(fn: () => Promise<T>, least: number): Promise<T & { requests: string[] }> {
    const before = apiLines().length;
    const r = await fn();
    for (let i = 0; i < 100 && apiLines().length < before + least; i++) await new Promise((res) => setTimeout(res, 50));
    await new Promise((res) => setTimeout(res, 300)); // a request the daemon had not logged yet would be by now
    const requests = apiLines()
      .slice(before)
      .map((l) => JSON.parse(l) as { method: string; route: string })
      .map((j) => `${j.method} ${j.route}`);
    return { ...r, requests };
  }

  // The bin bundle: the same answers from one file and Node's built-ins.
  const bin = await bundle(h.home);
  const binUrl = `file://${bin}`;
  const only = (modules: string[]) => modules.filter((m) => m !== binUrl && !m.startsWith('node:'));
  const bList = await requestsOf(() => traced(h.home, ['list'], bin), 2);
  assert.match(bList.stdout, new RegExp(`${runId}\\s+ended\\s+completed`));
  const bRead = await requestsOf(() => traced(h.home, ['ref', 'read', ref, '--length', '8'], bin), 2);
  assert.equal(bRead.stdout, read.stdout);
  const bWait = await requestsOf(() => traced(h.home, ['wait', runId, '--json'], bin), 2);
  assert.equal(bWait.stdout, wait.stdout);
  for (const [name, r] of [['list', bList], ['ref read', bRead], ['wait', bWait]] as const) {
    assert.ok(r.modules.includes(binUrl), `${name}: the tracer saw the bundle`);
    assert.deepEqual(only(r.modules), [], `${name} through the bundle loaded nothing but it and Node's built-ins`);
    // Not even those it never uses: the one-shot's disk helper (util/spawner.ts) starts processes, a thin command none.
    assert.deepEqual(r.modules.filter((m) => m === 'node:child_process' || m === 'node:readline'), [], `${name}: no child_process or readline`);
    // The probe that chose the thin path is the command's only one (test/unit/cli/thin.test.ts: and its only connection before the request).
    assert.deepEqual(r.requests.filter((q) => q.endsWith('/v1/health')), ['GET /v1/health'], `${name}: one health probe`);
    assert.equal(r.requests[0], 'GET /v1/health', `${name}: the probe comes first`);
  }
  assert.deepEqual(bList.requests, ['GET /v1/health', 'GET /v1/runs'], 'list: the probe and the list, nothing else');
  assert.deepEqual(bRead.requests, ['GET /v1/health', 'POST /v1/refs/{ref}/read'], 'ref read: the probe and the read, nothing else');
  assert.deepEqual(bWait.requests.slice(0, 2), ['GET /v1/health', 'POST /v1/runs/{run}/wait'], 'wait: the probe, then the wait (then its refs, for --json)');
  // Not a thin command: the full CLI (whose dockerode the tracer sees); its answer is the full CLI's.
  const bControl = await traced(h.home, ['image', 'build', '--help'], bin);
  assert.ok(bControl.modules.some((m) => m.endsWith('/dist/cli/main.js')) && heavyIn(bControl.modules).some((m) => m.includes('/dockerode/')), 'image build --help ran the full CLI');
  assert.equal(bControl.stdout, control.stdout);
  await serve.signal('SIGTERM');
  await serve.exited;
  // No daemon: the full CLI reads the records on disk, as main.js does.
  const offline = await traced(h.home, ['list'], bin);
  assert.ok(offline.modules.some((m) => m.endsWith('/dist/cli/main.js')), 'without a daemon the bundle hands list to the full CLI');
  assert.match(offline.stdout, new RegExp(`${runId}\\s+ended\\s+completed`));
});

/** What a one-shot spawn without a daemon must not load: a model client, dockerode's BuildKit session and SSH transport, a face. */
const ONE_SHOT_UNNEEDED = [/node_modules\/undici\//, /node_modules\/@grpc\//, /node_modules\/protobufjs\//, /node_modules\/ssh2\//, /\/dist\/(api|console|mcp)\//];

test('a one-shot spawn without a daemon loads no model client, BuildKit session, SSH transport or face — and ends as a daemon run does', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const r = await traced(h.home, ['spawn', '--json', '--', 'sh', '-c', 'echo one > out/o.txt']);
  const end = JSON.parse(r.stdout) as { runId: string; endReason: string; outputs: { path: string }[] };
  assert.deepEqual([end.endReason, end.outputs.map((o) => o.path)], ['completed', ['o.txt']]);
  assert.equal(recordOnDisk(h.home, end.runId)?.endReason, 'completed', 'the end record is on disk');
  assert.ok(r.modules.some((m) => m.includes('/node_modules/dockerode/')), 'the tracer saw the engine client it did load');
  assert.deepEqual(r.modules.filter((m) => ONE_SHOT_UNNEEDED.some((u) => u.test(m))), [], 'nothing a one-shot command child does not use');
});

// Issue 34 item 1: a one-shot spawn loads the full CLI as one bundled file (scripts/bundle-full.mjs), not dist/'s ~500 files.
test('a one-shot spawn through `brig` without a daemon runs the bundled full CLI — no module of dist/ besides it — and ends as a daemon run does', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  // The layout `make build` writes to dist/: cli/brig.cjs beside full/main.cjs,
  // inside the checkout (the bundle's package imports resolve from its node_modules).
  fs.mkdirSync(path.join(ROOT, '.cache'), { recursive: true }); // absent on a checkout that never ran `make model`
  const dir = fs.mkdtempSync(path.join(ROOT, '.cache', 'thin-path-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const bin = path.join(dir, 'cli', 'brig.cjs');
  await run(process.execPath, [path.join(ROOT, 'scripts/bundle-cli.mjs'), '--out', bin], { cwd: ROOT });
  await run(process.execPath, [path.join(ROOT, 'scripts/bundle-full.mjs'), '--out', path.join(dir, 'full')], { cwd: ROOT });
  const r = await traced(h.home, ['spawn', '--json', '--', 'sh', '-c', 'echo one > out/o.txt'], bin);
  const end = JSON.parse(r.stdout) as { runId: string; endReason: string; outputs: { path: string }[] };
  assert.deepEqual([end.endReason, end.outputs.map((o) => o.path)], ['completed', ['o.txt']]);
  const record = recordOnDisk(h.home, end.runId);
  assert.equal(record?.endReason, 'completed', 'the end record is on disk');
  // The bundle is compiled by brig.cjs (full-bundle.ts), not resolved: its mark is the code cache it left beside itself.
  assert.ok(fs.existsSync(path.join(dir, 'full', 'main.cjs.supervisor.v8cache')), 'the bundled full CLI ran and left its code cache');
  assert.ok(r.modules.includes('node:crypto'), 'the tracer saw the bundle\'s own requires');
  assert.deepEqual(r.modules.filter((m) => m.includes('/dist/')), [], 'no module of dist/ was loaded beside the bundle');
  // What every one-shot spawn runs is compiled from the bundle's code cache, not resolved and compiled from node_modules.
  assert.deepEqual(r.modules.filter((m) => /node_modules\/(zod|yaml|dockerode|docker-modem|tar-stream|tar-fs|readable-stream|pino|sonic-boom)\//.test(m)), [], 'zod, yaml, the engine client, the archive streams and the logger are inside the bundle');
  assert.deepEqual(r.modules.filter((m) => ONE_SHOT_UNNEEDED.some((u) => u.test(m))), [], 'nothing a one-shot command child does not use');
  // The same run as the full CLI from dist/ makes: the same end and the same record's shape.
  const plain = await traced(h.home, ['spawn', '--json', '--', 'sh', '-c', 'echo one > out/o.txt']);
  const plainEnd = JSON.parse(plain.stdout) as { runId: string; endReason: string; outputs: { path: string }[] };
  assert.deepEqual([plainEnd.endReason, plainEnd.outputs.map((o) => o.path)], [end.endReason, end.outputs.map((o) => o.path)]);
  assert.deepEqual(Object.keys(recordOnDisk(h.home, plainEnd.runId) ?? {}).sort(), Object.keys(record ?? {}).sort(), 'the same record fields');

  // The policy as the bundle parsed it is kept in the home (lease/policy-cache.ts): an edited
  // policy is in force at the next one-shot all the same. Default: root may spawn; strict denies it.
  const cache = path.join(h.home, 'policy-cache.v8');
  assert.ok(fs.existsSync(cache), 'the bundled one-shot kept its parse of the policy');
  const capsOf = (runId: string) => (JSON.parse(fs.readFileSync(path.join(h.home, 'leases', `${recordOnDisk(h.home, runId)!.leaseId}.json`), 'utf8')) as { caps: string[] }).caps;
  // The home's own policy file, the default's text: parsed and kept under this path.
  fs.copyFileSync(path.join(ROOT, 'policies', 'default.yaml'), path.join(h.home, 'policy.yaml'));
  const asDefault = JSON.parse((await traced(h.home, ['spawn', '--json', '--', 'true'], bin)).stdout) as { runId: string };
  assert.ok(capsOf(asDefault.runId).includes('spawn'), 'the premise: the default policy grants spawn');
  // The same file edited in place (strict's text): the next one-shot must not take the kept parse.
  fs.writeFileSync(path.join(h.home, 'policy.yaml'), fs.readFileSync(path.join(ROOT, 'policies', 'strict.yaml')));
  const strict = await traced(h.home, ['spawn', '--json', '--', 'true'], bin);
  const strictEnd = JSON.parse(strict.stdout) as { runId: string; endReason: string };
  assert.equal(strictEnd.endReason, 'completed');
  assert.deepEqual(capsOf(strictEnd.runId).filter((c) => c === 'spawn' || c === 'llm'), [], 'the edited policy (strict) was in force, not the cached default');
});
