/**
 * The local model tier's install weight: node-llama-cpp is not one of brig's own npm
 * dependencies (a plain install of it pulls ~650 MB of GPU variants); it lives in its own
 * package folder, pinned, installed on demand without optional packages or install scripts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const json = (f: string) => JSON.parse(fs.readFileSync(path.join(ROOT, f), 'utf8')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string>; packages?: Record<string, unknown> };

test('brig\'s own npm ci carries no llama runtime; local-model/ pins node-llama-cpp and its CPU binary; make model installs it without optional packages or scripts', () => {
  const main = json('package.json');
  const all = { ...main.dependencies, ...main.devDependencies };
  assert.deepEqual(Object.keys(all).filter((k) => /llama/i.test(k)), [], 'no llama package among brig\'s own dependencies');
  assert.deepEqual(Object.keys(json('package-lock.json').packages ?? {}).filter((k) => /llama/i.test(k)), [], 'nor in its lock file');
  assert.deepEqual(json('local-model/package.json').dependencies, { 'node-llama-cpp': '3.21.1', '@node-llama-cpp/linux-x64': '3.21.1' });
  assert.ok(fs.existsSync(path.join(ROOT, 'local-model/package-lock.json')), 'its own lock file: npm ci');
  const make = fs.readFileSync(path.join(ROOT, 'Makefile'), 'utf8');
  assert.match(make, /npm ci --prefix local-model --omit=optional --ignore-scripts/);
  assert.match(make, /^test: .*\bmodel\b/m, 'make test gets the model');
  assert.match(make, /^demo: .*\bmodel\b/m, 'make demo gets the model');
});
