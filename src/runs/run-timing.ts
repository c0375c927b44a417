/**
 * Where one run's time went (issue 26): the supervisor stamps each step of a run's life on a
 * monotonic clock (performance.now: an NTP step cannot make a phase negative or a run longer),
 * and the split is the differences between consecutive marks in the order they happened — so
 * the phases always sum to the whole, whichever order the end's steps took (the envelope before
 * or after the release). Content-free: mark names and milliseconds only.
 */
import { TIMING_MARKS, type RunTiming, type TimingMark } from './types.js';

/** The phase that ends at each mark (`requested` starts the clock). */
export const PHASE_OF: Readonly<Record<Exclude<TimingMark, 'requested'>, string>> = {
  admitted: 'intake',
  launched: 'queue',
  leased: 'lease',
  jail_ready: 'jail assign/create',
  started: 'first instruction',
  exit_detected: 'run, exit detected',
  pending_end_durable: 'pending end durable',
  collect_cleared: 'collect: clear a redo',
  outputs_read: 'collect: read outputs',
  collected: 'collect: index refs',
  ended_durable: 'ended durable',
  envelope: 'envelope',
  released: 'release',
};

export interface TimingPhase {
  phase: string;
  /** The mark that ends it. */
  mark: TimingMark;
  ms: number;
}

export interface TimingSplit {
  phases: TimingPhase[];
  /** From `requested` to the last mark: the phases' sum. */
  totalMs: number;
}

const round = (ms: number) => Math.round(ms * 100) / 100;

/** One run's marks, taken as it goes; `toJSON` is what the record keeps. */
export class RunStopwatch {
  readonly #t0: number;
  readonly #marks: Partial<Record<TimingMark, number>> = {};

  constructor(
    private readonly now: () => number,
    startedAt: number = now(),
  ) {
    this.#t0 = startedAt;
    this.#marks.requested = 0;
  }

  /** The first stamp of a mark counts (a redone step does not move it). */
  mark(m: TimingMark): void {
    if (this.#marks[m] === undefined) this.#marks[m] = round(this.now() - this.#t0);
  }

  toJSON(): RunTiming {
    return { marks: { ...this.#marks } };
  }
}

/** The phases of a run's timing, in the order they happened; the missing marks' phases are absent. */
export function splitTiming(t: RunTiming): TimingSplit {
  const at = TIMING_MARKS.map((mark, i) => ({ mark, i, ms: t.marks[mark] })).filter((x): x is { mark: TimingMark; i: number; ms: number } => typeof x.ms === 'number' && Number.isFinite(x.ms));
  // Ties keep the usual order (a mark stamped in the same tick as the one before it).
  at.sort((a, b) => a.ms - b.ms || a.i - b.i);
  const phases: TimingPhase[] = [];
  let prev = at[0]?.ms ?? 0;
  for (const x of at) {
    if (x.mark === 'requested') continue;
    phases.push({ phase: PHASE_OF[x.mark], mark: x.mark, ms: round(x.ms - prev) });
    prev = x.ms;
  }
  return { phases, totalMs: round(prev - (at[0]?.ms ?? 0)) };
}

/** `brig explain RUN --timing`: one line per phase, its share of the whole, then the total. */
export function renderTiming(t: RunTiming | undefined): string {
  if (!t) return 'no timing: the run was not run by this version of brig, or was ended by another supervisor (after a restart)\n';
  const s = splitTiming(t);
  const width = Math.max(5, ...s.phases.map((p) => p.phase.length));
  const lines = s.phases.map((p) => `  ${p.phase.padEnd(width)}  ${p.ms.toFixed(2).padStart(9)} ms  ${(s.totalMs > 0 ? (100 * p.ms) / s.totalMs : 0).toFixed(1).padStart(5)} %`);
  return `${['timing (supervisor monotonic clock, request → last step):', ...lines, `  ${'total'.padEnd(width)}  ${s.totalMs.toFixed(2).padStart(9)} ms`].join('\n')}\n`;
}
