/**
 * A warm pool slot's life (pool.ts): made as a cold jail is, waiting, destroyed.
 *
 * Guarantees: a slot is `create()`d by the same driver with the same hardened body as a cold
 * jail (verify-after-create, its own fresh capped workspace and broker socket directory) and is
 * handed over only once its waiter said it is ready; its socket directory and FIFO are the jail
 * user's (0700, 0600) when brig runs as root, else 0711 and 0666 inside brig's private
 * brokers directory, as a run's socket is. Threat: a slot that is not what a cold jail would
 * be, or that leaves its container, disk or directory behind. Trusts: the driver's create and
 * verify, the kernel's permission checks. Fails closed: anything that fails while making a
 * slot destroys what was made and throws; destroying never throws.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { BrigError } from '../../util/errors.js';
import { POOL_KEY_PREFIX, type JailLimits, type JailSpec } from '../types.js';
import type { DockerJail } from './docker-jail.js';
import type { DockerJailDriver } from './docker-jail-driver.js';
import { FIFO, SLOT_ENV, WAITER, waiterReady } from './pool-waiter.js';
import { JAIL_USER, renderCreateBody, type CreateBody } from './profile.js';

const run = promisify(execFile);
/** coreutils' mkfifo, by absolute path (Node has no mkfifo); found once. */
const MKFIFO = ['/usr/bin/mkfifo', '/bin/mkfifo'].find((p) => fs.existsSync(p));
const JAIL_IDS = JAIL_USER.split(':').map(Number) as [number, number];

export interface Slot {
  key: string;
  dir: string;
  jail: DockerJail;
  body: CreateBody;
  shape: string;
  readyAt: string;
  /** Set once a run took it: from then on its run's ender destroys it. */
  taken: boolean;
}

/** A fresh slot key: `pool-` and 12 hex (the sweep knows a slot by its prefix). */
export function newSlotKey(): string {
  return `${POOL_KEY_PREFIX}${crypto.randomBytes(6).toString('hex')}`;
}

export interface MakeSlot {
  driver: DockerJailDriver;
  /** The supervisor's brokers directory: the slot's directory is made in it. */
  brokersDir: string;
  key: string;
  shape: string;
  image: string;
  limits: JailLimits;
}

/** Makes, starts and waits for one slot; on any failure what was made is gone before it throws. */
export async function makeSlot(o: MakeSlot): Promise<Slot> {
  const dir = path.join(o.brokersDir, o.key);
  let jail: DockerJail | undefined;
  try {
    await slotDir(dir);
    const spec: JailSpec = { runId: o.key, leaseId: 'pool', rootRunId: o.key, argv: ['/bin/sh', '-c', WAITER], env: { ...SLOT_ENV }, limits: o.limits, artifacts: [], brokerDir: dir, inputs: [], image: o.image };
    const rendered = renderCreateBody(spec, o.image, o.driver.owner);
    if (!rendered.ok) throw rendered.error;
    jail = (await o.driver.create(spec)) as DockerJail;
    await jail.start();
    if (!(await waiterReady(jail, 15_000))) throw new BrigError('jail_failed', 'the pooled jail\'s waiter did not start');
    jail.clearTails();
    return { key: o.key, dir, jail, body: rendered.value, shape: o.shape, readyAt: new Date().toISOString(), taken: false };
  } catch (e) {
    await jail?.destroy().catch(() => {});
    await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => {});
    throw e;
  }
}

/** Removes the slot's container, volume and directory (best effort; never throws). */
export async function destroySlot(slot: Slot): Promise<void> {
  slot.taken = true; // its waiter's exit is this destroy, not a discard
  await slot.jail.destroy().catch(() => {});
  await fs.promises.rm(slot.dir, { recursive: true, force: true }).catch(() => {});
}

/**
 * The slot's socket directory with its FIFO: as root, both the jail user's (0700, 0600) as a
 * run's socket is; otherwise 0711 and 0666 inside the private brokers directory, as a run's.
 */
async function slotDir(dir: string): Promise<void> {
  await fs.promises.mkdir(dir, { mode: 0o700 });
  const fifo = path.join(dir, FIFO);
  if (!MKFIFO) throw new BrigError('jail_failed', "the warm pool needs coreutils' mkfifo (/usr/bin/mkfifo); install coreutils or run without --warm");
  await run(MKFIFO, ['-m', '0600', fifo], { env: {} }).catch((e: unknown) => {
    throw new BrigError('jail_failed', `making the pooled jail's FIFO failed: ${(e as Error).message}`);
  });
  if (process.getuid?.() === 0) {
    await fs.promises.chown(fifo, ...JAIL_IDS);
    await fs.promises.chown(dir, ...JAIL_IDS);
  } else {
    // Not root: the jail's uid cannot be given the files; the private brokers parent (0700) keeps others out.
    await fs.promises.chmod(fifo, 0o666);
    await fs.promises.chmod(dir, 0o711);
  }
}
