/**
 * The warm pool serves a foreign image's shape like any other (issue 24): through a real
 * `brig serve --warm 1` on a real engine, an operator's spawn in a Debian image is served cold
 * once (the shape is learned), then from a slot whose waiter is brig's own busybox from the
 * runtime bind — and the run is the cold path's run: the image's programs (GNU `ls`, not
 * busybox's applet of the same name), the same environment, the same image terms on its
 * verified jail. A bare name the image lacks ends 127 with the shell's line; a script child in
 * a musl image runs brig's node from the bind, pooled. dist/ must be built.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requireEngine } from '../../helpers/engine.js';
import { debianImage, mmdebstrapTool, muslImage, muslTools } from '../../helpers/foreign-images.js';
import { until } from '../runs/fixture.js';
import { daemonHome, warmReady, type Serve, spawnToEnd } from './serve-proc.js';

const ready = (serve: Serve, n: number) => until(async () => (await warmReady(serve.socket)) === n, `${n} warm jails ready`);

const spawn = spawnToEnd;

const ENV = ['sh', '-c', 'env | grep -v ^BRIG_RUN_ID= | sort; umask; id -u; ls -ld /workspace /workspace/out | cut -c1-10'];

test('a foreign image\'s shape is learned and served warm: the image\'s own programs, the cold path\'s environment; 127 for a name it lacks; a musl script child pooled', async (t) => {
  if (!(await requireEngine(t))) return;
  const deb = mmdebstrapTool();
  if (!deb.ok) return t.skip(`no Debian test image: ${deb.why}`);
  const debian = await debianImage();
  const h = await daemonHome(t);
  const serve = await h.serve(['--warm', '1']);
  await ready(serve, 1);

  const coldLs = await spawn(serve, { task: 'ls', kind: 'command', argv: ['ls', '--version'], image: debian });
  assert.equal(coldLs.jail?.pooled, undefined, 'a shape new to the pool is served cold once');
  assert.equal(coldLs.endReason, 'completed', coldLs.stderrTail);
  await ready(serve, 2);
  const warmLs = await spawn(serve, { task: 'ls', kind: 'command', argv: ['ls', '--version'], image: debian });
  assert.ok(warmLs.jail?.pooled, 'then warm');
  assert.equal(warmLs.endReason, 'completed', warmLs.stderrTail);
  assert.match(warmLs.stdoutTail ?? '', /GNU coreutils/, 'the image\'s ls, not the waiter\'s busybox applet');
  assert.equal(warmLs.stdoutTail, coldLs.stdoutTail);
  assert.deepEqual(warmLs.jail?.foreignImage, coldLs.jail?.foreignImage, 'the same image terms on the verified jail');

  await ready(serve, 2);
  const warmEnv = await spawn(serve, { task: 'env', kind: 'command', argv: ENV, image: debian });
  const coldEnv = await spawn(serve, { task: 'env', kind: 'command', argv: ENV, image: debian, limits: { memoryMb: 384 } });
  assert.ok(warmEnv.jail?.pooled && !coldEnv.jail?.pooled);
  assert.equal(warmEnv.endReason, 'completed', warmEnv.stderrTail);
  assert.equal(warmEnv.stdoutTail, coldEnv.stdoutTail, 'environment, umask, user and workspace modes as the cold path\'s');

  // Three shapes now: brig's image, the Debian one, and the Debian one at 384 MiB (learned by the cold spawn).
  await ready(serve, 3);
  const missing = await spawn(serve, { task: 'absent', kind: 'command', argv: ['no-such-command', 'x'], image: debian });
  assert.ok(missing.jail?.pooled);
  assert.deepEqual([missing.endReason, missing.exitCode], ['failed', 127]);
  assert.match(missing.stderrTail ?? '', /brig: no-such-command: not found in PATH/);

  const musl = muslTools();
  if (!musl.ok) {
    t.diagnostic(`the musl half is skipped: ${musl.why}`);
  } else {
    const image = await muslImage();
    const script = `import { writeFileSync } from 'node:fs';\nexport default async function () { writeFileSync('/workspace/out/r.txt', process.version); return { ok: true }; }`;
    const first = await spawn(serve, { task: 's', kind: 'script', script, image });
    assert.equal(first.endReason, 'completed', first.stderrTail);
    await ready(serve, 4); // the musl shape kept warm beside the three
    const pooled = await spawn(serve, { task: 's', kind: 'script', script, image });
    assert.ok(pooled.jail?.pooled, 'a script child in a musl image, pooled');
    assert.equal(pooled.endReason, 'completed', pooled.stderrTail);
    assert.deepEqual(pooled.result, { ok: true });
  }
  await serve.signal('SIGTERM');
});
