/**
 * The exit watch over a scripted engine (the real engine behind a proxy that cuts, refuses and
 * freezes: test/integration/reliability/engine-outage.test.ts). Each fake wait call either
 * answers, closes before a body (its connection cut), or never answers (lost silently); each
 * inspect answers running, exited, 404, or fails (the engine does not answer). What must hold:
 * the exit returned is the engine's own; a wait lost either way is caught and issued again
 * once the engine answers; nothing is invented while the engine is away.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import { watchExit, type ExitWatchTiming } from '../../../src/jail/docker/exit-watch.js';

type WaitScript = 'hang' | 'cut' | { exit: number };
type InspectScript = 'running' | 'down' | 'gone' | { exited: number; oom?: boolean };

const FAST: ExitWatchTiming = { recheckMs: 40, inspectTimeoutMs: 40, retryMs: 10 };

/** A container whose wait and inspect calls follow the scripts, the last entry repeating. */
function scripted(waits: WaitScript[], inspects: InspectScript[]) {
  const calls = { waits: 0, inspects: 0 };
  const next = <T>(list: T[], i: number): T => list[Math.min(i, list.length - 1)]!;
  const container = {
    id: 'c1',
    modem: {
      dial(_o: unknown, cb: (err: unknown, res?: unknown) => void) {
        const w = next(waits, calls.waits++);
        if (w === 'hang') return;
        const res = new PassThrough();
        setImmediate(() => {
          cb(null, res);
          if (w === 'cut') res.destroy();
          else res.end(JSON.stringify({ StatusCode: w.exit }));
        });
      },
    },
    async inspect() {
      const i = next(inspects, calls.inspects++);
      if (i === 'down') throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      if (i === 'gone') throw Object.assign(new Error('no such container'), { statusCode: 404 });
      if (i === 'running') return { State: { Running: true } };
      return { State: { Running: false, ExitCode: i.exited, OOMKilled: i.oom === true } };
    },
  };
  return { container: container as unknown as Docker.Container, calls };
}

test('a wait that answers gives the exit code, with no inspect', async () => {
  const { container, calls } = scripted([{ exit: 3 }], ['running']);
  assert.deepEqual(await watchExit(container, new AbortController().signal, FAST), { exitCode: 3 });
  assert.equal(calls.inspects, 0);
});

test('a wait whose connection was cut: the engine is asked until it answers; exited meanwhile, its exit and OOM state are the engine\'s', async () => {
  const { container, calls } = scripted(['cut'], ['down', 'down', 'down', { exited: 7, oom: true }]);
  assert.deepEqual(await watchExit(container, new AbortController().signal, FAST), { exitCode: 7, oomKilled: true });
  assert.equal(calls.inspects, 4);
  assert.equal(calls.waits, 1, 'no wait issued while the engine was away');
});

test('a cut wait while the child still runs is issued again once the engine answers, and that wait gives the exit', async () => {
  const { container, calls } = scripted(['cut', { exit: 0 }], ['down', 'running']);
  let back = 0;
  assert.deepEqual(await watchExit(container, new AbortController().signal, FAST, { onBack: () => back++ }), { exitCode: 0 });
  assert.equal(calls.waits, 2);
  assert.equal(back, 1, 'told the engine is back (the stream is attached again)');
});

test('a wait lost silently (no answer, no close) is caught by the re-inspect', async () => {
  const { container } = scripted(['hang'], ['running', 'running', { exited: 2 }]);
  assert.deepEqual(await watchExit(container, new AbortController().signal, FAST), { exitCode: 2, oomKilled: false });
});

test('a frozen engine (inspects time out) then back with the child running: a fresh wait replaces the one in doubt', async () => {
  const { container, calls } = scripted(['hang', { exit: 5 }], ['down', 'down', 'running']);
  assert.deepEqual(await watchExit(container, new AbortController().signal, FAST), { exitCode: 5 });
  assert.equal(calls.waits, 2);
});

test('a container the engine no longer knows is not_running; a closing driver ends the watch shutting_down', async () => {
  const gone = scripted(['cut'], ['gone']);
  await assert.rejects(watchExit(gone.container, new AbortController().signal, FAST), { code: 'not_running' });
  const ac = new AbortController();
  const hung = scripted(['hang'], ['running']);
  const w = watchExit(hung.container, ac.signal, FAST);
  setTimeout(() => ac.abort(), 30);
  await assert.rejects(w, { code: 'shutting_down' });
});
