/** A token bucket: `capacity` calls at once, refilled at `refillPerSec`. Pure given a clock. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly capacity: number,
    private readonly refillPerSec: number,
    now: number,
  ) {
    this.tokens = capacity;
    this.last = now;
  }

  take(now: number): boolean {
    const elapsed = Math.max(0, now - this.last) / 1000;
    this.last = now;
    this.tokens = Math.min(this.capacity, this.tokens + elapsed * this.refillPerSec);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/**
 * Counts strikes (refused or malformed lines) in a sliding window of fixed buckets. Crossing
 * `threshold` within `windowMs` is sustained abuse.
 */
export class StrikeCounter {
  private readonly slots: number[];
  private readonly slotMs: number;
  private lastSlot: number;

  constructor(
    private readonly threshold: number,
    windowMs: number,
    now: number,
    slots = 10,
  ) {
    this.slots = new Array<number>(slots).fill(0);
    this.slotMs = Math.max(1, windowMs / slots);
    this.lastSlot = Math.floor(now / this.slotMs);
  }

  /** Adds a strike; true when the window now holds `threshold` or more. */
  strike(now: number): boolean {
    const slot = Math.floor(now / this.slotMs);
    for (let s = this.lastSlot + 1; s <= slot && s - this.lastSlot <= this.slots.length; s++) this.slots[s % this.slots.length] = 0;
    this.lastSlot = Math.max(this.lastSlot, slot);
    this.slots[slot % this.slots.length]! += 1;
    return this.slots.reduce((a, b) => a + b, 0) >= this.threshold;
  }
}
