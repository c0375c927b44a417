import { test } from 'node:test';
import assert from 'node:assert/strict';
import { endReasonOf, runJailOnce, type Jail, type JailDriver, type JailSpec } from '../../../src/jail/index.js';
import { BrigError } from '../../../src/util/errors.js';

function fakeDriver(behaviour: { waitForever?: boolean; exitCode?: number; collectFails?: boolean; startFails?: boolean; tooLarge?: boolean }) {
  const calls: string[] = [];
  let release: (() => void) | undefined;
  const jail: Jail = {
    runId: 'r1',
    id: 'c1',
    async start() {
      calls.push('start');
      if (behaviour.startFails) throw new BrigError('jail_failed', 'no start');
    },
    async stop() {
      calls.push('stop');
    },
    wait() {
      calls.push('wait');
      return new Promise((resolve) => {
        release = () => resolve({ exitCode: 137, oomKilled: false });
        if (!behaviour.waitForever) resolve({ exitCode: behaviour.exitCode ?? 0, oomKilled: false });
      });
    },
    async kill() {
      calls.push('kill');
      release?.();
    },
    tails: () => ({ stdoutTail: '', stderrTail: '', stdoutBytes: 0, stderrBytes: 0 }),
    async collect(dir) {
      calls.push('collect');
      if (behaviour.collectFails) throw new BrigError('ref_too_large', 'too big');
      if (behaviour.tooLarge) return { dir, files: [{ path: 'small', bytes: 1 }], totalBytes: 1, skipped: [{ path: 'big', reason: 'too_large' }], tooLarge: [{ path: 'big', bytes: 2 ** 40 }] };
      return { dir, files: [], totalBytes: 0, skipped: [] };
    },
    async destroy() {
      calls.push('destroy');
    },
  };
  const driver = { create: async () => jail } as unknown as JailDriver;
  return { driver, calls };
}

const SPEC = { runId: 'r1' } as JailSpec;

test('endReasonOf: exactly one reason per observation', () => {
  assert.equal(endReasonOf({ timedOut: false, exitCode: 0, collectFailed: false }), 'completed');
  assert.equal(endReasonOf({ timedOut: false, exitCode: 1, collectFailed: false }), 'failed');
  assert.equal(endReasonOf({ timedOut: false, exitCode: 0, collectFailed: true }), 'failed');
  assert.equal(endReasonOf({ timedOut: false, exitCode: null, collectFailed: false }), 'failed');
  assert.equal(endReasonOf({ timedOut: true, exitCode: 137, collectFailed: false }), 'watchdog_timeout');
});

// req: end:released
test('[INV-8] the jail is destroyed on every path: success, timeout, collect refusal, start failure', async () => {
  const ok = fakeDriver({});
  assert.equal((await runJailOnce(ok.driver, SPEC, { timeoutMs: 1000, collectTo: '/x' })).endReason, 'completed');
  assert.deepEqual(ok.calls, ['start', 'wait', 'collect', 'destroy']);

  const slow = fakeDriver({ waitForever: true });
  const r = await runJailOnce(slow.driver, SPEC, { timeoutMs: 5 });
  assert.equal(r.endReason, 'watchdog_timeout');
  assert.deepEqual(slow.calls, ['start', 'wait', 'kill', 'destroy']);

  const big = fakeDriver({ collectFails: true });
  const b = await runJailOnce(big.driver, SPEC, { timeoutMs: 1000, collectTo: '/x' });
  assert.equal(b.endReason, 'failed');
  assert.equal(b.error?.code, 'ref_too_large');
  assert.equal(big.calls.at(-1), 'destroy');

  const dead = fakeDriver({ startFails: true });
  const d = await runJailOnce(dead.driver, SPEC, { timeoutMs: 1000 });
  assert.equal(d.endReason, 'failed');
  assert.equal(d.error?.code, 'jail_failed');
  assert.deepEqual(dead.calls, ['start', 'destroy']);
});

test('[INV-4] a file left out for the per-file cap is still the run\'s error; what was collected is kept on the result', async () => {
  const f = fakeDriver({ tooLarge: true });
  const r = await runJailOnce(f.driver, SPEC, { timeoutMs: 1000, collectTo: '/x' });
  assert.equal(r.endReason, 'failed');
  assert.equal(r.error?.code, 'ref_too_large');
  assert.match(r.error!.message, /out\/big/);
  assert.deepEqual(r.collected?.files, [{ path: 'small', bytes: 1 }]);
});
