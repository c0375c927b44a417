/**
 * A pooled jail's end is said by its reaper (issue 26), not by the engine's exit handling, and
 * believed only from the host: the report comes through /run/brig/exit, which the child can
 * write too, and counts once the jail's pids cgroup holds the reaper alone. What must hold as
 * on the cold path: the exit code is the child's (a signal's 128+n included), what it wrote to
 * its streams is all there, what it left running dies with it, SIGTERM reaches it, and a child
 * forging an early report is caught — its real end is the one taken and what it wrote after
 * the forgery is collected. Real engine, real slots.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WarmPool, type Jail } from '../../../src/jail/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { driver, spec, sweepOwn } from './helpers.js';

after(sweepOwn);

const SHAPE = { memoryMb: 128, cpu: 1, pids: 64, tmpfsMb: 16, diskMb: 32 };
const CAPS = { perFileBytes: 1 << 20, perRunBytes: 4 << 20, maxEntries: 100 };

/** The host pids in the jail's pids cgroup (cgroup v1 or v2), read as the supervisor reads them. */
async function jailPids(j: Jail): Promise<number[]> {
  const c = driver.docker.getContainer(j.id);
  const pid = ((await c.inspect()) as { State: { Pid: number } }).State.Pid;
  const lines = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  const v1 = lines.find((l) => l.split(':')[1]?.split(',').includes('pids'))?.split(':')[2];
  const procs = v1 !== undefined ? `/sys/fs/cgroup/pids${v1}/cgroup.procs` : `/sys/fs/cgroup${lines.find((l) => l.startsWith('0::'))!.slice(3)}/cgroup.procs`;
  return fs.readFileSync(procs, 'utf8').split('\n').filter(Boolean).map(Number);
}

function pooled(t: { after: (fn: () => Promise<void>) => void }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-reaper-'));
  const pool = new WarmPool({ driver, size: 1, maxShapes: 1, brokersDir: dir, prime: [SHAPE] });
  t.after(async () => {
    await pool.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return {
    pool,
    async jail(tag: string, argv: string[]): Promise<Jail> {
      await pool.filled();
      const j = await pool.create(spec(`rp-${tag}`, argv, { limits: SHAPE, brokerDir: fs.mkdtempSync(path.join(dir, 'run-')), askedBy: 'operator' }));
      assert.ok(j.verified?.pooled, `${tag}: served from the pool`);
      return j;
    },
    out: (tag: string) => path.join(dir, `out-${tag}`),
  };
}

// req: end:one-reason
test('[INV-8] a pooled child\'s end comes from its reaper, confirmed from the host: its own exit code (a signal\'s too), its whole stdout and stderr, and nothing it left running', async (t) => {
  if (!(await requireEngine(t))) return;
  const p = pooled(t);
  await p.pool.start();
  const cases: [string, string, number, string, string][] = [
    ['zero', 'printf out-no-newline; printf err-no-newline >&2', 0, 'out-no-newline', 'err-no-newline'],
    ['seven', 'echo seven; exit 7', 7, 'seven\n', ''],
    ['signal', 'echo before; kill -9 $$', 137, 'before\n', ''],
    ['orphan', 'sleep 300 & echo left-a-sleep; exit 3', 3, 'left-a-sleep\n', ''],
  ];
  for (const [tag, sh, code, stdout, stderr] of cases) {
    const j = await p.jail(tag, ['sh', '-c', sh]);
    try {
      await j.start();
      const exit = await j.wait();
      assert.deepEqual([exit.exitCode, exit.by], [code, 'reaper'], `${tag}: the child's status, said by the reaper`);
      const tails = j.tails();
      assert.deepEqual([tails.stdoutTail, tails.stderrTail], [stdout, stderr], `${tag}: every byte the child wrote, nothing of the reaper's`);
      assert.equal(tails.stdoutBytes, Buffer.byteLength(stdout), `${tag}: the count is the child's`);
      assert.equal((await jailPids(j)).length, 1, `${tag}: the reaper alone is left (what the child left running was killed)`);
    } finally {
      await j.destroy();
    }
  }
});

// req: end:one-reason end:output-kept
test('[INV-8] a child that forges an early exit report is caught: its real end is taken and what it wrote after the forgery is collected', async (t) => {
  if (!(await requireEngine(t))) return;
  const p = pooled(t);
  await p.pool.start();
  // Claims "0" three ways, then keeps working for 3 s (past the 2-s bound on the streams' end marker), then ends 5.
  const sh = 'echo 0 > /run/brig/exit; printf "0\\n0\\n" > /run/brig/exit; echo junk-junk-junk > /run/brig/exit; sleep 3; echo late > out/late.txt; exit 5';
  const j = await p.jail('forge', ['sh', '-c', sh]);
  try {
    await j.start();
    const exit = await j.wait();
    assert.deepEqual([exit.exitCode, exit.by], [5, 'reaper'], 'the forged 0 was not believed while the child still ran');
    const rep = await j.collect(p.out('forge'), CAPS);
    assert.deepEqual(rep.files.map((f) => f.path), ['late.txt'], 'what the child wrote after its forgery is there');
  } finally {
    await j.destroy();
  }
});

// req: end:one-reason
test('[INV-8] SIGTERM reaches a pooled child through its reaper, and the grace ends with the child, not at its bound', async (t) => {
  if (!(await requireEngine(t))) return;
  const p = pooled(t);
  await p.pool.start();
  const j = await p.jail('term', ['sh', '-c', 'trap "echo got-term; exit 9" TERM; echo ready; while :; do sleep 0.1; done']);
  try {
    await j.start();
    for (let i = 0; i < 200 && !j.tails().stdoutTail.includes('ready'); i++) await new Promise((r) => setTimeout(r, 25));
    const ended = j.wait();
    // A grace far beyond the test's bound: stop() must come back with the child's end.
    await j.stop(600_000);
    const exit = await ended;
    assert.deepEqual([exit.exitCode, exit.by], [9, 'reaper'], 'the child\'s trap ran and its status is the end');
    assert.match(j.tails().stdoutTail, /got-term/);
  } finally {
    await j.destroy();
  }
});
