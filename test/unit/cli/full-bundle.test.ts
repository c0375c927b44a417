/**
 * The full CLI's bundle run with V8's code cache (src/cli/full-bundle.ts): the bundle runs as a
 * CommonJS main with its own file and directory, its cache is written beside it when absent or
 * rejected and never otherwise, and a cache another user could have written is not used. Real
 * processes, real files, V8's real acceptance of its own cache.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cacheClass, cacheFileFor } from '../../../src/cli/full-bundle.js';

const LOADER = new URL('../../../src/cli/full-bundle.ts', import.meta.url).pathname;
const BUNDLE = `#!/usr/bin/env node
const add = (a, b) => a + b;
console.log(JSON.stringify({ file: __filename, dir: __dirname, joined: require('node:path').join('a', 'b'), sum: add(2, 3), thisIsExports: this === module.exports }));
`;

function runBundle(bundle: string, argv: string[]): { out: Record<string, unknown>; code: number | null; stderr: string } {
  const code = `import { runFullBundle } from ${JSON.stringify(LOADER)};
    if (!runFullBundle(${JSON.stringify(bundle)}, ${JSON.stringify(argv)})) console.log(JSON.stringify({ absent: true }));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8', timeout: 20_000 });
  return { out: JSON.parse(r.stdout.trim().split('\n').pop() || '{}') as Record<string, unknown>, code: r.status, stderr: r.stderr };
}

function tempBundle(t: { after: (f: () => void) => void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-bundle-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'main.cjs');
  fs.writeFileSync(file, BUNDLE, { mode: 0o755 });
  return file;
}

test('the commands that may compose a supervisor have their own cache; the rest share one', () => {
  assert.equal(cacheClass(['spawn', '--', 'true']), 'supervisor');
  assert.equal(cacheClass(['serve']), 'supervisor');
  assert.equal(cacheClass(['list']), 'cli');
  assert.equal(cacheClass([]), 'cli');
  assert.equal(cacheFileFor('/x/main.cjs', ['spawn']), '/x/main.cjs.supervisor.v8cache');
});

test('the bundle runs as a CommonJS main; its cache is written once, then used as it is (not rewritten)', (t) => {
  const bundle = tempBundle(t);
  const cache = cacheFileFor(bundle, ['spawn']);
  const first = runBundle(bundle, ['spawn']);
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(first.out, { file: bundle, dir: path.dirname(bundle), joined: 'a/b', sum: 5, thisIsExports: true });
  const made = fs.statSync(cache);
  assert.equal(made.mode & 0o777, 0o644);
  const second = runBundle(bundle, ['spawn']);
  assert.deepEqual(second.out, first.out);
  const kept = fs.statSync(cache);
  // V8 accepted it: a rejected cache is rewritten at exit (a new file renamed over it).
  assert.deepEqual([kept.ino, kept.mtimeMs], [made.ino, made.mtimeMs], 'the accepted cache was not rewritten');
  assert.equal(fs.existsSync(cacheFileFor(bundle, ['list'])), false, 'the other class has none until it runs');
  assert.deepEqual(fs.readdirSync(path.dirname(bundle)).sort(), ['main.cjs', 'main.cjs.supervisor.v8cache'], 'no temporary file left');
});

test('a cache V8 rejects (another source) is rewritten; one another user could have written is not used', (t) => {
  const bundle = tempBundle(t);
  const cache = cacheFileFor(bundle, ['list']);
  fs.writeFileSync(cache, Buffer.alloc(4096, 7), { mode: 0o644 });
  const garbage = fs.statSync(cache).ino;
  assert.equal(runBundle(bundle, ['list']).out.sum, 5, 'a garbage cache does not stop the run');
  assert.notEqual(fs.statSync(cache).ino, garbage, 'the rejected cache was replaced');
  // Group-writable: whoever could write it could hand this process compiled code. Not read, replaced.
  fs.chmodSync(cache, 0o666);
  const open = fs.statSync(cache).ino;
  assert.equal(runBundle(bundle, ['list']).out.sum, 5);
  const after = fs.statSync(cache);
  assert.notEqual(after.ino, open, 'the writable cache was not used (a fresh one replaced it)');
  assert.equal(after.mode & 0o777, 0o644);
});

test('no bundle: false, for the caller to load dist/cli/main.js', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-bundle-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  assert.deepEqual(runBundle(path.join(dir, 'main.cjs'), ['spawn']).out, { absent: true });
});

test('the bundle script leaves no import(): a built-in\'s becomes a require, any other fails the build naming it', (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-bundle-src-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const script = new URL('../../../scripts/bundle-full.mjs', import.meta.url).pathname;
  const build = (main: string) => {
    fs.mkdirSync(path.join(root, 'dist', 'cli'), { recursive: true });
    fs.writeFileSync(path.join(root, 'dist', 'cli', 'main.js'), main);
    return spawnSync(process.execPath, [script, '--dist', path.join(root, 'dist'), '--out', path.join(root, 'out')], { encoding: 'utf8', timeout: 60_000 });
  };
  const ok = build("export const os = () => import('node:os');\nos().then((m) => console.log(JSON.stringify({ named: typeof m.cpus, dflt: typeof m.default.cpus })));\n");
  assert.equal(ok.status, 0, ok.stderr);
  const text = fs.readFileSync(path.join(root, 'out', 'main.cjs'), 'utf8');
  assert.doesNotMatch(text, /\bimport\(/, 'no import() in the bundle');
  const out = runBundle(path.join(root, 'out', 'main.cjs'), ['list']);
  assert.deepEqual([out.code, out.out], [0, { named: 'function', dflt: 'function' }], out.stderr);
  const again = runBundle(path.join(root, 'out', 'main.cjs'), ['list']);
  assert.deepEqual([again.code, again.out], [0, { named: 'function', dflt: 'function' }], `the built-in's lazy load works from the code cache too: ${again.stderr}`);
  const refused = build("export const u = () => import('undici');\n");
  assert.notEqual(refused.status, 0);
  assert.match(refused.stderr, /dynamic imports \(undici\)/);
});

test('the bundle makes one namespace per CommonJS module for all its importers (esbuild\'s __toESM, memoized), each reading the module live', (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-bundle-src-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const script = new URL('../../../scripts/bundle-full.mjs', import.meta.url).pathname;
  const dist = path.join(root, 'dist');
  fs.mkdirSync(path.join(dist, 'cli'), { recursive: true });
  fs.writeFileSync(path.join(dist, 'cli', 'a.js'), "import * as os from 'node:os';\nexport const a = os;\n");
  fs.writeFileSync(path.join(dist, 'cli', 'b.js'), "import * as os from 'node:os';\nexport const b = os;\n");
  fs.writeFileSync(path.join(dist, 'cli', 'c.js'), "import os from 'node:os';\nexport const c = os;\n");
  fs.writeFileSync(path.join(dist, 'cli', 'main.js'), [
    "import { a } from './a.js';",
    "import { b } from './b.js';",
    "import { c } from './c.js';",
    "import os from 'node:os';",
    'const before = a.hostname;',
    "os.hostname = () => 'patched';",
    'console.log(JSON.stringify({ same: a === b, cpus: typeof a.cpus, dflt: a.default === c, live: a.hostname() === "patched" && before !== a.hostname }));',
    '',
  ].join('\n'));
  const built = spawnSync(process.execPath, [script, '--dist', dist, '--out', path.join(root, 'out')], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(built.status, 0, built.stderr);
  assert.match(fs.readFileSync(path.join(root, 'out', 'main.cjs'), 'latin1'), /var __toESM_each = /, 'the helper was memoized');
  const out = runBundle(path.join(root, 'out', 'main.cjs'), ['list']);
  assert.deepEqual([out.code, out.out], [0, { same: true, cpus: 'function', dflt: true, live: true }], out.stderr);
});
