/**
 * The Jail a run gets from the warm pool (pool.ts): the slot's container, assigned at start().
 *
 * Guarantees: the run's inputs and assignment reach the waiter only after the pool's recheck
 * of the slot passed, as one tar through the FIFO; the FIFO is unlinked as soon as its writing
 * end is held, so nothing in the jail can open it again; a slot is assigned once. Threat: a
 * run started in a slot that drifted, or a second writer on the FIFO. Trusts: the kernel's
 * FIFO semantics and the pool's recheck. Fails closed: a recheck that failed, a waiter that is
 * not listening or does not take the tar within its bound fails the start (`jail_failed`,
 * `jail_unverified`) before the child exists; the run's ender destroys the slot.
 * An agent-ready slot's assignment also carries the run's environment for its pre-started
 * runtime (pool-waiter.ts `runEnvInput`) and sends that runtime its go instead of starting the
 * argv; it is reaped as any child is, or not assigned at all (no reaper watch: `jail_failed`).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { BrigError } from '../../util/errors.js';
import type { CollectCaps, CollectOptions, CollectReport, Jail, JailExit, JailSpec, JailVerified, StreamTails } from '../types.js';
import { inputsArchive } from './docker-jail.js';
import type { Slot, SlotReaper } from './pool-slot.js';
import { ASSIGN, FIFO, assignmentHeader, assignScript, runEnvInput, type ForeignAssign, type Reaper } from './pool-waiter.js';
import { ReaperWatch } from './reaper.js';

export class PooledJail implements Jail {
  private assigned = false;
  /** The reaper's watch (issue 26): its confirmed end is not the engine's exit handling waited for. */
  #reaper: ReaperWatch | null = null;

  constructor(
    private readonly slot: Slot,
    private readonly spec: JailSpec,
    readonly verified: JailVerified,
    private readonly recheck: Promise<void>,
    private readonly started: () => void,
    private readonly released: () => void,
    /** A foreign image's terms for the assignment (pool-waiter.ts assignScript). */
    private readonly foreign?: ForeignAssign,
  ) {}

  get runId(): string {
    return this.spec.runId;
  }
  get id(): string {
    return this.slot.jail.id;
  }
  get key(): string {
    return this.slot.key;
  }
  get brokerDir(): string {
    return this.slot.dir;
  }

  /** The run's inputs and assignment through the FIFO as one tar; the waiter execs the argv. */
  async start(): Promise<void> {
    if (this.assigned) throw new BrigError('jail_failed', 'a pooled jail is assigned once');
    this.assigned = true;
    try {
      await this.#assign();
    } finally {
      this.started();
    }
  }

  async #assign(): Promise<void> {
    await this.recheck;
    const reaper = this.slot.reaper ? await this.#listen(this.slot.reaper) : undefined;
    const prestarted = this.slot.agent !== undefined;
    // A pre-started runtime is the waiter's child already: only a reaper can give it its go and its end.
    if (prestarted && !reaper) throw new BrigError('jail_failed', 'the pooled jail\'s reaper could not be watched: its pre-started runtime is not assigned');
    // The nonce and the end marker on the first line; a pre-started runtime's waiter has no assignment to eval (pool-waiter.ts).
    const archive = Buffer.concat([
      Buffer.from(assignmentHeader(this.slot.nonce, reaper?.marker)),
      await inputsArchive([
        ...(this.spec.inputs ?? []),
        ...(prestarted ? [runEnvInput(this.spec)] : [{ path: ASSIGN, data: assignScript(this.spec, this.foreign, reaper), mode: 0o444 }]),
      ], { outDir: false }),
    ]);
    const fifo = path.join(this.slot.dir, FIFO);
    const fd = await openWriter(fifo, 1000);
    // Gone before the child runs: the waiter holds its end, and nothing in the jail can open it again.
    await fs.promises.rm(fifo, { force: true }).catch((e: unknown) => {
      fs.closeSync(fd);
      throw e;
    });
    const sock = new net.Socket({ fd, readable: false, writable: true });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new BrigError('jail_failed', 'the pooled jail did not take its assignment')), 10_000);
        sock.once('error', (e) => (clearTimeout(timer), reject(new BrigError('jail_failed', `handing the pooled jail its run failed: ${e.message}`))));
        sock.end(archive, () => (clearTimeout(timer), resolve()));
      });
    } finally {
      sock.destroy();
    }
  }

  /** The reaper's watch, before the child exists; undefined (the engine says the end) without one. */
  async #listen(r: SlotReaper): Promise<Reaper | undefined> {
    const marker = `brig-end-${crypto.randomBytes(16).toString('hex')}`;
    this.#reaper = await ReaperWatch.open(this.slot.jail, r, marker);
    return this.#reaper ? { sleep: r.sleep, marker } : undefined;
  }

  wait(): Promise<JailExit> {
    const engine = this.slot.jail.wait();
    return this.#reaper ? Promise.race([this.#reaper.ended, engine]) : engine;
  }
  kill(): Promise<void> {
    return this.slot.jail.kill();
  }
  /**
   * SIGTERM reaches the child through its reaper; the grace ends with the child's confirmed end
   * (the reaper's sleep, PID 1, would ignore SIGTERM and hold the grace to its bound). After
   * the end nothing of the child is left to stop: the reaper alone holds still.
   */
  async stop(graceMs: number): Promise<void> {
    if (this.#reaper?.confirmed) return;
    await this.slot.jail.stop(graceMs, this.#reaper?.ended);
  }
  tails(): StreamTails {
    return this.slot.jail.tails();
  }
  collect(destDir: string, caps: CollectCaps, from?: string, opts?: CollectOptions): Promise<CollectReport> {
    return this.slot.jail.collect(destDir, caps, from, opts);
  }
  async destroy(): Promise<void> {
    this.#reaper?.close();
    await this.slot.jail.destroy();
    await fs.promises.rm(this.slot.dir, { recursive: true, force: true });
    this.released();
  }
}

/** Tries to open the FIFO's writing end without blocking until the waiter holds its reading end. */
async function openWriter(fifo: string, timeoutMs: number): Promise<number> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    } catch (e) {
      // ENXIO: no reader yet (the waiter is between its ready line and its open).
      if ((e as NodeJS.ErrnoException).code !== 'ENXIO' || Date.now() > end) {
        throw new BrigError('jail_failed', `the pooled jail's waiter is not listening (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      await new Promise((r) => setTimeout(r, 1));
    }
  }
}
