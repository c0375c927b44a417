/**
 * [INV-2] No way from one run into another through the warm pool. The attack found (a child
 * given a slot's directory opened its FIFO, wrote an assignment, became the slot's PID 1 and
 * read the next run's bearer and task) fails at every step on its own:
 *  - the jail's uid cannot open a slot's FIFO for writing (it is root's, the jail may only read);
 *  - an assignment without the slot's nonce is not run: the waiter exits and the slot is gone;
 *  - one under another slot's nonce unpacks nothing: none of its files is on the workspace;
 *  - a slot whose PID 1 is no longer its waiter is never handed to a run.
 * Real engine, real slots; the writes an attacker would make are made here as root or as the
 * jail's uid.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WarmPool, type PoolEvent } from '../../../src/jail/index.js';
import { destroySlot, makeSlot, newSlotKey } from '../../../src/jail/docker/pool-slot.js';
import { inputsArchive } from '../../../src/jail/docker/docker-jail.js';
import { assignmentHeader } from '../../../src/jail/docker/pool-waiter.js';
import { requireEngine } from '../../helpers/engine.js';
import { driver, spec, sweepOwn } from './helpers.js';

after(sweepOwn);

const LIMITS = { memoryMb: 128, cpu: 1, pids: 64, tmpfsMb: 16, diskMb: 64 };

async function pool(t: { after(fn: () => Promise<void> | void): void }, events: PoolEvent[]): Promise<{ pool: WarmPool; dir: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-pool-'));
  const p = new WarmPool({ driver, size: 1, brokersDir: dir, prime: [LIMITS], onEvent: (e) => events.push(e) });
  t.after(async () => {
    await p.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await p.start();
  await p.filled();
  return { pool: p, dir };
}

function slotDirs(dir: string): string[] {
  return fs.readdirSync(dir).filter((n) => n.startsWith('pool-')).map((n) => path.join(dir, n));
}

/** The slot's waiter script, as the engine holds it (root can read it; no jail can). */
async function waiterOf(key: string): Promise<string> {
  const c = (await driver.docker.listContainers({ all: true, filters: { name: [key] } }))[0]!;
  const inspect = (await driver.docker.getContainer(c.Id).inspect()) as { Config: { Cmd: string[] } };
  return inspect.Config.Cmd[2]!;
}

/** The slot's container as the engine holds it, or null once the pool has removed it (a discard can be that fast). */
async function containerOf(key: string): Promise<{ State: { Running: boolean; ExitCode: number; Pid: number } } | null> {
  const c = (await driver.docker.listContainers({ all: true, filters: { name: [key] } }))[0];
  if (!c) return null;
  return (await driver.docker.getContainer(c.Id).inspect().catch(() => null)) as { State: { Running: boolean; ExitCode: number; Pid: number } } | null;
}

// req: jail:fresh
test("[INV-2] the jail's uid cannot open a warm slot's FIFO for writing (the attack's first step)", async (t) => {
  if (!(await requireEngine(t))) return;
  if (process.getuid?.() !== 0) return t.skip('needs root: the FIFO is given to the jail user only when brig runs as root');
  const events: PoolEvent[] = [];
  const { dir } = await pool(t, events);
  const slot = slotDirs(dir)[0]!;
  // What a child given the slot's directory would see: the directory bound elsewhere (no 0700 parent in the way).
  const view = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-view-'));
  fs.chmodSync(view, 0o755);
  execFileSync('mount', ['--bind', slot, view]);
  t.after(() => {
    execFileSync('umount', [view]);
    fs.rmdirSync(view);
  });
  const r = spawnSync(process.execPath, ['-e', `const fs=require('fs'); try { fs.openSync(process.argv[1], fs.constants.O_WRONLY | fs.constants.O_NONBLOCK); console.log('opened'); } catch (e) { console.log(e.code); }`, path.join(view, 'go')], { uid: 65534, gid: 65534, encoding: 'utf8' });
  assert.equal(r.stdout.trim(), 'EACCES', `uid 65534 opening the FIFO for writing: ${r.stdout}${r.stderr}`);
});

// req: jail:fresh
test('[INV-2] an assignment without the slot\'s nonce is never run: the waiter exits and the slot is discarded', async (t) => {
  if (!(await requireEngine(t))) return;
  const events: PoolEvent[] = [];
  const { dir } = await pool(t, events);
  const slot = slotDirs(dir)[0]!;
  const key = path.basename(slot);
  // A forged assignment, written as a root process on the host could: it would leave a mark and stay up.
  const tar = await inputsArchive([{ path: '.brig/assign.sh', data: 'echo pwned > /workspace/pwned\nexec sleep 600\n', mode: 0o444 }]);
  fs.writeFileSync(path.join(slot, 'go'), tar);
  for (let i = 0; i < 100 && (await containerOf(key))?.State.Running; i++) await new Promise((r) => setTimeout(r, 50));
  const c = await containerOf(key);
  assert.ok(!c || !c.State.Running, 'the waiter did not run the forged assignment: it is not running sleep');
  if (c) assert.equal(c.State.ExitCode, 70, 'it exited 70 (refused)');
  for (let i = 0; i < 100 && !events.some((e) => e.type === 'jail.pool_discarded' && e.slot === key); i++) await new Promise((r) => setTimeout(r, 50));
  const discarded = events.find((e) => e.type === 'jail.pool_discarded' && e.slot === key);
  assert.ok(discarded, 'the slot was discarded');
  assert.equal(discarded.reason, 'exited 70', 'its waiter exited 70 (refused), whether or not the container was still there to inspect');
});

// req: jail:fresh
test('[INV-2] a slot whose PID 1 is no longer its waiter is never handed to a run: the run gets another jail, the slot is discarded', async (t) => {
  if (!(await requireEngine(t))) return;
  const events: PoolEvent[] = [];
  const { pool: p, dir } = await pool(t, events);
  const slot = slotDirs(dir)[0]!;
  const key = path.basename(slot);
  // The hijack with everything an attacker could need (the nonce too, read from the engine as root):
  // PID 1 becomes a program that would read the next run's assignment from the FIFO.
  const nonce = /BRIG_NONCE=([0-9a-f]+)/.exec(await waiterOf(key))?.[1] ?? '';
  const hijack = 'exec sh -c "cat /run/brig/go > /workspace/stolen; sleep 600"\n';
  const tar = await inputsArchive([{ path: '.brig/assign.sh', data: hijack, mode: 0o444 }]);
  fs.writeFileSync(path.join(slot, 'go'), Buffer.concat([Buffer.from(assignmentHeader(nonce)), tar]));
  await new Promise((r) => setTimeout(r, 500));
  // The premise: the hijack took PID 1 (with the nonce, the waiter ran it), so only the slot check can stop it.
  const pid1 = (await containerOf(key))?.State.Pid;
  assert.ok(pid1 && fs.readFileSync(`/proc/${pid1}/cmdline`, 'utf8').includes('cat /run/brig/go'), 'the hijack runs as PID 1');
  const s = spec('after-hijack', ['sh', '-c', 'echo mine'], { limits: LIMITS, brokerDir: fs.mkdtempSync(path.join(dir, 'run-')) });
  const jail = await p.create(s);
  try {
    assert.notEqual(jail.key ?? jail.runId, key, 'the hijacked slot was not handed out');
    await jail.start();
    assert.equal((await jail.wait()).exitCode, 0);
  } finally {
    await jail.destroy();
  }
  assert.ok(events.some((e) => e.type === 'jail.pool_discarded' && e.slot === key), `the hijacked slot was discarded: ${JSON.stringify(events)}`);
});

/** Whether `p` exists in the container's filesystem, as the engine's archive stat says (a stopped container too). */
async function existsIn(containerId: string, p: string): Promise<boolean> {
  try {
    const res = (await driver.docker.getContainer(containerId).infoArchive({ path: p })) as { resume?: () => void };
    res.resume?.();
    return true;
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === 404) return false;
    throw e;
  }
}

// req: jail:fresh
test('[INV-2] an assignment under another slot\'s nonce unpacks nothing in the jail: its files are not on the workspace the waiter left (control: under the slot\'s own, they are)', async (t) => {
  if (!(await requireEngine(t))) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-nonce-'));
  const image = await driver.ensureImage();
  const make = () => makeSlot({ driver, brokersDir: dir, key: newSlotKey(), shape: 'nonce-test', image, limits: LIMITS });
  const [forged, control] = await Promise.all([make(), make()]);
  t.after(async () => {
    await Promise.all([destroySlot(forged), destroySlot(control)]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  // The assignment a run would get: a file and the script the waiter would exec — under a well-formed
  // first line that names another slot (the control's nonce), as a stream written into the wrong slot would.
  const tar = await inputsArchive([
    { path: 'planted.txt', data: 'unpacked\n', mode: 0o644 },
    { path: '.brig/assign.sh', data: 'exec sleep 600\n', mode: 0o444 },
  ]);
  fs.writeFileSync(path.join(forged.dir, 'go'), Buffer.concat([Buffer.from(assignmentHeader(control.nonce)), tar]));
  const exit = await forged.jail.wait();
  assert.equal(exit.exitCode, 70, 'the waiter refused the assignment (exit 70)');
  // The jail is stopped, its workspace disk still mounted for the engine's archive: nothing of the tar is there.
  assert.equal(await existsIn(forged.jail.id, '/workspace/planted.txt'), false, 'no file of the refused assignment was unpacked');
  assert.equal(await existsIn(forged.jail.id, '/workspace/.brig'), false, 'nor its .brig/');
  assert.equal(await existsIn(forged.jail.id, '/workspace/out'), true, 'the premise: the workspace is readable through the engine');
  // The control: the same stream under the control's own nonce is unpacked and run.
  fs.writeFileSync(path.join(control.dir, 'go'), Buffer.concat([Buffer.from(assignmentHeader(control.nonce)), tar]));
  let seen = false;
  for (let i = 0; i < 100 && !(seen = await existsIn(control.jail.id, '/workspace/planted.txt')); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(seen, 'under its own nonce the same assignment is unpacked (so the check above could see it)');
});
