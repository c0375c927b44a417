import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseArgs } from '../../../src/cli/command.js';
import { serveSettings } from '../../../src/cli/commands/serve.js';

const spec = { valued: ['progress-interval', 'stuck-kill', 'max-children', 'max-queued', 'max-concurrent'], booleans: ['json', 'no-steer-inject'] };
const settingsOf = (args: string[]) => serveSettings(parseArgs(args, spec));

test('brig serve: --max-children past the global cap raises it (else the flag would change nothing); --max-concurrent wins', () => {
  assert.deepEqual(settingsOf(['--max-children', '8']), { maxChildrenPerAgent: 8, maxConcurrent: 8 });
  assert.deepEqual(settingsOf(['--max-children', '2']), { maxChildrenPerAgent: 2, maxConcurrent: 5 });
  assert.deepEqual(settingsOf(['--max-children', '8', '--max-concurrent', '3']), { maxChildrenPerAgent: 8, maxConcurrent: 3 });
  assert.deepEqual(settingsOf(['--progress-interval', '2', '--stuck-kill', '1.5', '--no-steer-inject']), { progressIntervalMs: 2000, stuckKillThresholdMs: 1500, steerInject: false });
  assert.throws(() => settingsOf(['--max-children', '0']), (e: { code?: string }) => e.code === 'invalid_input');
  assert.throws(() => settingsOf(['--max-queued', 'many']), (e: { code?: string }) => e.code === 'invalid_input');
});

test('brig serve --min-free-mb: the reserve kept free in the home, 0 for none; anything but a number from 0 is refused', () => {
  const withFree = (args: string[]) => serveSettings(parseArgs(args, { ...spec, valued: [...spec.valued, 'min-free-mb'] }));
  assert.deepEqual(withFree(['--min-free-mb', '256']), { minFreeBytes: 256 * 1024 * 1024 });
  assert.deepEqual(withFree(['--min-free-mb', '0']), { minFreeBytes: 0 });
  for (const bad of ['-1', 'lots']) assert.throws(() => withFree(['--min-free-mb', bad]), (e: { code?: string; message?: string }) => e.code === 'invalid_input' && /--min-free-mb/.test(e.message ?? ''));
});
