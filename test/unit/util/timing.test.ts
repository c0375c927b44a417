/**
 * BRIG_TIMING=1: a process prints its phase marks at exit (first of a name counts, in order, with
 * the time since the mark before); without it nothing is recorded or printed.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const TIMING = path.resolve(import.meta.dirname, '../../../src/util/timing.ts');
const SCRIPT = `import { enableTiming, mark } from ${JSON.stringify(TIMING)};
if (process.env.BRIG_TIMING === '1') enableTiming();
mark('a: first'); mark('b: second'); mark('a: first'); process.stdout.write('done');`;

test('BRIG_TIMING=1 prints each phase once, in order, to stderr at exit', async () => {
  const r = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], { env: { ...process.env, BRIG_TIMING: '1' } });
  assert.equal(r.stdout, 'done', 'stdout is the command\'s own');
  const names = r.stderr.split('\n').filter((l) => /^\s+[\d.]+\s+Δ/.test(l)).map((l) => l.replace(/^\s*[\d.]+\s+Δ\s+[\d.]+\s+/, ''));
  assert.deepEqual(names, ['cli: main started', 'a: first', 'b: second', 'exit']);
  assert.match(r.stderr, /^brig timing \(ms since the process started/);
});

test('without BRIG_TIMING nothing is printed', async () => {
  const env = { ...process.env };
  delete env.BRIG_TIMING;
  const r = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], { env });
  assert.equal(r.stderr, '');
});
