/**
 * Time a unit test moves by hand: a clock that says what the test set, and interval timers
 * that fire when the test says so. The code under test takes them where it takes time
 * (`Clock`, `now`, `Timers`), so a test states "50 ms later" instead of sleeping 50 ms and
 * hoping the machine kept up.
 */

export class ManualClock {
  constructor(public t = Date.parse('2030-01-01T00:00:00.000Z')) {}
  now = (): Date => new Date(this.t);
  ms = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

/** setInterval/clearInterval in the shape of runs/ `Timers` (and lease/ `watchRevocations`). */
export class ManualTimers {
  readonly #live = new Map<number, { fn: () => void; ms: number }>();
  #n = 0;
  setInterval = (fn: () => void, ms: number): unknown => {
    this.#live.set(++this.#n, { fn, ms });
    return this.#n;
  };
  clearInterval = (h: unknown): void => {
    this.#live.delete(h as number);
  };
  /** How many intervals are set and not cleared. */
  get live(): number {
    return this.#live.size;
  }
  /** Runs every live interval once (each as its timer would: a throw is the caller's). */
  fire(): void {
    for (const { fn } of [...this.#live.values()]) fn();
  }
}
