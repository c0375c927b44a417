/**
 * The warm pool (`brig serve --warm N`, jail/docker/pool.ts) on a real engine through real
 * `brig serve` processes: a pooled run is the cold path's run (PID 1 its argv, the same
 * environment, workspace and socket directory, the lease's limits read from inside its
 * cgroup), each run's jail is fresh and destroyed after it, the end reasons are the cold
 * path's, what the pool cannot serve goes cold, slots a dead daemon left are swept, a run
 * holding a slot across a SIGKILL is reattached by it, and a drain leaves nothing.
 * dist/ must be built.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApiClient } from '../../../src/client/index.js';
import type { RunRecord } from '../../../src/runs/index.js';
import net from 'node:net';
import { judgeProbe, parseProbe, probeArgv } from '../../../src/jail/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { leftovers, until } from '../runs/fixture.js';
import { brokerSockets, daemonHome, recordOnDisk, warmReady, type DaemonHome, type Serve, spawnToEnd } from './serve-proc.js';

const ready = (serve: Serve, n: number) => until(async () => (await warmReady(serve.socket)) === n, `${n} warm jails ready`);

/** What a child reports of its own jail: identical between a pooled and a cold jail. */
const SELF_REPORT = [
  'echo "pid1=$(tr "\\0" " " </proc/1/cmdline)"',
  'echo "self=$$"',
  'env | sort | sed "s/^/env:/"',
  'ls -la /workspace /workspace/.brig | awk "NR>1 && \\$NF != \\".\\" && \\$NF != \\"..\\" {print \\"ws:\\" \\$1, \\$3, \\$NF}"',
  'ls -A /run/brig | sed "s/^/run:/"',
  'ls /proc/self/fd | sed "s/^/fd:/"',
  'echo "umask=$(umask)"',
  // cgroup v1's files, or v2's unified ones (memory.max, pids.max, cpu.max's quota).
  'c=/sys/fs/cgroup; if [ -d $c/memory ]; then echo "mem=$(cat $c/memory/memory.limit_in_bytes)"; echo "pids=$(cat $c/pids/pids.max)"; echo "cfs=$(cat $c/cpu/cpu.cfs_quota_us)"; else echo "mem=$(cat $c/memory.max)"; echo "pids=$(cat $c/pids.max)"; read q p < $c/cpu.max; echo "cfs=$q"; fi',
  'if [ -e /workspace/left-by-earlier ]; then echo seen=yes; else echo seen=no; fi',
  'echo x > /workspace/left-by-earlier',
].join('; ');

const spawn = spawnToEnd;

const report = (r: RunRecord): Map<string, string[]> => {
  const m = new Map<string, string[]>();
  for (const line of (r.stdoutTail ?? '').split('\n').filter(Boolean)) {
    const i = line.indexOf(line.includes('=') && !line.startsWith('env:') && !line.startsWith('ws:') ? '=' : ':');
    const k = line.slice(0, i);
    m.set(k, [...(m.get(k) ?? []), line.slice(i + 1)]);
  }
  return m;
};

/** Pool slots of this home in the engine (their keys start `pool-`; a taken one is a run's). */
async function poolContainers(home: string): Promise<string[]> {
  return (await leftovers(home)).filter((x) => x.startsWith('container:pool-'));
}

async function assertNothingLeft(h: DaemonHome): Promise<void> {
  assert.deepEqual(await leftovers(h.home, { released: true }), [], 'no container, volume or disk labelled for this home');
  assert.deepEqual(brokerSockets(h.home), [], 'no broker socket left');
  const dirs = fs.existsSync(h.paths.brokers) ? fs.readdirSync(h.paths.brokers) : [];
  assert.deepEqual(dirs, [], 'no run or slot directory left under the brokers directory');
}

test('a pooled run is the cold path\'s run: the same env, workspace, socket directory and fds, the lease\'s limits from inside, a fresh jail each time', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve(['--warm', '2']);
  await ready(serve, 2);

  const argv = ['/bin/sh', '-c', SELF_REPORT];
  const pooled = await spawn(serve, { task: 'report pooled', kind: 'command', argv });
  const again = await spawn(serve, { task: 'report pooled again', kind: 'command', argv });
  // An artifact takes the cold path (its bind is made at create): the control.
  const art = path.join(await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-art-')), 'note.txt');
  await fs.promises.writeFile(art, 'hello');
  t.after(() => fs.promises.rm(path.dirname(art), { recursive: true, force: true }));
  const cold = await spawn(serve, { task: 'report cold', kind: 'command', argv, artifact_refs: [art] });

  for (const r of [pooled, again, cold]) assert.equal(r.endReason, 'completed', `${r.id}: ${r.stderrTail}`);
  assert.match(pooled.jail?.pooled?.slot ?? '', /^pool-[0-9a-f]{12}$/, 'the first run was handed a warm jail');
  assert.equal(pooled.jailKey, pooled.jail?.pooled?.slot, 'the record keeps the slot as its jail key');
  assert.ok(again.jail?.pooled && again.jail.pooled.slot !== pooled.jail!.pooled!.slot, 'the second run got another slot');
  assert.equal(cold.jail?.pooled, undefined, 'an artifact request went cold');
  assert.equal(cold.jailKey, undefined);

  const [p, a, c] = [report(pooled), report(again), report(cold)];
  // PID 1 of a pooled jail is its reaper (issue 26: the waiter runs the argv as its child and
  // says its end); the cold path's PID 1 is the argv itself.
  assert.match(p.get('pid1')![0]!, /^\/bin\/sh -c BRIG_NONCE=[0-9a-f]{32}$/, 'PID 1 of the pooled jail is its reaper');
  assert.notDeepEqual(p.get('self'), ['1'], 'the run\'s argv is the reaper\'s child');
  assert.deepEqual(c.get('pid1'), [`${argv.join(' ')} `]);
  assert.deepEqual(c.get('self'), ['1']);
  const env = (m: Map<string, string[]>, id: string) => m.get('env')!.map((x) => x.replace(id, '<run>'));
  assert.deepEqual(env(p, pooled.id), env(c, cold.id), 'the same environment, built from nothing');
  // PWD and SHLVL are the reporting shell's own, in both.
  assert.deepEqual(env(p, pooled.id), ['BRIG_RUN_ID=<run>', 'HOME=/workspace', 'HOSTNAME=brig', 'PATH=/bin:/usr/bin', 'PWD=/workspace', 'SHLVL=1']);
  assert.deepEqual(p.get('ws'), c.get('ws'), 'the same workspace: inputs with their modes and owner, nothing of the pool\'s');
  assert.ok(!(p.get('ws') ?? []).some((x) => x.endsWith('assign.sh')), 'the assignment is gone before the child runs');
  assert.deepEqual(p.get('run'), ['broker.sock', 'exit'], 'the assignment FIFO is gone before the child runs: the socket and the reaper\'s exit FIFO');
  assert.deepEqual(p.get('fd'), c.get('fd'), 'no descriptor of the waiter\'s is left open');
  assert.deepEqual(p.get('umask'), c.get('umask'));
  const lease = pooled.jail!.limits;
  assert.deepEqual(p.get('mem'), [String(lease.memoryMb! * 1024 * 1024)], 'memory limit from inside: the lease\'s');
  assert.deepEqual(p.get('pids'), [String(lease.pids)], 'pids limit from inside: the lease\'s');
  assert.deepEqual(p.get('cfs'), [String(Math.round(lease.cpu! * 100_000))], 'CPU quota from inside: the lease\'s');
  assert.deepEqual([p.get('seen'), a.get('seen')], [['no'], ['no']], 'each run\'s workspace is fresh: nothing of an earlier run is there');

  // A jail serves one run: both pooled runs' jails are gone, and the pool refilled to two.
  await ready(serve, 2);
  const keys = (await leftovers(h.home)).map((x) => x.split(':')[1]);
  for (const r of [pooled, again]) assert.ok(!keys.includes(r.jailKey!), `${r.jailKey} was destroyed after its run`);
  await serve.signal('SIGTERM');
  await assertNothingLeft(h);
});

// req: jail:non-root jail:no-caps jail:no-new-privs jail:seccomp jail:network-none jail:read-only-root jail:no-engine-socket
test('[INV-2] a pooled jail is the hardened jail, from inside: the doctor\'s probe passes every check (no network, read-only root, no capabilities, seccomp, the lease\'s limits and disk cap)', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve(['--warm', '1']);
  await ready(serve, 1);
  // A loopback port of the host: unreachable from the jail's own network namespace.
  const srv = net.createServer((c) => c.destroy());
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  t.after(() => srv.close());
  const port = (srv.address() as net.AddressInfo).port;
  const r = await spawn(serve, { task: 'probe', kind: 'command', argv: probeArgv(port) });
  assert.ok(r.jail?.pooled, 'the probe ran in a warm jail');
  const report = parseProbe(r.stdoutTail ?? '');
  assert.ok(report, `the probe reported: ${r.stderrTail}`);
  const l = r.jail!.limits;
  const checks = judgeProbe(report, { memoryMb: l.memoryMb!, pids: l.pids!, cpu: l.cpu!, diskMb: l.diskMb! });
  assert.ok(checks.length >= 10, 'the probe judged the jail');
  assert.deepEqual(checks.filter((c) => !c.ok), [], 'every check passes from inside the pooled jail');
  await serve.signal('SIGTERM');
  await assertNothingLeft(h);
});

test('pooled runs end as cold ones do: exit codes, a kill, a watchdog timeout, a script through the broker; a new shape is learned; what the image lacks goes cold', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve(['--warm', '2']);
  await ready(serve, 2);

  const failed = await spawn(serve, { task: 'exit 3', kind: 'command', argv: ['sh', '-c', 'echo out; echo err >&2; exit 3'] });
  assert.ok(failed.jail?.pooled, 'pooled');
  assert.equal(failed.endReason, 'failed');
  assert.equal(failed.exitCode, 3);
  assert.equal(failed.error?.code, 'child_failed');
  assert.equal(failed.stdoutTail, 'out\n', 'the tails hold the run\'s bytes only (not the waiter\'s)');
  assert.equal(failed.stderrTail, 'err\n');

  const script = await spawn(serve, {
    task: 'through the broker',
    script: `import { writeFileSync } from 'node:fs';
export default async function (brig) { await brig.progress('half'); writeFileSync('/workspace/out/r.txt', 'pooled'); return { n: 42 }; }`,
  });
  assert.equal(script.endReason, 'completed', script.stderrTail);
  assert.ok(script.jail?.pooled, 'a script child is pooled too');
  assert.deepEqual(script.result, { n: 42 });
  assert.equal(script.outputFiles, 1);

  const api = new ApiClient(serve.socket);
  t.after(() => api.close());
  await ready(serve, 2);
  const long = await api.spawn({ task: 'to be killed', kind: 'command', argv: ['sleep', '60'], async: true });
  assert.ok(long.ok);
  await until(async () => (await api.get(long.value.id))?.status === 'running', 'running');
  const k = await api.kill(long.value.id, { confirm: true });
  assert.ok(k.ok, JSON.stringify(k));
  const killed = (await api.wait(long.value.id, { timeoutMs: 30_000 }));
  assert.ok(killed.ok);
  assert.deepEqual([killed.value.endReason, killed.value.killedBy, Boolean(killed.value.jail?.pooled)], ['killed', 'operator', true]);

  await ready(serve, 2);
  const slow = await spawn(serve, { task: 'too slow', kind: 'command', argv: ['sleep', '60'], timeout: 1500 });
  assert.deepEqual([slow.endReason, Boolean(slow.jail?.pooled)], ['watchdog_timeout', true]);

  // A shape the pool does not hold goes cold once, then is kept warm: with one jail at first
  // (a one-off shape costs one idle jail), doubled each time a spawn takes one, up to --warm.
  const first = await spawn(serve, { task: 'small', kind: 'command', argv: ['true'], limits: { memoryMb: 512 } });
  assert.equal(first.jail?.pooled, undefined, 'an unknown shape is served cold');
  await ready(serve, 3);
  assert.equal(await warmReady(serve.socket, 'filling'), 0, 'nothing more is being made');
  assert.equal(await warmReady(serve.socket), 3, 'the learned shape is kept at one ready jail, the default one at two');
  const second = await spawn(serve, { task: 'small again', kind: 'command', argv: ['true'], limits: { memoryMb: 512 } });
  assert.ok(second.jail?.pooled, 'the learned shape is served warm');
  assert.equal(second.jail?.limits.memoryMb, 512);
  await ready(serve, 4);

  // An executable the image does not hold fails exactly as it does cold: at start.
  const missing = await spawn(serve, { task: 'no such command', kind: 'command', argv: ['no-such-command'] });
  assert.equal(missing.jail?.pooled, undefined, 'went cold');
  assert.equal(missing.endReason, 'failed');
  assert.equal(missing.error?.code, 'jail_failed', JSON.stringify(missing.error));

  // An argv the cold path refuses (a NUL byte) is refused the same way, never handed to a waiter.
  const nul = await spawn(serve, { task: 'a NUL in argv', kind: 'command', argv: ['sh', '-c', 'echo a\0b'] });
  assert.equal(nul.jail?.pooled, undefined, 'not pooled');
  assert.deepEqual([nul.endReason, nul.error?.code], ['failed', 'invalid_input'], JSON.stringify(nul.error));

  await serve.signal('SIGTERM');
  await assertNothingLeft(h);
});

test('a SIGKILLed daemon\'s idle slots are swept at the next start, a run holding a slot is reattached by it, and a killed waiter is replaced', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const first = await h.serve(['--warm', '2']);
  await ready(first, 2);
  const api = new ApiClient(first.socket);
  // Long enough to outlive a slow restart under load: the held slot must still be held when looked at.
  const r = await api.spawn({ task: 'outlive the daemon', kind: 'command', argv: ['sh', '-c', 'sleep 10; echo done > /workspace/out/done.txt'], async: true });
  await api.close();
  assert.ok(r.ok);
  await until(() => recordOnDisk(h.home, r.value.id)?.status === 'running', 'running');
  const held = recordOnDisk(h.home, r.value.id)!;
  assert.match(held.jailKey ?? '', /^pool-/, 'the running run holds a slot, on disk');
  await ready(first, 2);
  assert.equal((await poolContainers(h.home)).length, 3, 'two idle slots beside the held one');
  await first.signal('SIGKILL');

  // No --warm now: the dead daemon's two idle slots go; the held one is the run's.
  const second = await h.serve();
  assert.deepEqual(second.report.reattached, [r.value.id], 'reattached by its slot');
  assert.ok(second.report.swept.containers >= 2, `idle slots swept: ${JSON.stringify(second.report.swept)}`);
  assert.deepEqual(await poolContainers(h.home), [`container:${held.jailKey}`], 'only the held slot is left');
  const api2 = new ApiClient(second.socket);
  t.after(() => api2.close());
  const w = await api2.wait(r.value.id, { timeoutMs: 30_000 });
  assert.ok(w.ok);
  assert.equal(w.value.endReason, 'completed', JSON.stringify(w.value.error));
  assert.equal(w.value.outputFiles, 1, 'what it wrote after the restart was collected');
  await second.signal('SIGTERM');
  await assertNothingLeft(h);

  // A waiter killed while it waits is discarded and replaced.
  const third = await h.serve(['--warm', '1']);
  await ready(third, 1);
  const [victim] = (await poolContainers(h.home)).map((x) => x.split(':')[1]!);
  const { execFileSync } = await import('node:child_process');
  execFileSync('docker', ['kill', `brig-run-${victim}`]);
  await until(async () => {
    const now = await poolContainers(h.home);
    return now.length === 1 && !now.includes(`container:${victim}`);
  }, 'the killed slot replaced');
  await ready(third, 1);
  const api3 = new ApiClient(third.socket);
  t.after(() => api3.close());
  const ok = await spawn(third, { task: 'after the replacement', kind: 'command', argv: ['true'] });
  assert.deepEqual([ok.endReason, Boolean(ok.jail?.pooled)], ['completed', true]);
  await third.signal('SIGTERM');
  await assertNothingLeft(h);
  const ledger = fs.readdirSync(h.paths.ledger).map((f) => fs.readFileSync(path.join(h.paths.ledger, f), 'utf8')).join('');
  assert.match(ledger, new RegExp(`"type":"jail.pool_discarded"[^\\n]*"slot":"${victim}"[^\\n]*"reason":"exited -?\\d+"`), 'the discard is ledgered');
  assert.match(ledger, /"type":"jail.pool_assigned"/, 'assignments are ledgered');
});

test('a warm jail changed while it waited (its memory limit raised through the engine) is refused before its run\'s child exists: jail_unverified, then a fresh slot serves', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve(['--warm', '1']);
  await ready(serve, 1);
  const [slot] = (await poolContainers(h.home)).map((x) => x.split(':')[1]!);
  const { execFileSync } = await import('node:child_process');
  execFileSync('docker', ['update', '--memory', '3g', '--memory-swap', '3g', `brig-run-${slot}`]);
  const refused = await spawn(serve, { task: 'into the changed jail', kind: 'command', argv: ['sh', '-c', 'echo ran > /workspace/out/ran.txt'] });
  assert.equal(refused.jail?.pooled?.slot, slot, 'it was handed the changed slot');
  assert.equal(refused.endReason, 'failed');
  assert.equal(refused.error?.code, 'jail_unverified', JSON.stringify(refused.error));
  assert.match(refused.error?.message ?? '', /HostConfig\.Memory/);
  assert.equal(refused.outputFiles, 0, 'its child never ran');
  assert.equal(refused.startedAt, null, 'never started');
  await ready(serve, 1);
  const ok = await spawn(serve, { task: 'into a fresh one', kind: 'command', argv: ['true'] });
  assert.deepEqual([ok.endReason, Boolean(ok.jail?.pooled), ok.jail?.pooled?.slot === slot], ['completed', true, false]);
  await serve.signal('SIGTERM');
  await assertNothingLeft(h);
});

test('the shapes a daemon was asked for are warmed again by the next one before any run asks', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const first = await h.serve(['--warm', '1']);
  await ready(first, 1);
  const cold = await spawn(first, { task: 'a new shape', kind: 'command', argv: ['true'], limits: { memoryMb: 384 } });
  assert.equal(cold.jail?.pooled, undefined, 'the first ask of a shape is served cold');
  await ready(first, 2);
  await first.signal('SIGTERM');
  await assertNothingLeft(h);
  const kept = JSON.parse(fs.readFileSync(path.join(h.home, 'warm-shapes.json'), 'utf8')) as { memoryMb: number }[];
  assert.equal(kept[0]?.memoryMb, 384, 'the most recently asked shape first');
  assert.equal(kept.length, 2);

  const second = await h.serve(['--warm', '1']);
  await ready(second, 2);
  const warm = await spawn(second, { task: 'the same shape after a restart', kind: 'command', argv: ['true'], limits: { memoryMb: 384 } });
  assert.ok(warm.jail?.pooled, 'served warm on its first ask to the new daemon');
  assert.equal(warm.jail?.limits.memoryMb, 384);
  await second.signal('SIGTERM');
  await assertNothingLeft(h);
});
