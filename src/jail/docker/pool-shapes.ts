/**
 * The warm pool's shapes (pool.ts): which limit shapes are kept warm, how many ready jails each
 * is kept at, which is let go first, and the file that carries them to the next start. Plain
 * bookkeeping: making and destroying jails is the pool's. A shape is a limit shape of one image
 * and a flavour: plain (the waiter execs the run's argv) or agent-ready (its slots hold a
 * pre-started agent runtime, issue 26) — the two are kept, counted and let go apart.
 *
 * Guarantees: a shape is learned (kept warm, written to the file) only when an operator asks
 * for it; a child's spawn is served from a shape already kept or goes cold, and never evicts
 * one nor reaches the file; a primed shape (the operator's default) is never evicted.
 * Threat: a child steering the pool — evicting the operator's warm jails, or making the next
 * daemon warm what it chose. Fails closed: an unknown asker learns nothing.
 */
import fs from 'node:fs';
import { writeFileAtomic } from '../../util/atomic-file.js';
import type { JailLimits } from '../types.js';
import type { Slot } from './pool-slot.js';

/** A pool serves one exact limit shape of one image, plain or agent-ready. */
export function shapeKey(image: string, l: JailLimits, agent = false): string {
  return [image, l.memoryMb, l.cpu, l.pids, l.tmpfsMb, l.diskMb, ...(agent ? ['agent'] : [])].join('|');
}

/** A shape as the file keeps it: its limits and whether it is agent-ready. */
export interface KeptShape {
  limits: JailLimits;
  agent: boolean;
}

const SHAPE_KEYS = ['memoryMb', 'cpu', 'pids', 'tmpfsMb', 'diskMb'] as const;

/** The shapes a file holds: each a full set of positive finite limits, anything else dropped. */
export function readShapes(file: string): JailLimits[] {
  return readKeptShapes(file).map((s) => s.limits);
}

/** The shapes a file holds with their flavour (`agent: true` marks an agent-ready one; anything else is plain). */
export function readKeptShapes(file: string): KeptShape[] {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((x) => {
    const o = x as Record<string, unknown>;
    if (typeof o !== 'object' || o === null || !SHAPE_KEYS.every((k) => typeof o[k] === 'number' && Number.isFinite(o[k]) && (o[k] as number) > 0)) return [];
    return [{ limits: Object.fromEntries(SHAPE_KEYS.map((k) => [k, o[k]])) as unknown as JailLimits, agent: o.agent === true }];
  });
}

/** A shape's bookkeeping; S is the pool's slot (Docker's pool-slot.ts, Kubernetes' k8s-pool.ts). */
export interface ShapeState<S = Slot> {
  image: string;
  limits: JailLimits;
  /** Agent-ready: each slot's waiter pre-starts the agent runtime (pool-waiter.ts). */
  agent: boolean;
  ready: S[];
  filling: number;
  lastWanted: number;
  /**
   * Ready jails this shape is kept at: the pool's size for a primed shape; one for a shape only
   * asked for (learned, or kept from a previous daemon), doubled each time a spawn takes one, up
   * to the size — a one-off shape costs one idle jail, not `size` of them.
   */
  target: number;
  /** Primed by the operator's configuration: never let go for a newer shape. */
  pinned: boolean;
}

export interface WantOptions {
  /** Ready jails a shape new to the pool is kept at (default one). */
  target?: number;
  /** Learn a shape the pool does not keep (an operator's); false: only a kept one is served. */
  learn: boolean;
  /** Never let this shape go (the primed one). */
  pinned?: boolean;
  /** The agent-ready flavour of the shape (default: plain). */
  agent?: boolean;
}

export interface PoolShapesOptions {
  /** Ready jails kept per shape at most (the pool's size). */
  size: number;
  /** Shapes kept at once (the least recently asked for goes first). */
  maxShapes: number;
  /** Where the shapes asked for are kept (most recent first, at most maxShapes); absent: nowhere. */
  file?: string;
}

/** The shapes a pool keeps warm, by shapeKey, most recently wanted last let go. */
export class PoolShapes<S = Slot> {
  readonly #shapes = new Map<string, ShapeState<S>>();
  #lastWanted = 0;
  #saving: Promise<void> = Promise.resolve();

  constructor(private readonly o: PoolShapesOptions) {}

  /** The shapes the file kept, oldest first, so the most recently asked ends up the most recently wanted. */
  kept(): KeptShape[] {
    return this.o.file ? readKeptShapes(this.o.file).slice(0, this.o.maxShapes).reverse() : [];
  }

  /**
   * Marks a shape as wanted. A shape new to the pool is learned only with `learn` (kept at
   * `target` ready jails); without it, an unknown shape is null (the caller goes cold) and
   * nothing changes. The least recently wanted unpinned shapes past maxShapes are let go: their
   * ready slots are returned for the caller to destroy.
   */
  want(image: string, limits: JailLimits, o: WantOptions): { key: string; dropped: S[] } | null {
    const agent = o.agent === true;
    const key = shapeKey(image, limits, agent);
    const known = this.#shapes.get(key);
    if (!known && !o.learn) return null;
    // Strictly increasing: shapes wanted in the same millisecond keep their order.
    const now = Math.max(Date.now(), this.#lastWanted + 1);
    this.#lastWanted = now;
    const s: ShapeState<S> = known ?? { image, limits: { ...limits }, agent, ready: [], filling: 0, lastWanted: now, target: Math.max(1, Math.min(this.o.size, o.target ?? 1)), pinned: o.pinned === true };
    s.lastWanted = now;
    if (o.pinned) s.pinned = true;
    this.#shapes.set(key, s);
    if (!known) this.#save();
    const dropped: S[] = [];
    const pinned = [...this.#shapes.values()].filter((x) => x.pinned).length;
    const byAge = [...this.#shapes.entries()].filter(([, x]) => !x.pinned).sort((a, b) => b[1].lastWanted - a[1].lastWanted);
    for (const [k, old] of byAge.slice(Math.max(0, this.o.maxShapes - pinned))) {
      this.#shapes.delete(k);
      dropped.push(...old.ready.splice(0));
    }
    return { key, dropped };
  }

  get(key: string): ShapeState<S> | undefined {
    return this.#shapes.get(key);
  }

  entries(): IterableIterator<[string, ShapeState<S>]> {
    return this.#shapes.entries();
  }

  values(): IterableIterator<ShapeState<S>> {
    return this.#shapes.values();
  }

  /** Resolves once the last save of the file is done. */
  saved(): Promise<void> {
    return this.#saving;
  }

  /** The shapes kept, most recently wanted first (best effort: the pool works without the file). */
  #save(): void {
    const file = this.o.file;
    if (!file) return;
    const shapes = [...this.#shapes.values()].sort((a, b) => b.lastWanted - a.lastWanted).map((s) => ({ ...Object.fromEntries(SHAPE_KEYS.map((k) => [k, s.limits[k]])), ...(s.agent ? { agent: true } : {}) }));
    this.#saving = this.#saving.then(() => writeFileAtomic(file, `${JSON.stringify(shapes)}\n`).catch(() => {}));
  }
}
