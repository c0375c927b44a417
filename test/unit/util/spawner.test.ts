/**
 * The command helper (util/spawner.ts): what `promisify(execFile)` gives, from a helper process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Spawner, type ExecError } from '../../../src/util/spawner.js';

test('spawner: stdout on exit 0; code, stderr and stdout on a failure; argv only (no shell)', async () => {
  const s = new Spawner();
  try {
    assert.deepEqual(await s.execFile('/bin/sh', ['-c', 'echo out; echo err >&2']), { stdout: 'out\n', stderr: 'err\n' });
    await assert.rejects(s.execFile('/bin/sh', ['-c', 'echo partial; echo why >&2; exit 3']), (e: ExecError) => e.code === 3 && e.stderr === 'why\n' && e.stdout === 'partial\n');
    await assert.rejects(s.execFile('/nonexistent/tool', []), (e: ExecError) => e.code === 'ENOENT');
    // An argument with shell syntax is one argument.
    assert.equal((await s.execFile('/bin/echo', ['$(id); x'])).stdout, '$(id); x\n');
  } finally {
    s.close();
  }
});

test('spawner: concurrent calls run at once and each gets its own answer; env replaces the environment', async () => {
  const s = new Spawner();
  try {
    const outs = await Promise.all(Array.from({ length: 8 }, (_, i) => s.execFile('/bin/sh', ['-c', `sleep 0.2; echo ${i}`])));
    assert.deepEqual(outs.map((o) => o.stdout), ['0\n', '1\n', '2\n', '3\n', '4\n', '5\n', '6\n', '7\n']);
    assert.equal((await s.execFile('/usr/bin/env', [], { env: { ONLY: 'this' } })).stdout, 'ONLY=this\n');
  } finally {
    s.close();
  }
});

test('spawner: a helper that dies fails the calls in flight, and the next call starts a new one', async () => {
  const s = new Spawner();
  try {
    const first = await s.execFile('/bin/sh', ['-c', 'echo $PPID']);
    const helperPid = Number(first.stdout.trim());
    const pending = s.execFile('/bin/sleep', ['5']);
    await new Promise((r) => setTimeout(r, 100));
    process.kill(helperPid, 'SIGKILL');
    await assert.rejects(pending, /spawner exited/);
    const again = await s.execFile('/bin/sh', ['-c', 'echo $PPID']);
    assert.notEqual(Number(again.stdout.trim()), helperPid);
  } finally {
    s.close();
  }
});

test('spawner: a signal to the process group (Ctrl-C, SIGTERM) leaves the helper to its parent: it still answers', async () => {
  const s = new Spawner();
  try {
    const pid = Number((await s.execFile('/bin/sh', ['-c', 'echo $PPID'])).stdout.trim());
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.kill(pid, sig);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(Number((await s.execFile('/bin/sh', ['-c', 'echo $PPID'])).stdout.trim()), pid, 'the same helper answered');
  } finally {
    s.close();
  }
});

test('spawner: an idle helper does not keep its caller alive', () => {
  const src = new URL('../../../src/util/spawner.ts', import.meta.url).pathname;
  const code = `import { spawner } from ${JSON.stringify(src)};
    console.log((await spawner.execFile('/bin/echo', ['done'])).stdout.trim());`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.signal, null, 'it exited on its own, not by the timeout');
  assert.equal(r.stdout.trim(), 'done');
});

test('spawner: prestart starts the helper the next call uses, and holds no event loop open meanwhile', () => {
  const src = new URL('../../../src/util/spawner.ts', import.meta.url).pathname;
  // The helper's start is ~50 ms of node: a call 300 ms after the prestart finds it running (its
  // pid, the $PPID of the command, was already the helper's); then the process exits on its own.
  const code = `import { spawner } from ${JSON.stringify(src)};
    import fs from 'node:fs';
    spawner.prestart();
    spawner.prestart();
    const helpers = () => fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p)).filter((p) => { try { return fs.readFileSync('/proc/' + p + '/stat', 'utf8').split(') ')[1].split(' ')[1] === String(process.pid) && fs.readFileSync('/proc/' + p + '/cmdline', 'utf8').includes('--max-old-space-size=64'); } catch { return false; } });
    await new Promise((r) => setTimeout(r, 300));
    const before = helpers();
    const ppid = (await spawner.execFile('/bin/sh', ['-c', 'echo $PPID'])).stdout.trim();
    console.log(JSON.stringify({ before, ppid }));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.signal, null, `it exited on its own, not by the timeout: ${r.stderr}`);
  const seen = JSON.parse(r.stdout.trim().split('\n').pop()!) as { before: string[]; ppid: string };
  assert.equal(seen.before.length, 1, `one helper after two prestarts: ${seen.before.join(', ')}`);
  assert.equal(seen.ppid, seen.before[0], 'the command ran in the prestarted helper');
});
