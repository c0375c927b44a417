import crypto from 'node:crypto';
import { DockerJailDriver, type Jail, type JailSpec } from '../../../src/jail/index.js';

/** One root run id per test process: every container/volume these tests make carries it. */
export const ROOT = `h1t-${process.pid}-${crypto.randomBytes(3).toString('hex')}`;

export function runId(tag: string): string {
  return `${ROOT}-${tag}-${crypto.randomBytes(2).toString('hex')}`;
}

export function spec(tag: string, argv: string[], patch: Partial<JailSpec> = {}): JailSpec {
  return {
    runId: runId(tag),
    leaseId: `lease-${tag}`,
    rootRunId: ROOT,
    argv,
    env: { HOME: '/workspace' },
    limits: { memoryMb: 128, cpu: 1, pids: 64, tmpfsMb: 16, diskMb: 64 },
    artifacts: [],
    ...patch,
  };
}

export const driver = new DockerJailDriver({ owner: ROOT });

/** Creates, starts and waits; always destroys. */
export async function runToEnd(s: JailSpec, after?: (j: Jail) => Promise<void>) {
  const jail = await driver.create(s);
  try {
    await jail.start();
    const exit = await jail.wait();
    await after?.(jail);
    return { exit, tails: jail.tails(), jail };
  } finally {
    await jail.destroy();
  }
}

/** Removes whatever this process left behind (its own root run id only). */
export async function sweepOwn(): Promise<void> {
  await driver.sweep((id) => !id.startsWith(ROOT));
}
