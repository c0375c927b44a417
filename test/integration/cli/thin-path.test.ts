/**
 * A thin command through a daemon loads no heavy part: `brig list`, `brig ref read`,
 * `brig wait`, `brig --version` and `brig spawn -- ARGV` against a real `brig serve` load
 * neither dockerode, DuckDB, zod, undici, the YAML parser nor node:http (their answers are
 * checked too). A control proves the tracer sees such modules: `brig doctor --help` loads dockerode.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome } from '../daemon/serve-proc.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../../..');
const MAIN = path.join(ROOT, 'dist/cli/main.js');
const TRACE = path.join(ROOT, 'test/helpers/module-trace.mjs');
const HEAVY = [/node_modules\/dockerode\//, /node_modules\/@duckdb\//, /node_modules\/zod\//, /node_modules\/undici\//, /node_modules\/yaml\//, /node_modules\/tar-stream\//, /^node:http$/];

async function traced(home: string, args: string[]): Promise<{ stdout: string; modules: string[] }> {
  const file = path.join(home, `trace-${args[0]!.replace(/\W/g, '')}-${Date.now()}.txt`);
  const env = { ...process.env, BRIG_HOME: home, BRIG_TEST_MODULE_TRACE: file };
  const { stdout } = await run(process.execPath, ['--import', TRACE, MAIN, ...args], { env, cwd: ROOT });
  return { stdout, modules: fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) };
}

const heavyIn = (modules: string[]) => modules.filter((m) => HEAVY.some((h) => h.test(m)));

test('a thin command through a daemon loads no dockerode, DuckDB, zod, undici, yaml or node:http (control: image build --help does)', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve();
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
  await serve.signal('SIGTERM');
});
