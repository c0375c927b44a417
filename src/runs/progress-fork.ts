/**
 * The progress fork: one timer per running child, started at spawn and cleared at its end,
 * so a progress event can never outlive its run. The timer functions are injected so tests
 * drive time by hand.
 */
export interface Timers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export const realTimers: Timers = {
  setInterval: (fn, ms) => {
    const h = setInterval(fn, ms);
    h.unref();
    return h;
  },
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
};

export class ProgressFork {
  readonly #timers: Timers;
  readonly #handles = new Map<string, unknown>();

  constructor(timers: Timers = realTimers) {
    this.#timers = timers;
  }

  start(runId: string, intervalMs: number, tick: () => void): void {
    this.stop(runId);
    this.#handles.set(runId, this.#timers.setInterval(tick, intervalMs));
  }

  stop(runId: string): void {
    const h = this.#handles.get(runId);
    if (h === undefined) return;
    this.#timers.clearInterval(h);
    this.#handles.delete(runId);
  }

  stopAll(): void {
    for (const id of [...this.#handles.keys()]) this.stop(id);
  }

  has(runId: string): boolean {
    return this.#handles.has(runId);
  }

  get size(): number {
    return this.#handles.size;
  }
}

/** A content-free status line: state and step count, never child output. */
export function progressLineFor(status: string, steps: number): string {
  return `${status}, step ${steps}`;
}
