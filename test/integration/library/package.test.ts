/**
 * brig as a package: `npm pack` of this checkout (dist built) unpacked into a fresh project's
 * node_modules as npm installs it, its dependencies linked from this checkout (npm would fetch
 * them from the registry; tests stay on loopback), then a consumer written the way docs/api.md
 * shows type-checks under `strict` with `skipLibCheck: false` — the `exports` map, the `files`
 * list and every declaration the public types reach — and runs under plain node against a real
 * daemon.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome } from '../runs/fixture.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../../..');

const CONSUMER = `
import { open, BrigError, type RunHandle, type SpawnOptions } from 'brig';

const options: SpawnOptions = { task: 'sum', argv: ['sh', '-c', 'printf "n\\\\n1\\\\n2\\\\n39\\\\n" > out/n.csv'], limits: { timeoutMs: 60_000 } };
await using brig = await open({ mode: 'daemon' });
const run: RunHandle = await brig.spawn(options).orThrow();
const ended = await run.wait().orThrow();
const sum = await run.refs.sql('out/n.csv', 'SELECT sum(n) AS s FROM ref').orThrow();
const refused = await brig.run('r-0000000000000000');
console.log(JSON.stringify({ endReason: ended.endReason, sum: sum.rows, refused: !refused.ok && refused.error instanceof BrigError ? refused.error.code : null }));
`;

test('the package installs from its tarball, type-checks under strict in a fresh project, and runs', async (t) => {
  if (!(await requireEngine(t))) return;
  await fs.access(path.join(ROOT, 'dist', 'index.d.ts')).catch(() => assert.fail('dist/ is not built: run `make build` first'));
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-pkg-'));
  t.after(() => fs.rm(tmp, { recursive: true, force: true }));
  const packed = JSON.parse((await run('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: ROOT, maxBuffer: 64 << 20 })).stdout) as { filename: string; files: { path: string }[] }[];
  const files = packed[0]!.files.map((f) => f.path);
  assert.ok(files.includes('dist/index.d.ts') && files.includes('dist/cli/brig.cjs'), 'the tarball holds the built library and the CLI');
  assert.ok(!files.some((f) => f.startsWith('test/') || f.startsWith('src/')), 'and no tests or sources');

  const project = path.join(tmp, 'consumer');
  const pkgDir = path.join(project, 'node_modules', 'brig');
  await fs.mkdir(pkgDir, { recursive: true });
  await run('tar', ['xzf', path.join(tmp, packed[0]!.filename), '-C', pkgDir, '--strip-components=1']);
  const manifest = JSON.parse(await fs.readFile(path.join(pkgDir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  for (const dep of [...Object.keys(manifest.dependencies), '@types/node', 'typescript']) {
    const at = path.join(project, 'node_modules', dep);
    await fs.mkdir(path.dirname(at), { recursive: true });
    await fs.symlink(path.join(ROOT, 'node_modules', dep), at);
  }
  await fs.writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await fs.writeFile(
    path.join(project, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: false, types: ['node'], lib: ['ES2023'], outDir: 'out' }, include: ['main.ts'] }),
  );
  await fs.writeFile(path.join(project, 'main.ts'), CONSUMER);
  const tsc = await run(process.execPath, [path.join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project], { cwd: project }).catch((e: { stdout?: string; stderr?: string }) => ({ failed: `${e.stdout ?? ''}${e.stderr ?? ''}` }));
  assert.ok(!('failed' in tsc), `the consumer type-checks under strict: ${'failed' in tsc ? tsc.failed : ''}`);

  const home = await freshHome(t);
  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  t.after(() => d.close());
  const out = await run(process.execPath, [path.join(project, 'out', 'main.js')], { cwd: project, env: { ...process.env, BRIG_HOME: home } });
  assert.deepEqual(JSON.parse(out.stdout.trim()), { endReason: 'completed', sum: [[42]], refused: 'run_not_found' });
  // A deep import is not part of the contract: the exports map closes it.
  const deep = await run(process.execPath, ['--input-type=module', '-e', "await import('brig/dist/runs/index.js')"], { cwd: project }).catch((e: { stderr?: string }) => ({ stderr: e.stderr ?? '' }));
  assert.match(deep.stderr, /ERR_PACKAGE_PATH_NOT_EXPORTED/);
});
