/**
 * Repeated refusals into the ledger without a flood becoming a ledger write each: the one
 * design for the broker's refused calls (`broker.denied`, one log per run) and the
 * supervisor's refused spawns (`run.refused`, one log per supervisor: a client retrying a 429
 * grew the ledger by ~65 MB/h, a synchronous hashed line per retry).
 *
 * Guarantees: the first refusal of each kind (its fields: a run's method and code; a spawn's
 * caller and code) is its own line at once; the later ones of that kind are counted and
 * written as one line per window (`count`: how many refusals that line stands for; `windowMs`)
 * and on `flush` (a run's socket closing, the supervisor closing). So Σ (count ?? 1) over the
 * lines of a type is the refusals, and a flood of N costs a handful of lines, not N
 * synchronous writes. Memory is bounded: at most MAX_KINDS kinds are remembered (past it the
 * memory starts over, so the next of each kind is written at once again — more lines, never
 * fewer refusals). Content-free (INV-7): the kind's fields are ids, enums and counts, as
 * the caller's event already was; lines are chained and verified like every other.
 * Threat: a child or a client refusing itself into a ledger-write storm that stalls the
 * supervisor or fills its disk. Fails: a crash loses at most the counts of the current
 * window; first lines are on disk.
 */
import type { LedgerEvent, LedgerValue } from './types.js';

/** Kinds remembered at most (a supervisor's callers come and go). */
export const MAX_KINDS = 4096;

export interface RefusalLogOptions {
  /** The event type of every line (`broker.denied`, `run.refused`). */
  type: string;
  /** Fields every line carries (a run's ids). */
  ids?: Record<string, LedgerValue>;
  write: (ev: LedgerEvent) => void;
  windowMs: number;
  now: () => number;
}

type Fields = Record<string, string | number | null>;

export class RefusalLog {
  private readonly seen = new Set<string>();
  private readonly pending = new Map<string, { fields: Fields; count: number }>();
  private timer: NodeJS.Timeout | undefined;
  private windowStart = 0;

  constructor(private readonly o: RefusalLogOptions) {}

  /** One refusal of the kind `fields` names (the same fields, the same kind). */
  note(fields: Fields): void {
    const kind = JSON.stringify(Object.entries(fields).sort(([a], [b]) => a.localeCompare(b)));
    if (!this.seen.has(kind)) {
      if (this.seen.size >= MAX_KINDS) this.seen.clear();
      this.seen.add(kind);
      this.o.write({ type: this.o.type, ...this.o.ids, ...fields });
      return;
    }
    const p = this.pending.get(kind);
    if (p) p.count++;
    else this.pending.set(kind, { fields, count: 1 });
    if (!this.timer) {
      this.windowStart = this.o.now();
      this.timer = setTimeout(() => this.flush(), this.o.windowMs);
      this.timer.unref();
    }
  }

  /** Writes the counts of the current window (also when the run's socket or the supervisor closes). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const windowMs = Math.max(0, this.o.now() - this.windowStart);
    const counted = [...this.pending.values()];
    this.pending.clear();
    for (const p of counted) this.o.write({ type: this.o.type, ...this.o.ids, ...p.fields, count: p.count, windowMs });
  }
}
