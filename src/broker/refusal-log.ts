/**
 * A run's refusals into the ledger, without a flood turning into a ledger write per line.
 *
 * Guarantees: the first refusal of each kind (method, code) of a run is its own
 * `broker.denied` line at once; the later ones of that kind are counted and written as one
 * line per window (`count`: how many refusals that line stands for; `windowMs`) and on
 * `flush` (the run's socket closing). So Σ (count ?? 1) over a run's `broker.denied` lines is
 * its refusals, and a flood of N bad lines costs a handful of lines, not N synchronous writes.
 * The kinds are a closed set (the method table plus `unknown`, the error catalog), so the
 * memory is bounded. Content-free (INV-7): ids, the method, the code, counts.
 * Threat: a child refusing itself into a ledger-write storm that stalls the supervisor.
 * Fails: a crash loses at most the counts of the current window; first lines are on disk.
 */
import type { LedgerEvent } from '../ledger/index.js';

export class RefusalLog {
  private readonly seen = new Set<string>();
  private readonly pending = new Map<string, { method: string; code: string; count: number }>();
  private timer: NodeJS.Timeout | undefined;
  private windowStart = 0;

  constructor(
    private readonly ids: { runId: string; leaseId: string },
    private readonly write: (ev: LedgerEvent) => void,
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  note(method: string, code: string): void {
    const kind = `${method}\0${code}`;
    if (!this.seen.has(kind)) {
      this.seen.add(kind);
      this.write({ type: 'broker.denied', ...this.ids, method, code });
      return;
    }
    const p = this.pending.get(kind);
    if (p) p.count++;
    else this.pending.set(kind, { method, code, count: 1 });
    if (!this.timer) {
      this.windowStart = this.now();
      this.timer = setTimeout(() => this.flush(), this.windowMs);
      this.timer.unref();
    }
  }

  /** Writes the counts of the current window (also when the run's socket closes). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const windowMs = Math.max(0, this.now() - this.windowStart);
    for (const p of this.pending.values()) this.write({ type: 'broker.denied', ...this.ids, method: p.method, code: p.code, count: p.count, windowMs });
    this.pending.clear();
  }
}
