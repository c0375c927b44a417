/**
 * [INV-5] [INV-9] grep and jq run isolated as the DuckDB helper is: uid 65534, no
 * capabilities, no_new_privs, their own PID, IPC and mount namespaces and no network but a
 * loopback, a read-only `/`, an empty environment, the ref as their stdin and no other ref
 * readable. Proven from inside: the real grep and jq the slicer uses, started through the
 * slicer's own exec wrapper (ToolRunner.run), read their own /proc/self/status, net/dev and
 * mountinfo; a write probe through the same wrapper meets EROFS.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { FsResultStore } from '../../../src/results/index.js';
import { isolationAvailable } from '../../../src/slice/helper-isolation.js';
import { reportTools } from '../../../src/slice/index.js';
import { GREP, JQ, ToolRunner } from '../../../src/slice/tool-runner.js';
import type { BoundedExecOptions } from '../../../src/slice/bounded-exec.js';

const field = (status: string, name: string) => new RegExp(`^${name}:[ \\t]*(.*)$`, 'm').exec(status)?.[1]?.trim() ?? '';

// req: slice:tools-empty-env limits:helper-os-caps
test('[INV-5] [INV-9] grep and jq, from inside: uid 65534, CapEff 0, NoNewPrivs 1, only lo, / read-only, empty env, only the ref readable', async (t) => {
  if (!isolationAvailable(true)) {
    if (process.env.CI === 'true') throw new Error('CI requires slicing isolation (root + util-linux)');
    t.skip('isolating grep/jq needs root and util-linux unshare/setpriv/nsenter');
    return;
  }
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-tool-iso-'));
  const runner = new ToolRunner({ isolate: 'require' });
  t.after(async () => {
    await runner.close();
    await fs.rm(home, { recursive: true, force: true });
  });
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const mine = await store.writeStream('run-a', 'root-a', 'mine.jsonl', Readable.from([Buffer.from('{"mine":1}\n')]));
  const other = await store.writeStream('run-b', 'root-b', 'other.jsonl', Readable.from([Buffer.from('{"other":"SECRET_OF_B"}\n')]));
  const secret = path.join(home, 'root-only.txt');
  await fs.writeFile(secret, 'ROOT_ONLY\n', { mode: 0o600 });
  const run = (o: Partial<BoundedExecOptions> & Pick<BoundedExecOptions, 'cmd' | 'args'>) =>
    runner.run({ timeoutMs: 20_000, maxBytes: 256 * 1024, maxMemoryBytes: 2 * 1024 ** 3, ...o });

  // The real grep reads its own /proc/self: credentials, network devices, mounts.
  const g = await run({ cmd: GREP, args: ['-H', '-e', '', '/proc/self/status', '/proc/self/net/dev', '/proc/self/mountinfo'] });
  assert.equal(g.code, 0, g.stderr);
  const lines = g.stdout.toString('utf8').split('\n');
  const of = (file: string) => lines.filter((l) => l.startsWith(`${file}:`)).map((l) => l.slice(file.length + 1));
  const status = of('/proc/self/status').join('\n');
  assert.equal(field(status, 'Name'), 'grep', 'grep read its own status');
  assert.equal(field(status, 'Uid'), '65534\t65534\t65534\t65534');
  assert.equal(field(status, 'Gid'), '65534\t65534\t65534\t65534');
  assert.equal(field(status, 'Groups'), '');
  for (const c of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) assert.equal(field(status, c), '0000000000000000', c);
  assert.equal(field(status, 'NoNewPrivs'), '1');
  const ifaces = of('/proc/self/net/dev').slice(2).filter(Boolean).map((l) => l.trim().split(':')[0]);
  assert.deepEqual(ifaces, ['lo'], 'no network interface but loopback');
  const root = of('/proc/self/mountinfo').map((l) => l.split(' ')).filter((m) => m[4] === '/');
  assert.ok(root.length > 0);
  for (const m of root) assert.match(m[5]!, /(^|,)ro(,|$)/, '/ is read-only');

  // The real jq reads its own status too, and sees no environment.
  const j = await run({ cmd: JQ, args: ['-R', '-r', 'select(startswith("Uid:") or startswith("CapEff:") or startswith("NoNewPrivs:"))', '/proc/self/status'] });
  assert.equal(j.code, 0, j.stderr);
  const js = j.stdout.toString('utf8');
  assert.equal(field(js, 'Uid'), '65534\t65534\t65534\t65534');
  assert.equal(field(js, 'CapEff'), '0000000000000000');
  assert.equal(field(js, 'NoNewPrivs'), '1');
  process.env.BRIG_TOOL_ISO_SECRET = 'ENV_SECRET_77';
  t.after(() => delete process.env.BRIG_TOOL_ISO_SECRET);
  const env = await run({ cmd: JQ, args: ['-n', '-c', '[$ENV, env]'] });
  assert.equal(env.stdout.toString('utf8').trim(), '[{},{}]', 'an empty environment');

  // Its own PID namespace and /proc: it is PID 1 and alone.
  const procs = await run({ cmd: GREP, args: ['-l', '-e', '', '/proc/1/status', '/proc/2/status'] });
  assert.equal(procs.stdout.toString('utf8').trim(), '/proc/1/status', 'only itself in /proc');
  assert.match(procs.stderr, /\/proc\/2\/status: No such file/);

  // / is read-only: a world-writable directory on it takes no write (the same wrapper, a probe command).
  const w = await run({ cmd: '/usr/bin/touch', args: [`/tmp/brig-tool-iso-${process.pid}`] });
  assert.notEqual(w.code, 0);
  assert.match(w.stderr, /Read-only file system/);

  // Only the ref is readable: its stdin; another ref and a root-only file are not.
  const own = await run({ cmd: GREP, args: ['-c', '-e', 'mine'], stdinFile: store.resolvePath(mine) });
  assert.equal(own.stdout.toString('utf8').trim(), '1', 'the ref, as stdin');
  const theirs = await run({ cmd: GREP, args: ['-c', '-e', '', store.resolvePath(other)] });
  assert.equal(theirs.code, 2);
  assert.match(theirs.stderr, /Permission denied/);
  assert.ok(!theirs.stdout.toString('utf8').includes('SECRET_OF_B'));
  const rootOnly = await run({ cmd: JQ, args: ['-R', '.', secret] });
  assert.notEqual(rootOnly.code, 0);
  assert.match(rootOnly.stderr, /Permission denied/);
});

/** Processes whose command line holds `marker`. */
async function alive(marker: string): Promise<number> {
  let n = 0;
  for (const pid of (await fs.readdir('/proc')).filter((p) => /^\d+$/.test(p))) {
    try {
      if ((await fs.readFile(`/proc/${pid}/cmdline`, 'utf8')).includes(marker)) n++;
    } catch {
      // gone
    }
  }
  return n;
}

// req: limits:helper-os-caps
test('[INV-9] an isolated jq past its timeout or its output cap is killed with its namespace: nothing is left running', async (t) => {
  if (!isolationAvailable(true)) {
    if (process.env.CI === 'true') throw new Error('CI requires slicing isolation (root + util-linux)');
    t.skip('isolating grep/jq needs root and util-linux unshare/setpriv/nsenter');
    return;
  }
  const runner = new ToolRunner({ isolate: 'require' });
  t.after(() => runner.close());
  const marker = `brig-runaway-${process.pid}`;
  const slow = await runner.run({ cmd: JQ, args: ['-n', `def f: f; f # ${marker}`], timeoutMs: 1500, maxBytes: 4096, maxMemoryBytes: 512 * 1024 ** 2 });
  assert.equal(slow.timedOut, true);
  const loud = await runner.run({ cmd: JQ, args: ['-n', `repeat(1) # ${marker}`], timeoutMs: 20_000, maxBytes: 4096, maxMemoryBytes: 512 * 1024 ** 2 });
  assert.equal(loud.cut, true);
  assert.equal(await alive(marker), 0, 'no jq (nor its unshare) outlives the kill');
});

test('the fallback is explicit: off runs grep as the supervisor\'s user, auto isolates when the host allows it, and doctor\'s report says which', async (t) => {
  const off = new ToolRunner({ isolate: 'off' });
  t.after(() => off.close());
  const p = await off.probe();
  assert.equal(p.isolated, false);
  assert.equal(p.self.uid[0], process.getuid!(), 'unisolated: our own uid (still an empty environment and the caps)');
  assert.ok(p.addressSpaceBytes !== null, 'the address-space cap holds either way');
  const report = await reportTools();
  assert.equal(report.isolated, isolationAvailable(true));
  assert.equal(report.privilegeLeft === null, isolationAvailable(true), JSON.stringify(report));
  if (!report.isolated) assert.ok(report.fallback, 'why it fell back is said');
  assert.equal(report.addressSpaceBytes, 2 * 1024 ** 3);
});
